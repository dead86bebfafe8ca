/**
 * Memory implementations of the execution storage ports (`ExecutionsRepo`,
 * `StepEventsRepo`, `ExecutionInputsRepo`) over the shared `MemoryStore`,
 * keeping the rules of the Postgres schema (migration 0010): executions and
 * revisions belong to an existing workflow of their project and go with it,
 * step events to an existing execution; one execution per `dedupe_key`, one
 * input per message id (remembered after it is taken); timestamps and JSON as
 * the database gives them back. The executions storage conformance suite
 * holds both adapters to the same behaviour.
 */
import { WorkflowRows } from "../workflows/MemoryWorkflows.ts"
import { Effect, Layer, Option } from "effect"
import {
  type ExecutionFilter,
  type ExecutionRecord,
  isTerminal,
  type StepEventFilter,
  type StepEventRecord,
  type WorkflowRevision
} from "./Execution.ts"
import {
  type ExecutionInputRecord,
  ExecutionInputsRepo,
  ExecutionsRepo,
  type LiveCount,
  StepEventsRepo,
  type StepEventsOf,
  stepEventSpan,
  stepEventsSince,
  stepEventsUntil
} from "./ExecutionsRepo.ts"
import type { Project } from "../projects/Project.ts"
import type { CursorKey, ListWindow } from "../shared/Pagination.ts"
import type { WorkflowRecord } from "../workflows/Workflow.ts"
import { MemoryStore, memoryTable, type MemoryTables, cascadeOnRemove } from "../ports/MemoryStore.ts"
import { byteOrder, compareKeys, instant, json, nullableTimestamp, sliceWindowBy, timestamp, violation } from "../ports/MemoryRows.ts"

const Projects = memoryTable<Project>("projects")
const Workflows = memoryTable<WorkflowRecord>("workflows")
const Executions = memoryTable<ExecutionRecord>("workflow_executions")
const Revisions = memoryTable<WorkflowRevision>("workflow_revisions")
const StepEvents = memoryTable<StepEventRecord>("workflow_step_events")
/** A taken input stays as a marker, so a repeated delivery of its message is still refused. */
type StoredInput = Omit<ExecutionInputRecord, "state"> & { readonly state: ExecutionInputRecord["state"] | "taken" }
const Inputs = memoryTable<StoredInput>("workflow_execution_inputs")

/** Where a cursor whose event is gone (pruned) stands: before every event of its instant. */
const SEQ_MIN = -2147483648

/** `findRouted`: the pair's newest non-observer execution in `running`, `waiting` or `handoff`. */
const routedOwner = (db: MemoryTables, msgConfigId: string, contactId: string) =>
  Option.fromNullishOr(
    newestExecutionsFirst(db.all(Executions).filter((e) =>
      e.msg_config_id === msgConfigId && e.contact_id === contactId && !e.observer &&
      (e.status === "running" || e.status === "waiting" || e.status === "handoff")
    ))[0]
  )

const requireWorkflow = (db: MemoryTables, projectId: string, workflowId: string) => {
  const workflow = db.get(Workflows, workflowId)
  if (workflow === undefined || workflow.project_id !== projectId) {
    violation(`no workflow ${workflowId} in project ${projectId}`)
  }
}

/**
 * Removes a workflow's executions (with their step events) and revisions:
 * what `deleteByWorkflow` does, and what the foreign keys' cascade does when
 * the workflow itself is deleted.
 */
export const removeWorkflowExecutions = (db: MemoryTables, projectId: string, workflowId: string) => {
  const gone = new Set<string>()
  for (const e of db.all(Executions)) {
    if (e.project_id === projectId && e.workflow_id === workflowId) gone.add(e.id)
  }
  for (const ev of db.all(StepEvents)) if (gone.has(ev.execution_id)) db.remove(StepEvents, ev.id)
  for (const id of gone) db.remove(Executions, id)
  for (const r of db.all(Revisions)) {
    if (r.project_id === projectId && r.workflow_id === workflowId) db.remove(Revisions, r.id)
  }
}

// A deleted workflow takes its executions, step events and revisions.
cascadeOnRemove(WorkflowRows, (db, workflow) => removeWorkflowExecutions(db, workflow.project_id, workflow.id))

