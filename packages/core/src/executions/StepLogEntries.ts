/**
 * Workflow step events reach log search where they are recorded (decisions 4.7): `layerRecordedSteps` wraps the
 * `ExecutionsRepo` and `StepEventsRepo` adapters (memory or Postgres) and hands every step event written to the
 * `LogRecorder` once the write succeeded, so the engine changes nothing. An entry is handed over when its write
 * returns, not when its transaction commits: a transaction rolled back afterwards (rare: a crash or a lost lease
 * between the step and the commit) can leave entries of steps the store does not keep, which a log may show.
 * Step payloads are stored as the step log keeps them (secrets masked, 64 KB).
 */
import { Context, Effect, Layer, Predicate } from "effect"
import type { LogDraft } from "../logs/LogRecorder.ts"
import { LogRecorder } from "../logs/LogRecorder.ts"
import type { ExecutionRecord, StepEventRecord } from "./Execution.ts"
import { ExecutionsRepo, StepEventsRepo } from "./ExecutionsRepo.ts"

const PROBLEM_STEP_EVENTS = new Set(["execution_failed", "step_failed", "action_failed"])

/** `error { message, code? }` of a step payload, when it has one. */
const stepError = (payload: Readonly<Record<string, unknown>>) => {
  const error = payload["error"]
  if (!Predicate.isObject(error)) return { message: null, code: null }
  return {
    message: Predicate.isString(error["message"]) ? error["message"] : null,
    code: Predicate.isString(error["code"]) ? error["code"] : null
  }
}

/** The workflow facts of a step event's entry; null when the writer of the event did not know its execution. */
export type ExecutionFacts = Pick<ExecutionRecord, "workflow_id" | "workflow_name" | "status">

export const stepEventEntry = (e: StepEventRecord, execution: ExecutionFacts | null): LogDraft => {
  const error = stepError(e.payload)
  const problem = PROBLEM_STEP_EVENTS.has(e.event_type) || (e.event_type === "agent_tool_called" && e.payload["error"] != null)
  const where = e.step === null ? "" : ` at ${e.step.identifier}`
  const phoneNumberId = e.payload["phone_number_id"]
  return {
    project_id: e.project_id,
    source: "flow_event",
    occurred_at: e.created_at,
    problem,
    level: problem ? "error" : "info",
    message: `${e.event_type}${where}${execution === null ? "" : ` (${execution.workflow_name})`}${error.message === null ? "" : `: ${error.message}`}`,
    status: execution?.status ?? null,
    resource_type: "workflow_execution",
    resource_id: e.execution_id,
    event_type: e.event_type,
    flow_name: execution?.workflow_name ?? null,
    flow_id: execution?.workflow_id ?? null,
    flow_execution_id: e.execution_id,
    flow_event_id: e.id,
    step_identifier: e.step?.identifier ?? null,
    step_type: e.step?.node_type ?? null,
    phone_number_id: Predicate.isString(phoneNumberId) ? phoneNumberId : null,
    error_class: error.code,
    error_message: error.message,
    attributes: { seq: e.seq, direction: e.direction, edge_label: e.edge_label },
    payload: e.payload
  }
}

/** Executions inserted and not yet seen by `StepEventsRepo.append`, at most this many (oldest forgotten first). */
const MAX_REMEMBERED = 1_000

export const layerRecordedSteps = Layer.effectContext(
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
