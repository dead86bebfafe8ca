/**
 * `ExecutionsRepo`, `StepEventsRepo` and `ExecutionInputsRepo` on PostgreSQL
 * (migration 0010). The engine writes an execution at every checkpoint, so
 * `insert` and `update` are one statement each, and the writes nobody reads
 * an answer of (step events, revisions, taken inputs) go out with the
 * transaction's next statement.
 */
import {
  type ExecutionFilter,
  type ExecutionInputRecord,
  ExecutionInputsRepo,
  type ExecutionRecord,
  ExecutionsRepo,
  ExecutionStatus,
  type ListWindow,
  type StepEventFilter,
  type StepEventRecord,
  StepEventsRepo,
  STEP_EVENT_SKEW_MS,
  type StepEventsOf,
  stepEventSpan,
  stepEventsSince,
  stepEventsUntil,
  TriggerType,
  WaitingReason,
  type WorkflowRevision
} from "@parley/core"
import { Effect, Layer, Option, Schema } from "effect"
import { SqlClient, type Statement } from "effect/sql"
import { deferred } from "./Transactor.ts"
import { firstWorkflow, WORKFLOW_COLUMNS } from "./WorkflowsRepo.ts"
import { Count, decodeCount, decodeFirst, decodeRows, IsoFromDate, jsonb, JsonObject, jsonRows, listNewestFirst } from "./Rows.ts"

type Json<K extends keyof ExecutionRecord> = NonNullable<ExecutionRecord[K]>

/** A row of `workflow_executions` (its `wait_due_at` is `wait.due_at`, kept for the index): the stored execution. */
const ExecutionRow = Schema.Struct({
  id: Schema.String,
  project_id: Schema.String,
  workflow_id: Schema.String,
  workflow_name: Schema.String,
  revision_id: Schema.String,
  tracking_id: Schema.String,
  status: ExecutionStatus,
  waiting_reason: Schema.NullOr(WaitingReason),
  trigger_type: TriggerType,
  observer: Schema.Boolean,
  parent_execution_id: Schema.NullOr(Schema.String),
  call_depth: Schema.Number,
  msg_conversation_id: Schema.NullOr(Schema.String),
  msg_config_id: Schema.NullOr(Schema.String),
  contact_id: Schema.NullOr(Schema.String),
  started_at: IsoFromDate,
  last_event_at: IsoFromDate,
  ended_at: Schema.NullOr(IsoFromDate),
  current_node: Schema.NullOr(Schema.String),
  execution_context: JsonObject<Json<"execution_context">>(),
  error_details: Schema.NullOr(JsonObject<Json<"error_details">>()),
  resumable_execution_id: Schema.NullOr(Schema.String),
  wait: Schema.NullOr(JsonObject<Json<"wait">>()),
  pending: Schema.NullOr(JsonObject<Json<"pending">>()),
  agent: Schema.NullOr(JsonObject<Json<"agent">>()),
  handoff: Schema.NullOr(JsonObject<Json<"handoff">>()),
  requested_status: Schema.NullOr(Schema.Literal("waiting")),
  step_seq: Schema.Number,
  state_version: Schema.Number,
  lease_owner: Schema.NullOr(Schema.String),
  lease_until: Schema.NullOr(IsoFromDate),
  dedupe_key: Schema.NullOr(Schema.String)
})
const toExecutions: (rows: ReadonlyArray<unknown>) => Effect.Effect<ReadonlyArray<ExecutionRecord>> = decodeRows(
  "workflow_executions",
  ExecutionRow
)
const firstExecution: (rows: ReadonlyArray<unknown>) => Effect.Effect<Option.Option<ExecutionRecord>> = decodeFirst(
  "workflow_executions",
  ExecutionRow
)

const RevisionRow = Schema.Struct({
  id: Schema.String,
  workflow_id: Schema.String,
  project_id: Schema.String,
  definition: JsonObject<WorkflowRevision["definition"]>(),
  created_at: IsoFromDate
})
const firstRevision: (rows: ReadonlyArray<unknown>) => Effect.Effect<Option.Option<WorkflowRevision>> = decodeFirst(
  "workflow_revisions",
  RevisionRow
)