const storedExecution = (e: ExecutionRecord): ExecutionRecord => {
  // The wait's due time is a column of its own in Postgres: an invalid one fails the write there too.
  if (e.wait !== null && e.wait.due_at !== null) instant(e.wait.due_at)
  return {
    ...e,
    started_at: timestamp(e.started_at),
    last_event_at: timestamp(e.last_event_at),
    ended_at: nullableTimestamp(e.ended_at),
    lease_until: nullableTimestamp(e.lease_until),
    execution_context: json(e.execution_context),
    error_details: json(e.error_details),
    wait: json(e.wait),
    pending: json(e.pending),
    agent: json(e.agent),
    handoff: json(e.handoff)
  }
}

const storedRevision = (r: WorkflowRevision): WorkflowRevision => ({
  ...r,
  definition: json(r.definition),
  created_at: timestamp(r.created_at)
})

const storedEvent = (e: StepEventRecord): StepEventRecord => ({
  ...e,
  created_at: timestamp(e.created_at),
  payload: json(e.payload),
  step: json(e.step)
})

const storedInput = (i: ExecutionInputRecord): ExecutionInputRecord => ({
  ...i,
  value: json(i.value),
  received_at: timestamp(i.received_at)
})

/** (started_at, id), the order of execution lists. */
const executionKey = (e: ExecutionRecord): CursorKey => ({ sortKey: e.started_at, id: e.id })
const newestExecutionsFirst = (rows: ReadonlyArray<ExecutionRecord>) =>
  [...rows].sort((a, b) => compareKeys(executionKey(b), executionKey(a)))

/** (created_at, seq, id) ascending: the order of step events (id only breaks ties of a broken seq). */
const compareEvents = (a: StepEventRecord, b: StepEventRecord) =>
  instant(a.created_at) - instant(b.created_at) || a.seq - b.seq || byteOrder(a.id, b.id)
const newestEventsFirst = (rows: ReadonlyArray<StepEventRecord>) => [...rows].sort((a, b) => compareEvents(b, a))

const isWaitingTimeout = (e: ExecutionRecord) => e.status === "waiting" && e.wait !== null && e.wait.due_at !== null

const matchesExecution = (projectId: string, filter: ExecutionFilter) => (e: ExecutionRecord) =>
  e.project_id === projectId &&
  (filter.workflow_id === undefined || e.workflow_id === filter.workflow_id) &&
  (filter.msg_conversation_id === undefined || e.msg_conversation_id === filter.msg_conversation_id) &&
  (filter.status === undefined || e.status === filter.status) &&
  (filter.waiting_reason === undefined ||
    (filter.waiting_reason === "timeout" ? isWaitingTimeout(e) : e.waiting_reason === filter.waiting_reason)) &&
  (filter.trigger_type === undefined || e.trigger_type === filter.trigger_type) &&
  (filter.created_after === undefined || instant(e.started_at) >= instant(filter.created_after)) &&
  (filter.created_before === undefined || instant(e.started_at) <= instant(filter.created_before))

const isRecoverable = (now: number, quietBefore: number) => (e: ExecutionRecord) =>
  // A run parked on a timer not yet due (delay, send in doubt) is not lost: its timer brings it back.
  (e.status === "running" && (e.lease_until === null || instant(e.lease_until) < now) &&
    instant(e.last_event_at) < quietBefore && (e.wait?.due_at == null || instant(e.wait.due_at) <= now)) ||
  (!isTerminal(e.status) && e.wait !== null && e.wait.due_at !== null && instant(e.wait.due_at) <= now)

/** Compare-and-set on `state_version`; what the run belongs to and what started it are not the writer's to change. */
const replace = (db: MemoryTables, execution: ExecutionRecord, expectedVersion: number) => {
  const current = db.get(Executions, execution.id)
  if (current === undefined || current.state_version !== expectedVersion) return false
  db.put(
    Executions,
    execution.id,
    storedExecution({
      ...execution,
      project_id: current.project_id,
      workflow_id: current.workflow_id,
      started_at: current.started_at,
      dedupe_key: current.dedupe_key
    })
  )
  return true
}

