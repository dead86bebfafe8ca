/**
 * Workflow step events and webhook delivery attempts reach log search where they are recorded: these layers wrap
 * the `ExecutionsRepo`, `StepEventsRepo` and `WebhookDeliveriesRepo` adapters (memory or Postgres) and hand every
 * step event written and every attempt recorded to the `LogRecorder` once the write succeeded, so the engine and
 * the deliveries change nothing. An entry is handed over when its write returns, not when its transaction
 * commits: a transaction rolled back afterwards (rare: a crash or a lost lease between the step and the commit)
 * can leave entries of steps the store does not keep, which a log may show.
 */
import { Context, Effect, Layer } from "effect"
import type { ExecutionRecord, StepEventRecord } from "../executions/Execution.ts"
import { ExecutionsRepo, StepEventsRepo } from "../executions/ExecutionsRepo.ts"
import { WebhookDeliveriesRepo } from "../webhooks/WebhooksRepo.ts"
import type { WebhookAttemptRecord, WebhookDeliveryRecord } from "../webhooks/Webhook.ts"
import { LogRecorder } from "./LogRecorder.ts"
import { deliveryAttemptEntry, type ExecutionFacts, stepEventEntry } from "./Sources.ts"

/** Executions inserted and not yet seen by `StepEventsRepo.append`, at most this many (oldest forgotten first). */
const MAX_REMEMBERED = 1_000

const layerRecordedExecutions = Layer.effectContext(
  Effect.gen(function*() {
    const repo = yield* ExecutionsRepo
    const recorder = yield* LogRecorder
    const events = yield* StepEventsRepo
    // An execution's first events (`execution_started`) are appended right after its insert, without the record:
    // the insert leaves the workflow's facts here for them.
    const inserted = new Map<string, ExecutionFacts>()
    const facts = (e: ExecutionRecord): ExecutionFacts => ({ workflow_id: e.workflow_id, workflow_name: e.workflow_name, status: e.status })
    const recordEvents = (written: ReadonlyArray<StepEventRecord>, execution: ExecutionFacts | null) =>
      written.length === 0 ? Effect.void : recorder.record(written.map((e) => stepEventEntry(e, execution)))

    const recordedEvents = StepEventsRepo.of({
      ...events,
      append: (written) =>
        Effect.tap(events.append(written), () => {
          const id = written[0]?.execution_id
          const execution = id === undefined ? undefined : inserted.get(id)
          if (id !== undefined) inserted.delete(id)
          return recordEvents(written, execution ?? null)
        })
    })

    return Context.make(StepEventsRepo, recordedEvents).pipe(Context.add(ExecutionsRepo, ExecutionsRepo.of({
        ...repo,
        insert: (execution) =>
          Effect.tap(repo.insert(execution), (created) =>
            Effect.sync(() => {
              if (!created) return
              if (inserted.size >= MAX_REMEMBERED) inserted.delete(inserted.keys().next().value!)
              inserted.set(execution.id, facts(execution))
            })),
        checkpoint: (execution, expectedVersion, written) =>
          Effect.tap(repo.checkpoint(execution, expectedVersion, written), (ok) => (ok ? recordEvents(written, facts(execution)) : Effect.void))
    })))
  })
)

const recordAttempt = (recorder: LogRecorder["Service"], delivery: WebhookDeliveryRecord, attempt: WebhookAttemptRecord | undefined) =>
  attempt === undefined ? Effect.void : recorder.record([deliveryAttemptEntry(delivery, attempt)])

const layerRecordedDeliveries = Layer.effect(
  WebhookDeliveriesRepo,
  Effect.gen(function*() {
    const repo = yield* WebhookDeliveriesRepo
    const recorder = yield* LogRecorder
    return WebhookDeliveriesRepo.of({
      ...repo,
      insert: (delivery, attempt) =>
        Effect.tap(repo.insert(delivery, attempt), (stored) => (stored.created ? recordAttempt(recorder, delivery, attempt) : Effect.void)),
      update: (next, expected, attempt) =>
        Effect.tap(repo.update(next, expected, attempt), (ok) => (ok ? recordAttempt(recorder, next, attempt) : Effect.void))
    })
  })
)

/** The recorded repos, over the adapters and a `LogRecorder`. */
export const layerRecordedRepos = Layer.mergeAll(layerRecordedExecutions, layerRecordedDeliveries)
