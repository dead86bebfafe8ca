/**
 * The invocation targets a host remembers: every invoke (HTTP, a workflow's function node, an agent's tool) needs
 * its function, secrets (sealed) and whether the project is disabled, and they change rarely. A change drops them
 * all: a write by this process's functions service or deploy job at once (`forget`), one by any process through the
 * store's signals (`FunctionsRepo.changes`, `Projects.changes` for a disable), and entries expire as a backstop.
 * Unknown ids are not remembered: guesses must not fill the cache.
 */
import { Context, Effect, Layer, Option, Stream } from "effect"
import { Projects } from "../projects/Projects.ts"
import * as SignalledCache from "../shared/SignalledCache.ts"
import { type FunctionInvocationTarget, FunctionsRepo } from "./FunctionsRepo.ts"

const CACHE_TTL_MS = 60_000
const CACHE_MAX = 10_000

export class InvocationTargets extends Context.Service<InvocationTargets, {
  /** The function by id alone, as `FunctionsRepo.findInvocationTarget` answers it. */
  readonly find: (functionId: string) => Effect.Effect<Option.Option<FunctionInvocationTarget>>
  /** Drops everything remembered: call it once a write to a function, its deploys or secrets is done. */
  readonly forget: Effect.Effect<void>
}>()("@parley/core/functions/InvocationTargets") {
  static readonly layer = Layer.effect(
    InvocationTargets,
    Effect.gen(function*() {
      const repo = yield* FunctionsRepo
      const projects = yield* Projects
      const changes = Stream.merge(repo.changes, projects.changes)
      const cache = yield* SignalledCache.make({
        lookup: repo.findInvocationTarget,
        keyOf: (functionId: string) => functionId,
        changes,
        ttlMs: CACHE_TTL_MS,
        max: CACHE_MAX,
        remember: Option.isSome
      })
      return InvocationTargets.of({ find: cache.get, forget: cache.forget })
    })
  )
}
