/**
 * What other capabilities read of the stored runs, project-scoped and without a principal: the inbox finds a
 * conversation's run in handoff and its latest steps, the run viewer shows one run with its revision and steps.
 * Executions' repositories stay theirs (issue 28 §2); each method is one statement of theirs, nothing added.
 */
import { Context, Effect, Layer } from "effect"
import { ExecutionsRepo, StepEventsRepo } from "./ExecutionsRepo.ts"

export class StoredExecutions extends Context.Service<StoredExecutions, {
  /** By id or tracking id, in the project. */
  readonly find: ExecutionsRepo["Service"]["find"]
  /** Newest first by (started_at, id). */
  readonly list: ExecutionsRepo["Service"]["list"]
  /** The revision a run runs on. */
  readonly revision: ExecutionsRepo["Service"]["getRevision"]
  /** A run's step events, newest first, bounded in time by the run's start. */
  readonly steps: StepEventsRepo["Service"]["list"]
  /** A run's `limit` latest step events, newest first. */
  readonly latestSteps: StepEventsRepo["Service"]["latest"]
}>()("@parley/core/executions/StoredExecutions") {
  static readonly layer = Layer.effect(
    StoredExecutions,
    Effect.gen(function*() {
      const executions = yield* ExecutionsRepo
      const steps = yield* StepEventsRepo
      return StoredExecutions.of({
        find: executions.find,
        list: executions.list,
        revision: executions.getRevision,
        steps: steps.list,
        latestSteps: steps.latest
      })
    })
  )
}
