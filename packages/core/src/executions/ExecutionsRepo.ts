/**
 * Storage of workflow executions: the execution records (each write a
 * compare-and-set on `state_version`), the immutable graph revisions they
 * run on, their step events, and the inbound inputs waiting to be routed
 * (debounce buffers and messages for a running execution's next wait point).
 */
import { Context, type Effect, type Option } from "effect"
import type {
  ExecutionFilter,
  ExecutionRecord,
  ExecutionStatus,
  StepEventFilter,
  StepEventRecord,
  WaitingReason,
  WorkflowRevision
} from "./Execution.ts"
import { isTerminal } from "./Execution.ts"
import type { ListSlice, ListWindow } from "../shared/Pagination.ts"
import type { WorkflowRecord } from "../workflows/Workflow.ts"

/** One group of `liveCounts`. */
export interface LiveCount {
  readonly status: ExecutionStatus
  readonly waiting_reason: WaitingReason | null
  readonly count: number
  /** The group's oldest `last_event_at` (ISO 8601). */
  readonly oldest_event_at: string
}

export class ExecutionsRepo extends Context.Service<ExecutionsRepo, {
  /** False (nothing written) when another execution already has its `dedupe_key`. */
  readonly insert: (execution: ExecutionRecord) => Effect.Effect<boolean>
  /** By id or tracking id, in the project. */
  readonly find: (projectId: string, idOrTrackingId: string) => Effect.Effect<Option.Option<ExecutionRecord>>
  /** By id, any project (jobs carry only the id). */
  readonly get: (id: string) => Effect.Effect<Option.Option<ExecutionRecord>>
  /** Replaces the record when its stored `state_version` is still `expectedVersion`; false otherwise. */
  readonly update: (execution: ExecutionRecord, expectedVersion: number) => Effect.Effect<boolean>
  /**
   * `update` and the step events of that write, all or nothing: false, and no event written, when the
   * stored `state_version` is no longer `expectedVersion`. The engine's checkpoint: one statement on
   * PostgreSQL, so a checkpoint that writes nothing else needs no transaction (one round trip).
   */
  readonly checkpoint: (
    execution: ExecutionRecord,
    expectedVersion: number,
    events: ReadonlyArray<StepEventRecord>
  ) => Effect.Effect<boolean>
  /** Newest first by (started_at, id). */
  readonly list: (projectId: string, filter: ExecutionFilter, window: ListWindow) => Effect.Effect<ListSlice<ExecutionRecord>>
  /**
   * The execution that owns the (number, contact) pair for routing
   * (decisions 10.1): the newest non-observer one in `running`, `waiting`
   * or `handoff`.
   */
  readonly findRouted: (msgConfigId: string, contactId: string) => Effect.Effect<Option.Option<ExecutionRecord>>
  /**
   * `findRouted`'s execution and its workflow, read together (one statement: one moment, where two statements side by
   * side could see an owner that ended between them beside another run's workflow).
   */
  readonly findRoutedWithWorkflow: (
    msgConfigId: string,
    contactId: string
  ) => Effect.Effect<{ readonly owner: Option.Option<ExecutionRecord>; readonly workflow: Option.Option<WorkflowRecord> }>
  /**
   * Executions some host should look at, oldest first: `running` ones whose
   * lease is absent or ended before `now`, that last moved before
   * `quietBefore` and are not parked on a wait due after `now`, and those
   * whose wait's `due_at` is not after `now`.
   */
  readonly listRecoverable: (now: string, quietBefore: string, limit: number) => Effect.Effect<ReadonlyArray<ExecutionRecord>>
  /**
   * Every project's non-terminal executions counted by status and waiting reason, with the oldest `last_event_at`
   * of each group: what `/metrics` reads at scrape time (runs waiting, runs stuck).
   */
  readonly liveCounts: Effect.Effect<ReadonlyArray<LiveCount>>
  /** Executions of a workflow that are not terminal. */
  readonly listLive: (projectId: string, workflowId: string) => Effect.Effect<ReadonlyArray<ExecutionRecord>>
  /** Removes the workflow's executions, their events and revisions. */
  readonly deleteByWorkflow: (projectId: string, workflowId: string) => Effect.Effect<void>
  /** Stores a revision unless one with its id exists (ids are content hashes). */
  readonly putRevision: (revision: WorkflowRevision) => Effect.Effect<void>
  readonly getRevision: (id: string) => Effect.Effect<Option.Option<WorkflowRevision>>
}>()("@parley/core/ports/ExecutionsRepo") {}

/**
 * How long before its run's `started_at` a step event may be stamped. The engine stamps an event with the
 * `last_event_at` of the record it writes, never before the run started, but on the clock of whichever host moves
 * the run, and hosts' clocks drift: a day is far more than any skew a host keeps running with, and costs at most one
 * more week's partition (0036) read for a run started on a Monday.
 */
export const STEP_EVENT_SKEW_MS = 24 * 60 * 60 * 1000

/**
 * The run whose events a read asks for: its id, when it started and, once it is over, when it ended, which bound its
 * events in time.
 */
