/**
 * Creating executions (decisions 2.4.1, 2.4.2, 2.5.1): the record with its
 * `execution_context`, pinned to the workflow's current graph, written with
 * `execution_started` and the start node's `step_entered` in one
 * transaction; then the engine runs it. API starts, inbound triggers, event
 * triggers and observers all start here.
 *
 * One live run per (number, contact) (decisions 10.1, 2.5.1): a run that
 * takes part in routing (not an observer, not a `call` child, with a number
 * and a contact) is inserted under the pair's route lock, in the same
 * transaction as the look at the pair's current owner: a `running` or
 * `waiting` owner ends `superseded`, a `handoff` one makes the new run fail
 * at once (`Conversation is in handoff`). Routing starts runs under the same
 * lock, so however runs start, two never own a pair.
 */
import { Clock, Context, Data, Effect, Layer, Option } from "effect"
import { ExecutionsRepo } from "./ExecutionsRepo.ts"
import { Transactor } from "../ports/Transactor.ts"
import { StoredWorkflows } from "../workflows/StoredWorkflows.ts"
import { Ids } from "../shared/Ids.ts"
import { ExecutionEngine } from "./Engine.ts"
import type { ExecutionRecord } from "./Execution.ts"
import { RouteLocks } from "./RouteLocks.ts"
import { ActiveRollouts } from "./lifecycle/Rollouts.ts"
import { type Launch, newExecution } from "./NewExecution.ts"
import * as T from "./Transitions.ts"

export type { Launch } from "./NewExecution.ts"

/** Another execution already has the launch's dedupe key: the launch's writes (a superseded owner) roll back. */
class AlreadyStarted extends Data.TaggedError("AlreadyStarted")<{ readonly dedupeKey: string | null }> {}

export class Launcher extends Context.Service<Launcher, {
  /**
   * Creates and runs an execution; None when its dedupe key already started one. With `kick: false` the caller runs
   * it once its own transaction, around the launch's, committed (`ExecutionEngine.kick` with `committed`).
   */
  readonly launch: (launch: Launch, options?: { readonly kick?: boolean | undefined }) => Effect.Effect<Option.Option<ExecutionRecord>>
}>()("@parley/core/executions/Launcher") {
  static readonly layer = Layer.effect(
    Launcher,
    Effect.gen(function*() {
      const engine = yield* ExecutionEngine
      const tx = yield* Transactor
      const ids = yield* Ids
      const workflows = yield* StoredWorkflows
      const repo = yield* ExecutionsRepo
      const locks = yield* RouteLocks
      const rollouts = yield* ActiveRollouts

      /** The run a pair's owner belongs to: a `call` child's outermost parent (ending it ends the child too). */
      const rootOf = (e: ExecutionRecord, depth = 0): Effect.Effect<ExecutionRecord> =>
        e.parent_execution_id === null || depth > 10
          ? Effect.succeed(e)
          : Effect.flatMap(repo.get(e.parent_execution_id), Option.match({ onNone: () => Effect.succeed(e), onSome: (p) => rootOf(p, depth + 1) }))

      /**
       * Inside the launch's transaction, before the insert: takes the pair's route lock and settles its current
       * owner. Answers the error the new run fails with when the pair is in handoff.
       */
      const claimPair = Effect.fnUntraced(function*(l: Launch, now: string) {
        if (l.observer || l.parent !== undefined || l.config === null || l.contact === null || l.contactMade === true) return undefined
        yield* locks.lock(l.config.id, l.contact.id)
        for (let attempt = 0; attempt < 5; attempt++) {
          const owner = yield* repo.findRouted(l.config.id, l.contact.id)
          if (Option.isNone(owner)) return undefined
          if (owner.value.status === "handoff") return "Conversation is in handoff"
          const root = yield* rootOf(owner.value)
          const g = yield* engine.graph(root.revision_id)
          // A step of the owner moved it meanwhile (its slice is fenced by the write): read again.
          yield* engine.write(root, T.end(root, g, "superseded", now))
        }
        return undefined
      })

      const launch = Effect.fn("Launcher.launch")(function*(l: Launch, options?: { readonly kick?: boolean | undefined }) {
        const now = new Date(yield* Clock.currentTimeMillis).toISOString()
        const id = yield* ids.uuid
        const trackingId = yield* ids.uuid
        return yield* tx.withTransaction(Effect.gen(function*() {
          // A staged rollout may start this contact on another (stored) revision (issue 32 §3).
          const staged = yield* rollouts.staged(l.workflow, l.contact?.id ?? null)
          const revision = Option.isSome(staged)
            ? staged.value
            : yield* engine.pinRevision(l.workflow.project_id, l.workflow.id, l.workflow.definition, l.workflow.lock_version)
          const g = yield* engine.graph(revision)
          const { events, record } = newExecution(l, { id, trackingId }, now, revision, g)
          const blocked = yield* claimPair(l, now)
          if (!(yield* engine.insert(record, events))) return yield* new AlreadyStarted({ dedupeKey: l.dedupeKey })
          yield* workflows.countExecution(l.workflow.project_id, l.workflow.id, now)
          const failWith = l.failWith ?? blocked
          if (failWith !== undefined) {
            const failed = T.fail(record, g, { message: failWith }, now)
            yield* engine.write(record, failed)
            return Option.some(failed.record)
          }
          return Option.some(record)
        })).pipe(
          Effect.catchTag("AlreadyStarted", () => Effect.succeed(Option.none<ExecutionRecord>())),
          Effect.tap((created) =>
            options?.kick !== false && Option.isSome(created) && created.value.status === "running"
              ? engine.kick(created.value.id, { leased: true, committed: true })
              : Effect.void
          )
        )
      })

      return Launcher.of({ launch })
    })
  )
}