const StepEventRow = Schema.Struct({
  id: Schema.String,
  project_id: Schema.String,
  execution_id: Schema.String,
  seq: Schema.Number,
  event_type: Schema.String,
  direction: Schema.NullOr(Schema.Literals(["inbound", "outbound"])),
  edge_label: Schema.NullOr(Schema.String),
  created_at: IsoFromDate,
  payload: JsonObject<StepEventRecord["payload"]>(),
  step: Schema.NullOr(JsonObject<NonNullable<StepEventRecord["step"]>>())
})
const toStepEvents: (rows: ReadonlyArray<unknown>) => Effect.Effect<ReadonlyArray<StepEventRecord>> = decodeRows(
  "workflow_step_events",
  StepEventRow
)
const firstStepEvent = decodeFirst("workflow_step_events", StepEventRow)

/** A row of `workflow_execution_inputs` in a state the reads ask for (a taken input is never read back). */
const InputRow = Schema.Struct({
  id: Schema.String,
  project_id: Schema.String,
  msg_config_id: Schema.String,
  contact_id: Schema.String,
  conversation_id: Schema.String,
  network_id: Schema.NullOr(Schema.String),
  value: Schema.Unknown,
  received_at: IsoFromDate,
  state: Schema.Literals(["buffered", "queued"])
})
const toInputs: (rows: ReadonlyArray<unknown>) => Effect.Effect<ReadonlyArray<ExecutionInputRecord>> = decodeRows(
  "workflow_execution_inputs",
  InputRow
)

/** Live runs counted by state, with the oldest's last event (the metrics' gauges). */
const LiveCountRow = Schema.Struct({
  status: ExecutionStatus,
  waiting_reason: Schema.NullOr(WaitingReason),
  count: Schema.Int,
  oldest_event_at: IsoFromDate
})
const toLiveCounts = decodeRows("workflow_executions live counts", LiveCountRow)

const PrunedRow = Schema.Struct({ n: Count })
const decodePruned = decodeRows("workflow_step_events prune", PrunedRow)

/** A nullable jsonb column: SQL NULL for null, not the JSON `null`. */
const jsonbOrNull = (value: unknown): string | null => (value === null ? null : jsonb(value))

/**
 * One jsonb parameter: the same statement text (prepared once) whatever the batch's size. `run`: where the events'
 * run id comes from (their own column, or the run's row they join to). No foreign key checks it (migration 0041).
 */
const insertEvents = (
  sql: SqlClient.SqlClient,
  events: ReadonlyArray<StepEventRecord>,
  run: Statement.Fragment,
  rest: Statement.Fragment
) =>
  sql`
    INSERT INTO workflow_step_events (id, project_id, execution_id, seq, event_type, direction, edge_label, created_at,
      payload, step)
    SELECT r.id, r.project_id, ${run}, r.seq, r.event_type, r.direction, r.edge_label, r.created_at, r.payload, r.step
    FROM ${jsonRows(sql, events)} AS r(id text, project_id text, execution_id text, seq integer, event_type text,
      direction text, edge_label text, created_at timestamptz, payload jsonb, step jsonb)
    ${rest}`

/**
 * The earliest `created_at` of the step events of a run started at `started` (a timestamptz expression), as
 * `stepEventsSince` puts it: for the statements that join runs to their events in SQL.
 */
export const stepEventsSinceStart = (sql: SqlClient.SqlClient, started: Statement.Fragment) =>
  sql`(${started} - ${sql.literal(`interval '${STEP_EVENT_SKEW_MS} milliseconds'`)})`

/** Where a cursor whose event is gone (pruned) stands: before every event of its instant. */
const SEQ_MIN = -2147483648

/** The prefix of a workflow's columns read beside its execution's (`findRoutedWithWorkflow`). */
const WORKFLOW_PREFIX = "workflow."