/** As the step events' keys check them: an existing execution each, ids unique. */
const checkEvents = (db: MemoryTables, events: ReadonlyArray<StepEventRecord>) => {
  const ids = new Set<string>()
  for (const e of events) {
    if (db.get(Executions, e.execution_id) === undefined) violation(`no execution ${e.execution_id}`)
    if (ids.has(e.id) || db.get(StepEvents, e.id) !== undefined) violation(`duplicate step event id ${e.id}`)
    ids.add(e.id)
  }
}

export const layerMemoryExecutionsRepo = Layer.effect(
  ExecutionsRepo,
  Effect.gen(function*() {
    const store = yield* MemoryStore
    return ExecutionsRepo.of({
      insert: Effect.fn("ExecutionsRepo.insert")((execution: ExecutionRecord) =>
        store.run((db) => {
          // As Postgres checks: the dedupe arbiter first (a conflict writes nothing), then keys of the row.
          if (execution.dedupe_key !== null && db.all(Executions).some((e) => e.dedupe_key === execution.dedupe_key)) {
            return false
          }
          if (db.get(Executions, execution.id) !== undefined) violation(`duplicate execution id ${execution.id}`)
          if (db.get(Projects, execution.project_id) === undefined) violation(`no project ${execution.project_id}`)
          requireWorkflow(db, execution.project_id, execution.workflow_id)
          db.put(Executions, execution.id, storedExecution(execution))
          return true
        })
      ),
      find: Effect.fn("ExecutionsRepo.find")((projectId: string, idOrTrackingId: string) =>
        store.run((db) => {
          const byId = db.get(Executions, idOrTrackingId)
          if (byId !== undefined && byId.project_id === projectId) return Option.some(byId)
          const tracked = newestExecutionsFirst(
            db.all(Executions).filter((e) => e.project_id === projectId && e.tracking_id === idOrTrackingId)
          )
          return Option.fromNullishOr(tracked[0])
        })
      ),
      get: Effect.fn("ExecutionsRepo.get")((id: string) => store.run((db) => Option.fromNullishOr(db.get(Executions, id)))),
      update: Effect.fn("ExecutionsRepo.update")((execution: ExecutionRecord, expectedVersion: number) =>
        store.run((db) => replace(db, execution, expectedVersion))
      ),
      checkpoint: Effect.fn("ExecutionsRepo.checkpoint")(
        (execution: ExecutionRecord, expectedVersion: number, events: ReadonlyArray<StepEventRecord>) =>
          store.run((db) => {
            // Fenced: nothing written, the events not even looked at (on PostgreSQL none is inserted then).
            const current = db.get(Executions, execution.id)
            if (current === undefined || current.state_version !== expectedVersion) return false
            // Checked before anything is written: a checkpoint that fails leaves the record as it was.
            checkEvents(db, events)
            replace(db, execution, expectedVersion)
            for (const e of events) db.put(StepEvents, e.id, storedEvent(e))
            return true
          })
      ),
      list: Effect.fn("ExecutionsRepo.list")((projectId: string, filter: ExecutionFilter, window: ListWindow) =>
        store.run((db) =>
          sliceWindowBy(
            newestExecutionsFirst(db.all(Executions).filter(matchesExecution(projectId, filter))),
            window,
            (row, key) => compareKeys(executionKey(row), key)
          )
        )
      ),
      findRouted: Effect.fn("ExecutionsRepo.findRouted")((msgConfigId: string, contactId: string) =>
        store.run((db) => routedOwner(db, msgConfigId, contactId))
      ),
      findRoutedWithWorkflow: Effect.fn("ExecutionsRepo.findRoutedWithWorkflow")((msgConfigId: string, contactId: string) =>
        store.run((db) => {
          const owner = routedOwner(db, msgConfigId, contactId)
          const workflow = Option.flatMap(owner, (o) =>
            Option.filter(Option.fromNullishOr(db.get(Workflows, o.workflow_id)), (w) => w.project_id === o.project_id))
          return { owner, workflow }
        })
      ),
      listRecoverable: Effect.fn("ExecutionsRepo.listRecoverable")((now: string, quietBefore: string, limit: number) =>
        store.run((db) =>
          db.all(Executions)
            .filter(isRecoverable(instant(now), instant(quietBefore)))
            .sort((a, b) => instant(a.last_event_at) - instant(b.last_event_at) || byteOrder(a.id, b.id))
            .slice(0, Math.max(limit, 0))
        )
      ),
      liveCounts: store.run((db) => {
        const groups = new Map<string, LiveCount>()
        for (const e of db.all(Executions)) {
          if (isTerminal(e.status)) continue
          const key = `${e.status}\u0000${e.waiting_reason ?? ""}`
          const group = groups.get(key)
          groups.set(key, {
            status: e.status,
            waiting_reason: e.waiting_reason,
            count: (group?.count ?? 0) + 1,
            oldest_event_at: group === undefined || e.last_event_at < group.oldest_event_at ? e.last_event_at : group.oldest_event_at
          })
        }
        return [...groups.values()]
      }),
      listLive: Effect.fn("ExecutionsRepo.listLive")((projectId: string, workflowId: string) =>
        store.run((db) =>
          newestExecutionsFirst(
            db.all(Executions).filter((e) =>
              e.project_id === projectId && e.workflow_id === workflowId && !isTerminal(e.status)
            )
          ).reverse()
        )
      ),
      deleteByWorkflow: Effect.fn("ExecutionsRepo.deleteByWorkflow")((projectId: string, workflowId: string) =>
        store.run((db) => removeWorkflowExecutions(db, projectId, workflowId))
      ),
      putRevision: Effect.fn("ExecutionsRepo.putRevision")((revision: WorkflowRevision) =>
        store.run((db) => {
          if (db.get(Revisions, revision.id) !== undefined) return
          requireWorkflow(db, revision.project_id, revision.workflow_id)
          db.put(Revisions, revision.id, storedRevision(revision))
        })
      ),
      getRevision: Effect.fn("ExecutionsRepo.getRevision")((id: string) =>
        store.run((db) => Option.fromNullishOr(db.get(Revisions, id)))
      )
    })
  })
)

