/**
 * `RevisionsRepo` on PostgreSQL (migration 0035): saves in `workflow_saves`, the graphs in `workflow_revisions`
 * (shared with the revisions runs are pinned to), run counts from `workflow_executions`, the rollout in
 * `workflow_rollouts`. Rows are decoded with their Schema.
 */
import {
  Actor,
  Definition,
  RevisionsRepo,
  type ListWindow,
  type RevisionSummaryRecord,
  type RolloutRecord,
  SaveAction,
  type SaveRecord,
  SAVES_SHOWN
} from "@parley/core"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Option, Schema } from "effect"
import { SqlClient, type Statement } from "effect/sql"
import { changeSignals, decodeCount, decodeRows, IsoFromDate, jsonb } from "./Rows.ts"

/** Rollout changes, NOTIFY'd with the write (delivered at its commit) to every host's rollout cache. */
const CHANGES_CHANNEL = "parley_rollouts"

const SaveRow = Schema.Struct({
  id: Schema.String,
  project_id: Schema.String,
  workflow_id: Schema.String,
  revision_id: Schema.String,
  action: SaveAction,
  saved_by: Actor,
  saved_at: IsoFromDate
})

const GraphRow = Schema.Struct({
  id: Schema.String,
  workflow_id: Schema.String,
  created_at: IsoFromDate,
  save_count: Schema.Int,
  execution_count: Schema.Int,
  waiting_count: Schema.Int
})

const RolloutRow = Schema.Struct({
  project_id: Schema.String,
  workflow_id: Schema.String,
  revision_id: Schema.String,
  percent: Schema.Int,
  started_by: Actor,
  started_at: IsoFromDate
})

const decodeSaves = decodeRows(SaveRow)
const decodeGraphs = decodeRows(GraphRow)
const decodeDefinitions = decodeRows(Schema.Struct({ definition: Definition }))
const decodeRollouts = decodeRows(RolloutRow)

