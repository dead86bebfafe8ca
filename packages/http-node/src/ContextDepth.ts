/**
 * How deep the host's contexts grow before effect copies them flat (issue 30 §2).
 *
 * Every `Effect.fn` span, SQL statement, transaction and request adds a service to its fiber's context: effect keeps
 * an addition as an overlay on the context it came from, and at its `maxDepth` of overlays (8 unless set) copies the
 * whole context (~150 services here) into a new map. A broadcast's send and its status reports nest deeper than 8,
 * so nearly every statement copied it: 44 of the ~496 KB a send allocated. With 32, the copies are rare: 437 KB.
 */
import { Context, Effect } from "effect"

/** Overlays kept before a copy; a lookup walks them first, so not much more than the deepest nesting seen. */
export const CONTEXT_MAX_DEPTH = 32

/**
 * `effect` with its context rebuilt at `CONTEXT_MAX_DEPTH`: every context derived from it (layers built, workers
 * forked, requests served) keeps the setting. Needs a context that is not empty (a scope's is not): an empty one is
 * replaced, not merged into, by the first context provided.
 */
export const deepContexts = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.updateContext(effect, (context: Context.Context<R>) => Context.makeUnsafe(new Map(context.mapUnsafe), { maxDepth: CONTEXT_MAX_DEPTH }))