/** The run's events within the port's bounds in time, as PostgreSQL's partitions read them. */
const ofRun = (run: StepEventsOf) => {
  const since = instant(stepEventsSince(run))
  const until = stepEventsUntil(run)
  const last = until === undefined ? Infinity : instant(until)
  return (e: StepEventRecord) => e.execution_id === run.id && instant(e.created_at) >= since && instant(e.created_at) <= last
}

const matchesEvent = (projectId: string, run: StepEventsOf, filter: StepEventFilter) => {
  const inRun = ofRun(run)
  return (e: StepEventRecord) =>
    e.project_id === projectId && inRun(e) &&
    (filter.event_types === undefined || filter.event_types.length === 0 || filter.event_types.includes(e.event_type))
}

export const layerMemoryStepEventsRepo = Layer.effect(
  StepEventsRepo,
  Effect.gen(function*() {
    const store = yield* MemoryStore
    return StepEventsRepo.of({
      append: Effect.fn("StepEventsRepo.append")((events: ReadonlyArray<StepEventRecord>) =>
        store.run((db) => {
          checkEvents(db, events)
          const stored = events.map(storedEvent)
          for (const e of stored) db.put(StepEvents, e.id, e)
        })
      ),
      list: Effect.fn("StepEventsRepo.list")(
        (projectId: string, run: StepEventsOf, filter: StepEventFilter, window: ListWindow) =>
          store.run((db) => {
            const inRun = ofRun(run)
            // A cursor names an event by id; its seq places it among events of the same instant.
            const seqOf = (key: CursorKey) => {
              const event = db.get(StepEvents, key.id)
              return event !== undefined && inRun(event) ? event.seq : SEQ_MIN
            }
            return sliceWindowBy(
              newestEventsFirst(db.all(StepEvents).filter(matchesEvent(projectId, run, filter))),
              window,
              (row, key) => instant(row.created_at) - instant(key.sortKey) || row.seq - seqOf(key) || byteOrder(row.id, key.id)
            )
          })
      ),
      find: Effect.fn("StepEventsRepo.find")((projectId: string, id: string) =>
        store.run((db) => {
          const span = stepEventSpan(id)
          return Option.filter(Option.fromNullishOr(db.get(StepEvents, id)), (e) =>
            e.project_id === projectId &&
            (span === undefined || (instant(e.created_at) >= instant(span.since) && instant(e.created_at) <= instant(span.until))))
        })
      ),
      latest: Effect.fn("StepEventsRepo.latest")((run: StepEventsOf, limit: number) =>
        store.run((db) => newestEventsFirst(db.all(StepEvents).filter(ofRun(run))).slice(0, Math.max(limit, 0)))
      ),
      prune: Effect.fn("StepEventsRepo.prune")((before: string, limit: number) =>
        store.run((db) => {
          const cutoff = instant(before)
          const gone = db.all(StepEvents)
            .filter((e) => instant(e.created_at) < cutoff)
            .sort((a, b) => instant(a.created_at) - instant(b.created_at))
            .slice(0, Math.max(limit, 0))
          for (const e of gone) db.remove(StepEvents, e.id)
          return gone.length
        })
      )
    })
  })
)