export type StepEventsOf = Pick<ExecutionRecord, "id" | "started_at" | "status" | "ended_at">

/** The earliest `created_at` (ISO 8601) an event of `run` can have. */
export const stepEventsSince = (run: StepEventsOf): string => new Date(Date.parse(run.started_at) - STEP_EVENT_SKEW_MS).toISOString()

/**
 * The latest `created_at` (ISO 8601) an event of an ended or failed run can have: its last event is stamped when it
 * ends (`ended_at`), a day of skew after for the events other hosts stamped; none while it can still move.
 */
export const stepEventsUntil = (run: StepEventsOf): string | undefined =>
  isTerminal(run.status) && run.ended_at !== null
    ? new Date(Date.parse(run.ended_at) + STEP_EVENT_SKEW_MS).toISOString()
    : undefined

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i

/**
 * The `created_at` span (ISO 8601) an event with this id can have, for a read of one event by id, which names no
 * run. The engine's ids are UUIDv7 (`Ids.layer`): their first 48 bits are the milliseconds of the clock that stamped
 * the event, the same host and clock that gave its `created_at` (the step's `last_event_at`, taken when the step
 * began), so a day either side holds any step's length. `undefined` for an id of another kind (sequential test ids,
 * ids from elsewhere): no bound can place it.
 */
export const stepEventSpan = (id: string): { readonly since: string; readonly until: string } | undefined => {
  if (!UUID_V7.test(id)) return undefined
  const stamped = Number.parseInt(id.slice(0, 8) + id.slice(9, 13), 16)
  return {
    since: new Date(stamped - STEP_EVENT_SKEW_MS).toISOString(),
    until: new Date(stamped + STEP_EVENT_SKEW_MS).toISOString()
  }
}

export class StepEventsRepo extends Context.Service<StepEventsRepo, {
  readonly append: (events: ReadonlyArray<StepEventRecord>) => Effect.Effect<void>
  /**
   * Newest first by (created_at, seq). Reads by run see only events created since `stepEventsSince(run)` and, for a
   * run that is over, until `stepEventsUntil(run)`: on PostgreSQL those bounds let the planner skip the weekly
   * partitions from before the run and after its end.
   */
  readonly list: (
    projectId: string,
    run: StepEventsOf,
    filter: StepEventFilter,
    window: ListWindow
  ) => Effect.Effect<ListSlice<StepEventRecord>>
  /** One event by id, created within `stepEventSpan(id)` when the id is a UUIDv7 (what bounds it on PostgreSQL). */
  readonly find: (projectId: string, id: string) => Effect.Effect<Option.Option<StepEventRecord>>
  /** The run's `limit` latest events, newest first (bounded in time as `list`). */
  readonly latest: (run: StepEventsOf, limit: number) => Effect.Effect<ReadonlyArray<StepEventRecord>>
  /** Drops events created before `before`, at most `limit`; answers how many went. */
  readonly prune: (before: string, limit: number) => Effect.Effect<number>
}>()("@parley/core/ports/StepEventsRepo") {}

/** One inbound message waiting to be routed (decisions 10.1, 10.2). */
export interface ExecutionInputRecord {
  /** The stored message's id: one input per message. */
  readonly id: string
  readonly project_id: string
  readonly msg_config_id: string
  readonly contact_id: string
  readonly conversation_id: string
  /** The network id of the message (for read mode and `user_input_received`). */
  readonly network_id: string | null
  /** The value the message stands for (decisions 2.4.4); texts are strings. */
  readonly value: unknown
  readonly received_at: string
  /** `buffered`: inside a debounce window; `queued`: for a running execution's next wait point. */
  readonly state: "buffered" | "queued"
}

export class ExecutionInputsRepo extends Context.Service<ExecutionInputsRepo, {
  /** False when the message was already added (a repeated delivery). */
  readonly add: (input: ExecutionInputRecord) => Effect.Effect<boolean>
  /** The pair's inputs in `state`, oldest first. */
  readonly list: (
    msgConfigId: string,
    contactId: string,
    state: ExecutionInputRecord["state"]
  ) => Effect.Effect<ReadonlyArray<ExecutionInputRecord>>
  /** Moves buffered inputs to `queued` (a batch for a running execution's next wait point); others stay as they are. */
  readonly queue: (ids: ReadonlyArray<string>) => Effect.Effect<void>
  /** Removes them (routed or consumed); a message once added is remembered as seen. */
  readonly take: (ids: ReadonlyArray<string>) => Effect.Effect<void>
  /**
   * Takes the pair's `queued` inputs when no run owns the pair any more (no `running`, `waiting` or `handoff`
   * execution that is not an observer, as `ExecutionsRepo.findRouted` finds them), in one step: inputs queued for a
   * routed run that ended never feed a later run.
   */
  readonly dropQueuedIfUnowned: (msgConfigId: string, contactId: string) => Effect.Effect<void>
  /** Buffered inputs received before `before`, oldest first: batches whose timer was lost. */
  readonly listStale: (before: string, limit: number) => Effect.Effect<ReadonlyArray<ExecutionInputRecord>>
}>()("@parley/core/ports/ExecutionInputsRepo") {}
