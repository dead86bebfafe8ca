/** `WorkflowsRepo` and `TriggersRepo` on PostgreSQL. */
import {
  Actor,
  Definition,
  definitionReferences,
  type ListWindow,
  ReadMode,
  Trigger,
  type TriggerRecord,
  TriggersRepo,
  type TriggerType,
  type WorkflowFilter,
  type WorkflowRecord,
  type WorkflowReference,
  WorkflowsRepo,
  WorkflowStatus
} from "@parley/core"
import { Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import {
  columnRows,
  decodeFirst,
  decodeRows,
  IsoFromDate,
  jsonb,
  JsonObject,
  listNewestFirst,
  mapUnique,
  Nullable
} from "./Rows.ts"
import { deferred } from "./Transactor.ts"

/**
 * A row of `workflows`: the stored workflow, times as ISO text. The graph is a jsonb column checked for its kind only:
 * it was validated when saved, and every start reads the workflow (a 51-node graph decoded node by node cost a start
 * more host CPU than the rest of its row).
 */
const WorkflowSummaryRow = Schema.Struct({
  id: Schema.String,
  project_id: Schema.String,
  name: Schema.String,
  slug: Schema.String,
  description: Schema.NullOr(Schema.String),
  status: WorkflowStatus,
  lock_version: Schema.Number,
  message_debounce_seconds: Schema.NullOr(Schema.Number),
  agent_default_tools_version: Schema.NullOr(Schema.Number),
  inbound_message_read_mode: ReadMode,
  created_at: IsoFromDate,
  updated_at: IsoFromDate,
  execution_count: Schema.Number,
  last_executed_at: Nullable(IsoFromDate),
  created_by: Actor
})
const WorkflowRow = Schema.Struct({ ...WorkflowSummaryRow.fields, definition: JsonObject<Definition>() })
/** The columns `firstWorkflow` decodes (a join that reads a workflow beside another row names them). */
export const WORKFLOW_COLUMNS: ReadonlyArray<string> = Object.keys(WorkflowRow.fields)
const firstSummary = decodeFirst("workflows", WorkflowSummaryRow)
const toSummaries = decodeRows("workflows", WorkflowSummaryRow)
/** Every column of `workflows` but the graph. */
const SUMMARY_COLUMNS = Object.keys(WorkflowSummaryRow.fields).join(", ")

export const firstWorkflow: (rows: ReadonlyArray<unknown>) => Effect.Effect<Option.Option<WorkflowRecord>> = decodeFirst(
  "workflows",
  WorkflowRow
)
const toWorkflows: (rows: ReadonlyArray<unknown>) => Effect.Effect<ReadonlyArray<WorkflowRecord>> = decodeRows(
  "workflows",
  WorkflowRow
)

/** A row of `triggers`. */
const TriggerRow = Schema.Struct({
  ...Trigger.fields,
  project_id: Schema.String,
  created_at: IsoFromDate,
  updated_at: IsoFromDate
})
const toTriggers: (rows: ReadonlyArray<unknown>) => Effect.Effect<ReadonlyArray<TriggerRecord>> = decodeRows(
  "triggers",
  TriggerRow
)
/** A trigger with the state and name of its workflow. */
const TriggerOfWorkflowRow = Schema.Struct({
  ...TriggerRow.fields,
  workflow_status: Schema.String,
  workflow_name: Schema.String
})
const toTriggersOfWorkflows = decodeRows("triggers join workflows", TriggerOfWorkflowRow)

/** A workflow that references a record: what a refusal names, and its status. */
const ReferrerRow = Schema.Struct({ id: Schema.String, name: Schema.String, status: WorkflowStatus })
const toReferrers = decodeRows("workflow_references join workflows", ReferrerRow)

/** The unique indexes of 0002_workflows the domain can act on. */
const duplicates = mapUnique({
  workflows_project_name_key: "name",
  workflows_project_slug_key: "slug"
})

export const layerWorkflowsRepo = Layer.effect(
  WorkflowsRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const later = deferred(sql)

    /** The references of `definition` as rows `r(kind, target, ord)` (migration 0042's `workflow_references`). */
    const referenceRows = (definition: Definition) =>
      columnRows(sql, definitionReferences(definition), [
        ["kind", "text", (r: WorkflowReference) => r.kind],
        ["target", "text", (r: WorkflowReference) => r.target]
      ])

    const where = (projectId: string, filter: WorkflowFilter) =>
      sql.and([
        sql`project_id = ${projectId}`,
        filter.status !== undefined ? sql`status = ${filter.status}` : sql`status <> 'archived'`,
        // strpos, not LIKE: the text is taken literally, % and _ included.
        ...(filter.name_contains !== undefined ? [sql`strpos(lower(name), lower(${filter.name_contains})) > 0`] : []),
        ...(filter.created_after !== undefined ? [sql`created_at >= ${filter.created_after}::timestamptz`] : []),
        ...(filter.created_before !== undefined ? [sql`created_at <= ${filter.created_before}::timestamptz`] : [])
      ])

    return WorkflowsRepo.of({
      insert: Effect.fnUntraced(function*(w: WorkflowRecord) {
        // The workflow and its references in one statement (the foreign key is checked at its end).
        yield* sql`
          WITH w AS (
            INSERT INTO workflows (id, project_id, name, slug, description, status, lock_version,
              message_debounce_seconds, agent_default_tools_version, inbound_message_read_mode, created_at, updated_at,
              execution_count, last_executed_at, created_by, definition)
            VALUES (${w.id}, ${w.project_id}, ${w.name}, ${w.slug}, ${w.description}, ${w.status}, ${w.lock_version},
              ${w.message_debounce_seconds}, ${w.agent_default_tools_version}, ${w.inbound_message_read_mode},
              ${w.created_at}, ${w.updated_at}, ${w.execution_count}, ${w.last_executed_at}, ${jsonb(w.created_by)},
              ${jsonb(w.definition)})
            RETURNING project_id, id)
          INSERT INTO workflow_references (project_id, workflow_id, kind, target)
          SELECT w.project_id, w.id, r.kind, r.target FROM w, ${referenceRows(w.definition)}`
      }, Effect.catchTag("SqlError", duplicates)),

      findById: Effect.fnUntraced(function*(projectId: string, id: string) {
        return yield* firstWorkflow(yield* sql`SELECT * FROM workflows WHERE project_id = ${projectId} AND id = ${id}`)
      }, Effect.orDie),

      findSummary: Effect.fnUntraced(function*(projectId: string, id: string) {
        return yield* firstSummary(
          yield* sql`SELECT ${sql.unsafe(SUMMARY_COLUMNS)} FROM workflows WHERE project_id = ${projectId} AND id = ${id}`
        )
      }, Effect.orDie),

      list: Effect.fnUntraced(function*(projectId: string, filter: WorkflowFilter, window: ListWindow) {
        return yield* listNewestFirst(sql, "workflows", where(projectId, filter), window, toWorkflows)
      }, Effect.orDie),

      listSummaries: Effect.fnUntraced(function*(projectId: string, filter: WorkflowFilter, window: ListWindow) {
        return yield* listNewestFirst(sql, "workflows", where(projectId, filter), window, toSummaries, "created_at", SUMMARY_COLUMNS)
      }, Effect.orDie),

      update: Effect.fnUntraced(function*(w: WorkflowRecord, expectedLockVersion: number) {
        // Identity and creation time are not the caller's to change. The references follow the definition in the
        // same statement, only when the compare-and-set wrote: those it no longer holds go, new ones come (the two
        // sets are disjoint, so the order PostgreSQL runs them in does not matter).
        const rows = yield* sql`
          WITH w AS (
            UPDATE workflows SET
              name = ${w.name}, slug = ${w.slug}, description = ${w.description}, status = ${w.status},
              lock_version = ${w.lock_version}, message_debounce_seconds = ${w.message_debounce_seconds},
              agent_default_tools_version = ${w.agent_default_tools_version},
              inbound_message_read_mode = ${w.inbound_message_read_mode}, updated_at = ${w.updated_at},
              execution_count = ${w.execution_count}, last_executed_at = ${w.last_executed_at},
              created_by = ${jsonb(w.created_by)}, definition = ${jsonb(w.definition)}
            WHERE project_id = ${w.project_id} AND id = ${w.id} AND lock_version = ${expectedLockVersion}
            RETURNING *),
          r AS (SELECT kind, target FROM ${referenceRows(w.definition)}),
          gone AS (
            DELETE FROM workflow_references x USING w
            WHERE x.project_id = w.project_id AND x.workflow_id = w.id
              AND NOT EXISTS (SELECT 1 FROM r WHERE r.kind = x.kind AND r.target = x.target)),
          added AS (
            INSERT INTO workflow_references (project_id, workflow_id, kind, target)
            SELECT w.project_id, w.id, r.kind, r.target FROM w, r
            ON CONFLICT DO NOTHING)
          SELECT * FROM w`
        return yield* firstWorkflow(rows)
      }, Effect.catchTag("SqlError", duplicates)),

      referrers: Effect.fnUntraced(function*(
        projectId: string,
        reference: WorkflowReference,
        statuses: ReadonlyArray<WorkflowStatus>,
        limit: number
      ) {
        return yield* toReferrers(
          yield* sql`
          SELECT w.id, w.name, w.status
          FROM workflow_references r
          JOIN workflows w ON w.project_id = r.project_id AND w.id = r.workflow_id
          WHERE r.project_id = ${projectId} AND r.kind = ${reference.kind} AND r.target = ${reference.target}
            AND w.status = ANY(${statuses}::text[])
          ORDER BY array_position(${statuses}::text[], w.status), w.created_at DESC, w.id DESC
          LIMIT ${limit}`
        )
      }, Effect.orDie),

      delete: Effect.fnUntraced(function*(projectId: string, id: string) {
        // Its triggers and references go with it (ON DELETE CASCADE).
        const rows = yield* sql`DELETE FROM workflows WHERE project_id = ${projectId} AND id = ${id} RETURNING id`
        return rows.length > 0
      }, Effect.orDie),

      slugTaken: Effect.fnUntraced(function*(projectId: string, slug: string) {
        const rows = yield* sql`SELECT 1 FROM workflows WHERE project_id = ${projectId} AND slug = ${slug}`
        return rows.length > 0
      }, Effect.orDie),

      countExecution: Effect.fnUntraced(function*(projectId: string, id: string, at: string) {
        // Nobody reads its answer: in a start's transaction it goes out with the commit.
        yield* later(sql`
          UPDATE workflows SET execution_count = execution_count + 1,
            last_executed_at = greatest(last_executed_at, ${at}::timestamptz)
          WHERE project_id = ${projectId} AND id = ${id}`)
      }, Effect.orDie)
    })
  })
)