const oldestInputsFirst = <A extends { readonly received_at: string; readonly id: string }>(rows: ReadonlyArray<A>) =>
  [...rows].sort((a, b) => instant(a.received_at) - instant(b.received_at) || byteOrder(a.id, b.id))

export const layerMemoryExecutionInputsRepo = Layer.effect(
  ExecutionInputsRepo,
  Effect.gen(function*() {
    const store = yield* MemoryStore
    const visible = (row: StoredInput): ReadonlyArray<ExecutionInputRecord> =>
      row.state === "taken" ? [] : [{ ...row, state: row.state }]
    return ExecutionInputsRepo.of({
      add: Effect.fn("ExecutionInputsRepo.add")((input: ExecutionInputRecord) =>
        store.run((db) => {
          if (db.get(Inputs, input.id) !== undefined) return false
          if (db.get(Projects, input.project_id) === undefined) violation(`no project ${input.project_id}`)
          db.put(Inputs, input.id, storedInput(input))
          return true
        })
      ),
      list: Effect.fn("ExecutionInputsRepo.list")(
        (msgConfigId: string, contactId: string, state: ExecutionInputRecord["state"]) =>
          store.run((db) =>
            oldestInputsFirst(
              db.all(Inputs).flatMap(visible).filter((i) =>
                i.msg_config_id === msgConfigId && i.contact_id === contactId && i.state === state
              )
            )
          )
      ),
      queue: Effect.fn("ExecutionInputsRepo.queue")((ids: ReadonlyArray<string>) =>
        store.run((db) => {
          for (const id of ids) {
            const input = db.get(Inputs, id)
            if (input !== undefined && input.state === "buffered") db.put(Inputs, id, { ...input, state: "queued" as const })
          }
        })
      ),
      take: Effect.fn("ExecutionInputsRepo.take")((ids: ReadonlyArray<string>) =>
        store.run((db) => {
          for (const id of ids) {
            const input = db.get(Inputs, id)
            if (input !== undefined && input.state !== "taken") db.put(Inputs, id, { ...input, state: "taken", value: null })
          }
        })
      ),
      dropQueuedIfUnowned: Effect.fn("ExecutionInputsRepo.dropQueuedIfUnowned")((msgConfigId: string, contactId: string) =>
        store.run((db) => {
          const owned = db.all(Executions).some((e) =>
            e.msg_config_id === msgConfigId && e.contact_id === contactId && !e.observer &&
            (e.status === "running" || e.status === "waiting" || e.status === "handoff")
          )
          if (owned) return
          for (const input of db.all(Inputs)) {
            if (input.msg_config_id === msgConfigId && input.contact_id === contactId && input.state === "queued") {
              db.put(Inputs, input.id, { ...input, state: "taken", value: null })
            }
          }
        })
      ),
      listStale: Effect.fn("ExecutionInputsRepo.listStale")((before: string, limit: number) =>
        store.run((db) => {
          const cutoff = instant(before)
          return oldestInputsFirst(
            db.all(Inputs).flatMap(visible).filter((i) => i.state === "buffered" && instant(i.received_at) < cutoff)
          ).slice(0, Math.max(limit, 0))
        })
      )
    })
  })
)

/** Every execution storage port in memory, over the `MemoryStore` in context. */
export const layerMemoryExecutionsStorage = Layer.mergeAll(
  layerMemoryExecutionsRepo,
  layerMemoryStepEventsRepo,
  layerMemoryExecutionInputsRepo
)