export const layerExecutionsRepo = Layer.effect(
  ExecutionsRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const later = deferred(sql)
    const routedWorkflowColumns = sql.unsafe(WORKFLOW_COLUMNS.map((c) => `w.${c} AS "${WORKFLOW_PREFIX}${c}"`).join(", "))

    const where = (projectId: string, filter: ExecutionFilter) =>
      sql.and([
        sql`project_id = ${projectId}`,
        ...(filter.workflow_id !== undefined ? [sql`workflow_id = ${filter.workflow_id}`] : []),
        ...(filter.msg_conversation_id !== undefined ? [sql`msg_conversation_id = ${filter.msg_conversation_id}`] : []),
        ...(filter.status !== undefined ? [sql`status = ${filter.status}`] : []),
        ...(filter.waiting_reason === "timeout"
          ? [sql`status = 'waiting' AND wait_due_at IS NOT NULL`]
          : filter.waiting_reason !== undefined
          ? [sql`waiting_reason = ${filter.waiting_reason}`]
          : []),
        ...(filter.trigger_type !== undefined ? [sql`trigger_type = ${filter.trigger_type}`] : []),
        ...(filter.created_after !== undefined ? [sql`started_at >= ${filter.created_after}::timestamptz`] : []),
        ...(filter.created_before !== undefined ? [sql`started_at <= ${filter.created_before}::timestamptz`] : [])
      ])

    // What the run belongs to (project, workflow), when and from what it started (started_at, dedupe_key) are not
    // the writer's to change.
    const replace = (e: ExecutionRecord, expectedVersion: number) =>
      sql`
        UPDATE workflow_executions SET
          workflow_name = ${e.workflow_name}, revision_id = ${e.revision_id}, tracking_id = ${e.tracking_id},
          status = ${e.status}, waiting_reason = ${e.waiting_reason}, trigger_type = ${e.trigger_type},
          observer = ${e.observer}, parent_execution_id = ${e.parent_execution_id}, call_depth = ${e.call_depth},
          msg_conversation_id = ${e.msg_conversation_id}, msg_config_id = ${e.msg_config_id},
          contact_id = ${e.contact_id}, last_event_at = ${e.last_event_at}, ended_at = ${e.ended_at},
          current_node = ${e.current_node}, execution_context = ${jsonb(e.execution_context)},
          error_details = ${jsonbOrNull(e.error_details)}, resumable_execution_id = ${e.resumable_execution_id},
          wait = ${jsonbOrNull(e.wait)}, wait_due_at = ${e.wait?.due_at ?? null}, pending = ${jsonbOrNull(e.pending)},
          agent = ${jsonbOrNull(e.agent)}, handoff = ${jsonbOrNull(e.handoff)}, requested_status = ${e.requested_status}, step_seq = ${e.step_seq},
          state_version = ${e.state_version}, lease_owner = ${e.lease_owner}, lease_until = ${e.lease_until}
        WHERE id = ${e.id} AND state_version = ${expectedVersion}
        RETURNING id`

    return ExecutionsRepo.of({
      insert: Effect.fnUntraced(function*(e: ExecutionRecord) {
        // One statement: a start repeated under the same dedupe key writes nothing and says so. Without a key (an API
        // start) it always lands: nobody waits for its answer (it goes out with the transaction's next statement).
        const statement = sql`
          INSERT INTO workflow_executions (id, project_id, workflow_id, workflow_name, revision_id, tracking_id, status,
            waiting_reason, trigger_type, observer, parent_execution_id, call_depth, msg_conversation_id, msg_config_id,
            contact_id, started_at, last_event_at, ended_at, current_node, execution_context, error_details,
            resumable_execution_id, wait, wait_due_at, pending, agent, handoff, requested_status, step_seq, state_version,
            lease_owner, lease_until, dedupe_key)
          VALUES (${e.id}, ${e.project_id}, ${e.workflow_id}, ${e.workflow_name}, ${e.revision_id}, ${e.tracking_id},
            ${e.status}, ${e.waiting_reason}, ${e.trigger_type}, ${e.observer}, ${e.parent_execution_id},
            ${e.call_depth}, ${e.msg_conversation_id}, ${e.msg_config_id}, ${e.contact_id}, ${e.started_at},
            ${e.last_event_at}, ${e.ended_at}, ${e.current_node}, ${jsonb(e.execution_context)},
            ${jsonbOrNull(e.error_details)}, ${e.resumable_execution_id}, ${jsonbOrNull(e.wait)},
            ${e.wait?.due_at ?? null}, ${jsonbOrNull(e.pending)}, ${jsonbOrNull(e.agent)}, ${jsonbOrNull(e.handoff)},
            ${e.requested_status}, ${e.step_seq}, ${e.state_version}, ${e.lease_owner}, ${e.lease_until}, ${e.dedupe_key})
          ON CONFLICT (dedupe_key) WHERE dedupe_key IS NOT NULL DO NOTHING
          RETURNING id`
        if (e.dedupe_key === null) {
          yield* later(statement)
          return true
        }
        return (yield* statement).length > 0
      }, Effect.orDie),

      find: Effect.fnUntraced(function*(projectId: string, idOrTrackingId: string) {
        return yield* firstExecution(
          yield* sql`
          SELECT * FROM workflow_executions
          WHERE project_id = ${projectId} AND (id = ${idOrTrackingId} OR tracking_id = ${idOrTrackingId})
          ORDER BY id = ${idOrTrackingId} DESC, started_at DESC, id DESC
          LIMIT 1`
        )
      }, Effect.orDie),

      get: Effect.fnUntraced(function*(id: string) {
        return yield* firstExecution(yield* sql`SELECT * FROM workflow_executions WHERE id = ${id}`)
      }, Effect.orDie),

      update: Effect.fnUntraced(function*(e: ExecutionRecord, expectedVersion: number) {
        // One statement, the compare-and-set itself.
        return (yield* replace(e, expectedVersion)).length > 0
      }, Effect.orDie),

      checkpoint: Effect.fnUntraced(
        function*(e: ExecutionRecord, expectedVersion: number, events: ReadonlyArray<StepEventRecord>) {
          if (events.length === 0) return (yield* replace(e, expectedVersion)).length > 0
          // One statement, so one round trip and atomic without a transaction: the events go in only when the
          // compare-and-set matched, so only while their run exists and this statement holds its row.
          const rows = yield* sql`
            WITH updated AS (${replace(e, expectedVersion)}),
            appended AS (${insertEvents(sql, events, sql`r.execution_id`, sql`WHERE EXISTS (SELECT FROM updated)`)})
            SELECT id FROM updated`
          return rows.length > 0
        },
        Effect.orDie
      ),

      list: Effect.fnUntraced(function*(projectId: string, filter: ExecutionFilter, window: ListWindow) {
        return yield* listNewestFirst(sql, "workflow_executions", where(projectId, filter), window, toExecutions, "started_at")
      }, Effect.orDie),

      findRouted: Effect.fnUntraced(function*(msgConfigId: string, contactId: string) {
        // The conditions of workflow_executions_routed_idx, as literals so a generic plan still uses it.
        return yield* firstExecution(
          yield* sql`
          SELECT * FROM workflow_executions
          WHERE msg_config_id = ${msgConfigId} AND contact_id = ${contactId}
            AND NOT observer AND status IN ('running', 'waiting', 'handoff')
          ORDER BY started_at DESC, id DESC
          LIMIT 1`
        )
      }, Effect.orDie),

      findRoutedWithWorkflow: Effect.fnUntraced(function*(msgConfigId: string, contactId: string) {
        // findRouted's execution, its workflow's columns beside it under a prefix (the two tables share names).
        const rows = yield* sql`
          SELECT e.*, ${routedWorkflowColumns} FROM (
            SELECT * FROM workflow_executions
            WHERE msg_config_id = ${msgConfigId} AND contact_id = ${contactId}
              AND NOT observer AND status IN ('running', 'waiting', 'handoff')
            ORDER BY started_at DESC, id DESC
            LIMIT 1
          ) AS e LEFT JOIN workflows AS w ON w.project_id = e.project_id AND w.id = e.workflow_id`
        const owner = yield* firstExecution(rows)
        const row = rows[0]
        const workflow = row === undefined || row[`${WORKFLOW_PREFIX}id`] === null
          ? Option.none()
          : yield* firstWorkflow([Object.fromEntries(WORKFLOW_COLUMNS.map((c) => [c, row[`${WORKFLOW_PREFIX}${c}`]]))])
        return { owner, workflow }
      }, Effect.orDie),

      listRecoverable: Effect.fnUntraced(function*(now: string, quietBefore: string, limit: number) {
        if (limit <= 0) return []
        const rows = yield* sql`
          SELECT * FROM workflow_executions
          WHERE (status = 'running' AND last_event_at < ${quietBefore}::timestamptz
              AND (lease_until IS NULL OR lease_until < ${now}::timestamptz)
              -- Parked on a timer not yet due (delay, send in doubt): its timer brings it back.
              AND (wait_due_at IS NULL OR wait_due_at <= ${now}::timestamptz))
            OR (status IN ('running', 'waiting', 'handoff') AND wait_due_at <= ${now}::timestamptz)
          ORDER BY last_event_at, id
          LIMIT ${limit}`
        return yield* toExecutions(rows)
      }, Effect.orDie),

      // Over the live runs' partial index (migration 0031).
      liveCounts: Effect.flatMap(
        sql`
          SELECT status, waiting_reason, count(*)::int AS count, min(last_event_at) AS oldest_event_at FROM workflow_executions
          WHERE status IN ('running', 'waiting', 'handoff')
          GROUP BY status, waiting_reason`,
        toLiveCounts
      ).pipe(Effect.orDie),

      listLive: Effect.fnUntraced(function*(projectId: string, workflowId: string) {
        return yield* toExecutions(
          yield* sql`
          SELECT * FROM workflow_executions
          WHERE project_id = ${projectId} AND workflow_id = ${workflowId} AND status NOT IN ('ended', 'failed')
          ORDER BY started_at, id`
        )
      }, Effect.orDie),

      deleteByWorkflow: Effect.fnUntraced(function*(projectId: string, workflowId: string) {
        // Step events go with their executions (migration 0041's trigger); one statement for all of it.
        yield* sql`
          WITH executions AS (
            DELETE FROM workflow_executions WHERE project_id = ${projectId} AND workflow_id = ${workflowId}
          )
          DELETE FROM workflow_revisions WHERE project_id = ${projectId} AND workflow_id = ${workflowId}`
      }, Effect.orDie),

      putRevision: Effect.fnUntraced(function*(r: WorkflowRevision) {
        yield* later(sql`
          INSERT INTO workflow_revisions (id, project_id, workflow_id, definition, created_at)
          VALUES (${r.id}, ${r.project_id}, ${r.workflow_id}, ${jsonb(r.definition)}, ${r.created_at})
          ON CONFLICT (id) DO NOTHING`)
      }, Effect.orDie),

      getRevision: Effect.fnUntraced(function*(id: string) {
        return yield* firstRevision(yield* sql`SELECT * FROM workflow_revisions WHERE id = ${id}`)
      }, Effect.orDie)
    })
  })
)

