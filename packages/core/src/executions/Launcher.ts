/**
 * Creating executions (decisions 2.4.1, 2.4.2, 2.5.1): the record with its
 * `execution_context`, pinned to the workflow's current graph, written with
 * `execution_started` and the start node's `step_entered` in one
 * transaction; then the engine runs it. API starts, inbound triggers, event
 * triggers and observers all start here.
 */
import { Clock, Context, Effect, Layer, Option } from "effect"
import { Transactor } from "../ports/Transactor.ts"
import { WorkflowsRepo } from "../workflows/WorkflowsRepo.ts"
import { Ids } from "../shared/Ids.ts"
import { ExecutionEngine } from "./Engine.ts"
import type { ExecutionRecord } from "./Execution.ts"
import { type Launch, newExecution } from "./NewExecution.ts"
import * as T from "./Transitions.ts"

export type { Launch } from "./NewExecution.ts"

export class Launcher extends Context.Service<Launcher, {
  /** Creates and runs an execution; None when its dedupe key already started one. */
  readonly launch: (launch: Launch) => Effect.Effect<Option.Option<ExecutionRecord>>
}>()("@parley/core/executions/Launcher") {
  static readonly layer = Layer.effect(
    Launcher,
    Effect.gen(function*() {
      const engine = yield* ExecutionEngine
      const tx = yield* Transactor
      const ids = yield* Ids
      const workflows = yield* WorkflowsRepo

      const launch = Effect.fn("Launcher.launch")(function*(l: Launch) {
        const now = new Date(yield* Clock.currentTimeMillis).toISOString()
        const id = yield* ids.uuid
        const trackingId = yield* ids.uuid
        return yield* tx.withTransaction(Effect.gen(function*() {
          const revision = yield* engine.pinRevision(l.workflow.project_id, l.workflow.id, l.workflow.definition)
          const g = yield* engine.graph(revision)
          const { events, record } = newExecution(l, { id, trackingId }, now, revision, g)
          if (!(yield* engine.insert(record, events))) return Option.none<ExecutionRecord>()
          yield* workflows.countExecution(l.workflow.project_id, l.workflow.id, now)
          if (l.failWith !== undefined) {
            const failed = T.fail(record, g, { message: l.failWith }, now)
            yield* engine.write(record, failed)
            return Option.some(failed.record)
          }
          return Option.some(record)
        })).pipe(
          Effect.tap((created) => Option.isSome(created) && created.value.status === "running" ? engine.kick(created.value.id, { leased: true }) : Effect.void)
        )
      })

      return Launcher.of({ launch })
    })
  )
}