export const layerTriggersRepo = Layer.effect(
  TriggersRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    return TriggersRepo.of({
      insert: Effect.fnUntraced(function*(t: TriggerRecord) {
        yield* sql`
          INSERT INTO triggers (id, project_id, workflow_id, trigger_type, active, display_name, triggerable,
            created_at, updated_at)
          VALUES (${t.id}, ${t.project_id}, ${t.workflow_id}, ${t.trigger_type}, ${t.active}, ${t.display_name},
            ${jsonb(t.triggerable)}, ${t.created_at}, ${t.updated_at})`
      }, Effect.orDie),

      findById: Effect.fnUntraced(function*(projectId: string, id: string) {
        const rows = yield* sql`SELECT * FROM triggers WHERE project_id = ${projectId} AND id = ${id}`
        return Option.fromNullishOr((yield* toTriggers(rows))[0])
      }, Effect.orDie),

      listByWorkflow: Effect.fnUntraced(function*(projectId: string, workflowId: string) {
        return yield* toTriggers(
          yield* sql`
          SELECT * FROM triggers WHERE project_id = ${projectId} AND workflow_id = ${workflowId}
          ORDER BY created_at, id`
        )
      }, Effect.orDie),

      listByType: Effect.fnUntraced(function*(projectId: string, type: TriggerType) {
        const rows = yield* sql`
          SELECT t.*, w.status AS workflow_status, w.name AS workflow_name
          FROM triggers t JOIN workflows w ON w.project_id = t.project_id AND w.id = t.workflow_id
          WHERE t.project_id = ${projectId} AND t.trigger_type = ${type}
          ORDER BY t.created_at, t.id`
        return (yield* toTriggersOfWorkflows(rows)).map(({ workflow_name, workflow_status, ...trigger }) => ({
          trigger,
          workflowStatus: workflow_status,
          workflowName: workflow_name
        }))
      }, Effect.orDie),

      update: Effect.fnUntraced(function*(t: TriggerRecord) {
        yield* sql`
          UPDATE triggers SET trigger_type = ${t.trigger_type}, active = ${t.active}, display_name = ${t.display_name},
            triggerable = ${jsonb(t.triggerable)}, updated_at = ${t.updated_at}
          WHERE project_id = ${t.project_id} AND id = ${t.id}`
      }, Effect.orDie),

      delete: Effect.fnUntraced(function*(projectId: string, id: string) {
        const rows = yield* sql`DELETE FROM triggers WHERE project_id = ${projectId} AND id = ${id} RETURNING id`
        return rows.length > 0
      }, Effect.orDie)
    })
  })
)