type Cursor = Extract<ListWindow, { mode: "cursor" }>

export const layerStepEventsRepo = Layer.effect(
  StepEventsRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const later = deferred(sql)

    /**
     * A run's events: its id, and no older than the run (`stepEventsSince`) nor, once it is over, newer than its end
     * (`stepEventsUntil`). The bounds on `created_at` let the planner leave out the weekly partitions (0036) from
     * before the run and after its end; without them every read plans and probes them all, as many as retention keeps.
     */
    const ofRun = (run: StepEventsOf) => {
      const until = stepEventsUntil(run)
      return sql`execution_id = ${run.id} AND created_at >= ${stepEventsSince(run)}::timestamptz${
        until === undefined ? sql`` : sql` AND created_at <= ${until}::timestamptz`
      }`
    }

    const where = (projectId: string, run: StepEventsOf, filter: StepEventFilter) =>
      sql.and([
        ofRun(run),
        sql`project_id = ${projectId}`,
        ...(filter.event_types !== undefined && filter.event_types.length > 0
          ? [sql`event_type = ANY(${filter.event_types}::text[])`]
          : [])
      ])

    /** (created_at, seq, id) of the cursor's event; its seq is looked up, as the cursor carries only the id. */
    const position = (run: StepEventsOf, key: { readonly sortKey: string; readonly id: string }) =>
      sql`(${key.sortKey}::timestamptz, coalesce(
        (SELECT seq FROM workflow_step_events WHERE id = ${key.id} AND ${ofRun(run)}), ${SEQ_MIN}::int
      ), ${key.id}::text)`

    const listCursor = (projectId: string, run: StepEventsOf, filter: StepEventFilter, window: Cursor) =>
      Effect.gen(function*() {
        const { after, before, limit } = window
        const conditions = [
          where(projectId, run, filter),
          ...(after !== undefined ? [sql`(created_at, seq, id) < ${position(run, after)}`] : []),
          ...(before !== undefined ? [sql`(created_at, seq, id) > ${position(run, before)}`] : [])
        ]
        const order = before !== undefined ? sql`created_at ASC, seq ASC, id ASC` : sql`created_at DESC, seq DESC, id DESC`
        const rows = yield* sql`
          SELECT * FROM workflow_step_events WHERE ${sql.and(conditions)} ORDER BY ${order} LIMIT ${limit + 1}`
        const page = [...yield* toStepEvents(rows.slice(0, limit))]
        return { items: before !== undefined ? page.reverse() : page, hasMore: rows.length > limit, total: 0 }
      })

    const listPage = (projectId: string, run: StepEventsOf, filter: StepEventFilter, page: number, perPage: number) =>
      Effect.gen(function*() {
        const offset = (page - 1) * perPage
        const [{ total }] = yield* decodeCount(
          yield* sql`
          SELECT count(*)::int AS total FROM workflow_step_events WHERE ${where(projectId, run, filter)}`
        )
        const items = yield* toStepEvents(
          yield* sql`
          SELECT * FROM workflow_step_events WHERE ${where(projectId, run, filter)}
          ORDER BY created_at DESC, seq DESC, id DESC LIMIT ${perPage} OFFSET ${offset}`
        )
        return { items, hasMore: offset + items.length < total, total }
      })

    return StepEventsRepo.of({
      append: Effect.fnUntraced(function*(events: ReadonlyArray<StepEventRecord>) {
        if (events.length === 0) return
        // An event of no run finds no row to join: its run id is null, which the column refuses, and the statement
        // fails whole. A run is looked up by its key, without the lock a foreign key's check took: the writers append
        // events of a run their own transaction inserted, which nobody else can delete before it commits.
        yield* later(insertEvents(
          sql,
          events,
          sql`x.id`,
          sql`LEFT JOIN workflow_executions AS x ON x.id = r.execution_id`
        ))
      }, Effect.orDie),

      list: Effect.fnUntraced(
        function*(projectId: string, run: StepEventsOf, filter: StepEventFilter, window: ListWindow) {
          return yield* window.mode === "page"
            ? listPage(projectId, run, filter, window.page, window.perPage)
            : listCursor(projectId, run, filter, window)
        },
        Effect.orDie
      ),

      find: Effect.fnUntraced(function*(projectId: string, id: string) {
        // The id's own time bounds the event (`stepEventSpan`): two weekly partitions at most, not every one kept.
        const span = stepEventSpan(id)
        return yield* firstStepEvent(
          yield* sql`SELECT * FROM workflow_step_events WHERE project_id = ${projectId} AND id = ${id}${
            span === undefined ? sql`` : sql` AND created_at BETWEEN ${span.since}::timestamptz AND ${span.until}::timestamptz`
          }`
        )
      }, Effect.orDie),

      latest: Effect.fnUntraced(function*(run: StepEventsOf, limit: number) {
        if (limit <= 0) return []
        return yield* toStepEvents(
          yield* sql`
          SELECT * FROM workflow_step_events WHERE ${ofRun(run)}
          ORDER BY created_at DESC, seq DESC, id DESC LIMIT ${limit}`
        )
      }, Effect.orDie),

      prune: Effect.fnUntraced(function*(before: string, limit: number) {
        if (limit <= 0) return 0
        const rows = yield* sql`
          WITH gone AS (
            DELETE FROM workflow_step_events WHERE created_at < ${before}::timestamptz AND (id, created_at) IN (
              SELECT id, created_at FROM workflow_step_events WHERE created_at < ${before}::timestamptz
              ORDER BY created_at LIMIT ${limit}
            ) RETURNING 1
          )
          SELECT count(*)::int AS n FROM gone`
        return (yield* decodePruned(rows))[0]?.n ?? 0
      }, Effect.orDie)
    })
  })
)