export const layerRevisionsRepo = Layer.effect(
  RevisionsRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const pg = yield* PgClient.PgClient
    const signal = sql`SELECT pg_notify(${CHANGES_CHANNEL}, '')`

    /**
     * The graphs of the workflow with their counts, newest first, and the latest saves of each: one (`only`), or a
     * window's worth (`where` its cursor bounds, `order` and `limit`/`offset` its page).
     */
    const summaries = Effect.fnUntraced(function*(
      projectId: string,
      workflowId: string,
      select: { readonly only: string } | {
        readonly where: ReadonlyArray<Statement.Fragment>
        readonly order: Statement.Fragment
        readonly limit: number
        readonly offset: number
      }
    ) {
      const graphs = yield* decodeGraphs(yield* sql`
        WITH runs AS (
          SELECT revision_id, count(*)::int AS execution_count,
                 (count(*) FILTER (WHERE status = 'waiting'))::int AS waiting_count
          FROM workflow_executions WHERE project_id = ${projectId} AND workflow_id = ${workflowId}
          GROUP BY revision_id
        ), saves AS (
          SELECT revision_id, count(*)::int AS save_count
          FROM workflow_saves WHERE project_id = ${projectId} AND workflow_id = ${workflowId}
          GROUP BY revision_id
        )
        SELECT r.id, r.workflow_id, r.created_at,
               COALESCE(s.save_count, 0) AS save_count,
               COALESCE(x.execution_count, 0) AS execution_count,
               COALESCE(x.waiting_count, 0) AS waiting_count
        FROM workflow_revisions r
        LEFT JOIN saves s ON s.revision_id = r.id
        LEFT JOIN runs x ON x.revision_id = r.id
        WHERE ${sql.and([
        sql`r.project_id = ${projectId}`,
        sql`r.workflow_id = ${workflowId}`,
        ...("only" in select ? [sql`r.id = ${select.only}`] : select.where)
      ])}
        ${"only" in select ? sql`` : sql`ORDER BY ${select.order} LIMIT ${select.limit} OFFSET ${select.offset}`}`)
      if (graphs.length === 0) return []
      const saves = yield* decodeSaves(yield* sql`
        SELECT s.* FROM unnest(${graphs.map((g) => g.id)}::text[]) AS g(id)
        CROSS JOIN LATERAL (
          SELECT * FROM workflow_saves
          WHERE revision_id = g.id AND project_id = ${projectId} AND workflow_id = ${workflowId}
          ORDER BY saved_at DESC, id DESC LIMIT ${SAVES_SHOWN}
        ) s`)
      return graphs.map((g): RevisionSummaryRecord => ({
        ...g,
        saves: saves.filter((s) => s.revision_id === g.id).sort((a, b) =>
          Date.parse(b.saved_at) - Date.parse(a.saved_at) || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0)
        )
      }))
    })

    return RevisionsRepo.of({
      recordSave: Effect.fnUntraced(function*(save: SaveRecord, definition) {
        yield* sql`
          INSERT INTO workflow_revisions (id, project_id, workflow_id, definition, created_at)
          VALUES (${save.revision_id}, ${save.project_id}, ${save.workflow_id}, ${jsonb(definition)}, ${save.saved_at})
          ON CONFLICT (id) DO NOTHING`
        yield* sql`
          INSERT INTO workflow_saves (id, project_id, workflow_id, revision_id, action, saved_by, saved_at)
          VALUES (${save.id}, ${save.project_id}, ${save.workflow_id}, ${save.revision_id}, ${save.action},
                  ${jsonb(save.saved_by)}, ${save.saved_at})`
      }, Effect.orDie),
      list: Effect.fnUntraced(function*(projectId: string, workflowId: string, window: ListWindow) {
        const newestFirst = sql`r.created_at DESC, r.id DESC`
        if (window.mode === "page") {
          const [{ total }] = yield* decodeCount(yield* sql`
            SELECT count(*)::int AS total FROM workflow_revisions WHERE project_id = ${projectId} AND workflow_id = ${workflowId}`)
          const offset = (window.page - 1) * window.perPage
          const items = yield* summaries(projectId, workflowId, { where: [], order: newestFirst, limit: window.perPage, offset })
          return { items, hasMore: offset + items.length < total, total }
        }
        const { after, before, limit } = window
        const where = [
          ...(after !== undefined ? [sql`(r.created_at, r.id) < (${after.sortKey}::timestamptz, ${after.id})`] : []),
          ...(before !== undefined ? [sql`(r.created_at, r.id) > (${before.sortKey}::timestamptz, ${before.id})`] : [])
        ]
        // Travelling towards newer graphs, read upwards from the key and turn the page round.
        const order = before !== undefined ? sql`r.created_at ASC, r.id ASC` : newestFirst
        const found = yield* summaries(projectId, workflowId, { where, order, limit: limit + 1, offset: 0 })
        const page = found.slice(0, limit)
        return { items: before !== undefined ? page.reverse() : page, hasMore: found.length > limit, total: 0 }
      }, Effect.orDie),
      get: Effect.fnUntraced(function*(projectId: string, workflowId: string, revisionId: string) {
        const [summary] = yield* summaries(projectId, workflowId, { only: revisionId })
        if (summary === undefined) return Option.none()
        const [row] = yield* decodeDefinitions(yield* sql`SELECT definition FROM workflow_revisions WHERE id = ${revisionId}`)
        return row === undefined ? Option.none() : Option.some({ ...summary, definition: row.definition })
      }, Effect.orDie),
      getRollout: Effect.fnUntraced(function*(projectId: string, workflowId: string) {
        const rows = yield* decodeRollouts(yield* sql`
          SELECT * FROM workflow_rollouts WHERE project_id = ${projectId} AND workflow_id = ${workflowId}`)
        return Option.fromNullishOr(rows[0] as RolloutRecord | undefined)
      }, Effect.orDie),
      putRollout: Effect.fnUntraced(function*(r: RolloutRecord) {
        yield* sql`
          INSERT INTO workflow_rollouts (project_id, workflow_id, revision_id, percent, started_by, started_at)
          VALUES (${r.project_id}, ${r.workflow_id}, ${r.revision_id}, ${r.percent}, ${jsonb(r.started_by)}, ${r.started_at})
          ON CONFLICT (project_id, workflow_id) DO UPDATE SET
            revision_id = EXCLUDED.revision_id, percent = EXCLUDED.percent,
            started_by = EXCLUDED.started_by, started_at = EXCLUDED.started_at`
        yield* signal
      }, Effect.orDie),
      deleteRollout: Effect.fnUntraced(function*(projectId: string, workflowId: string) {
        const rows = yield* sql`
          DELETE FROM workflow_rollouts WHERE project_id = ${projectId} AND workflow_id = ${workflowId} RETURNING 1 AS gone`
        yield* signal
        return rows.length > 0
      }, Effect.orDie),
      changes: changeSignals(pg, CHANGES_CHANNEL)
    })
  })
)