export const layerExecutionInputsRepo = Layer.effect(
  ExecutionInputsRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const later = deferred(sql)
    return ExecutionInputsRepo.of({
      add: Effect.fnUntraced(function*(i: ExecutionInputRecord) {
        // A taken input keeps its row: a message once added stays seen.
        const rows = yield* sql`
          INSERT INTO workflow_execution_inputs (id, project_id, msg_config_id, contact_id, conversation_id, network_id,
            value, received_at, state)
          VALUES (${i.id}, ${i.project_id}, ${i.msg_config_id}, ${i.contact_id}, ${i.conversation_id}, ${i.network_id},
            ${jsonb(i.value)}, ${i.received_at}, ${i.state})
          ON CONFLICT (id) DO NOTHING
          RETURNING id`
        return rows.length > 0
      }, Effect.orDie),

      list: Effect.fnUntraced(function*(msgConfigId: string, contactId: string, state: ExecutionInputRecord["state"]) {
        return yield* toInputs(
          yield* sql`
          SELECT * FROM workflow_execution_inputs
          WHERE msg_config_id = ${msgConfigId} AND contact_id = ${contactId} AND state = ${state}
          ORDER BY received_at, id`
        )
      }, Effect.orDie),

      queue: Effect.fnUntraced(function*(ids: ReadonlyArray<string>) {
        if (ids.length === 0) return
        yield* sql`
          UPDATE workflow_execution_inputs SET state = 'queued'
          WHERE id = ANY(${ids}::text[]) AND state = 'buffered'`
      }, Effect.orDie),

      take: Effect.fnUntraced(function*(ids: ReadonlyArray<string>) {
        if (ids.length === 0) return
        yield* later(sql`
          UPDATE workflow_execution_inputs SET state = 'taken', value = 'null'
          WHERE id = ANY(${ids}::text[]) AND state <> 'taken'`)
      }, Effect.orDie),

      dropQueuedIfUnowned: Effect.fnUntraced(function*(msgConfigId: string, contactId: string) {
        // The owner's conditions are findRouted's (workflow_executions_routed_idx), as literals.
        yield* later(sql`
          UPDATE workflow_execution_inputs SET state = 'taken', value = 'null'
          WHERE msg_config_id = ${msgConfigId} AND contact_id = ${contactId} AND state = 'queued'
            AND NOT EXISTS (
              SELECT 1 FROM workflow_executions
              WHERE msg_config_id = ${msgConfigId} AND contact_id = ${contactId}
                AND NOT observer AND status IN ('running', 'waiting', 'handoff'))`)
      }, Effect.orDie),

      listStale: Effect.fnUntraced(function*(before: string, limit: number) {
        if (limit <= 0) return []
        return yield* toInputs(
          yield* sql`
          SELECT * FROM workflow_execution_inputs
          WHERE state = 'buffered' AND received_at < ${before}::timestamptz
          ORDER BY received_at, id LIMIT ${limit}`
        )
      }, Effect.orDie)
    })
  })
)

/** Every execution storage port on PostgreSQL. */
export const layerExecutionsStorage = Layer.mergeAll(layerExecutionsRepo, layerStepEventsRepo, layerExecutionInputsRepo)
