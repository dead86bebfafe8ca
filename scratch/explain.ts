import { EmbeddedPostgres, layerFromUrl, layerStorage } from "@parley/store-pg"
import { TimePartitions } from "@parley/core"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"

const DAY = 86_400_000
const program = Effect.gen(function*() {
  const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "parley-explain-"))
  const pg = yield* EmbeddedPostgres.start({ dataDir, throwaway: true })
  const context = yield* Layer.build(layerStorage.pipe(Layer.provideMerge(layerFromUrl(pg.url))))
  const sql = Context.get(context, SqlClient.SqlClient)
  const parts = Context.get(context, TimePartitions)
  const today = Math.floor(Date.now() / DAY) * DAY
  const iso = (ms: number) => new Date(ms).toISOString()
  yield* parts.prepare("workflow_step_events", iso(today - 91 * DAY), iso(today + 2 * DAY))
  yield* parts.prepare("log_entries", iso(today - 14 * DAY), iso(today + 2 * DAY))
  yield* sql`INSERT INTO projects (id, name, disabled, created_at, updated_at) VALUES ('prj', 'p', false, now(), now())`
  yield* sql.unsafe(`INSERT INTO workflows SELECT * FROM json_populate_record(NULL::workflows, '{"id":"wf","project_id":"prj","name":"w","slug":"w","status":"active","lock_version":0,"inbound_message_read_mode":"disabled","created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z","execution_count":0,"created_by":{},"definition":{}}')`).pipe(Effect.catchCause((c) => Effect.logError(c)))
  const cols = yield* sql<{ column_name: string; is_nullable: string; data_type: string }>`SELECT column_name, is_nullable, data_type FROM information_schema.columns WHERE table_name = 'workflow_executions' AND is_nullable = 'NO'`
  console.log(cols.map((c) => `${c.column_name}:${c.data_type}`).join(" "))
  yield* sql.unsafe(`
    INSERT INTO workflow_executions (id, project_id, workflow_id, workflow_name, revision_id, tracking_id, status, trigger_type, observer, call_depth, started_at, last_event_at, current_node, execution_context, step_seq, state_version)
    SELECT 'exe' || i, 'prj', 'wf', 'w', 'rev', 'trk' || i, 'ended', 'api_call', false, 0, now() - (i % 92) * interval '1 day', now(), 'start', '{}', 0, 0
    FROM generate_series(0, 9199) i`).pipe(Effect.catchCause((c) => Effect.logError(c)))
  yield* sql.unsafe(`
    INSERT INTO workflow_step_events (id, project_id, execution_id, seq, event_type, created_at, payload, step)
    SELECT gen_random_uuid()::text, 'prj', 'exe' || (i / 30), i % 30, CASE WHEN i % 2 = 0 THEN 'step_entered' ELSE 'step_completed' END,
      now() - ((i / 30) % 92) * interval '1 day' + (i % 30) * interval '1 second', '{"node_type":"set_variable"}', jsonb_build_object('identifier', 'set' || (i % 30))
    FROM generate_series(0, 275999) i`)
  yield* sql.unsafe(`
    INSERT INTO log_entries (id, project_id, source, occurred_at, ingested_at, level, problem, message, attributes, search_text, search, flow_execution_id)
    SELECT gen_random_uuid()::text, 'prj', 'flow_event', now() - (i % 15) * interval '1 day' - (i % 1000) * interval '1 second', now(), 'info', false, 'step entered ' || i, '{}', 'step entered set' || (i % 50), ('step entered set' || (i % 50))::tsvector, 'exe' || (i % 9200)
    FROM generate_series(0, 149999) i`)
  yield* sql`ANALYZE`
  const explain = (label: string, q: string) =>
    Effect.gen(function*() {
      const rows = yield* sql.unsafe<{ "QUERY PLAN": string }>(`EXPLAIN (ANALYZE, COSTS OFF, SUMMARY ON) ${q}`)
      const lines = rows.map((r) => r["QUERY PLAN"])
      const scans = lines.filter((l) => /Scan/.test(l)).length
      console.log(`\n== ${label}: ${scans} scan nodes`)
      console.log(lines.slice(0, 6).join("\n"))
      console.log(lines.filter((l) => /Planning Time|Execution Time/.test(l)).join("\n"))
    }).pipe(Effect.catchCause((c) => Effect.logError(label, c)))
  const e = "'exe4321'"
  yield* explain("latest", `SELECT * FROM workflow_step_events WHERE execution_id = ${e} ORDER BY created_at DESC, seq DESC, id DESC LIMIT 10`)
  yield* explain("list page count", `SELECT count(*) FROM workflow_step_events WHERE execution_id = ${e} AND project_id = 'prj'`)
  const anId = (yield* sql<{ id: string }>`SELECT id FROM workflow_step_events WHERE execution_id = 'exe4321' LIMIT 1`)[0]!.id
  yield* explain("find", `SELECT * FROM workflow_step_events WHERE project_id = 'prj' AND id = '${anId}'`)
  yield* explain("cursor", `SELECT * FROM workflow_step_events WHERE execution_id = ${e} AND project_id = 'prj' AND (created_at, seq, id) < (now(), coalesce((SELECT seq FROM workflow_step_events WHERE id = '${anId}' AND execution_id = ${e}), -1), '${anId}') ORDER BY created_at DESC, seq DESC, id DESC LIMIT 21`)
  yield* explain("erasure", `DELETE FROM workflow_step_events WHERE id IN (SELECT id FROM workflow_step_events WHERE execution_id IN ('exe1', 'exe2') LIMIT 1000) RETURNING 1`)
  yield* explain("prune default", `DELETE FROM workflow_step_events WHERE (id, created_at) IN (SELECT id, created_at FROM workflow_step_events WHERE created_at < '${iso(today - 91 * DAY)}' ORDER BY created_at LIMIT 10000)`)
  yield* explain("node flow", `SELECT e.step->>'identifier', count(DISTINCT e.execution_id) FROM workflow_executions x JOIN workflow_step_events e ON e.execution_id = x.id WHERE x.project_id = 'prj' AND x.workflow_id = 'wf' AND e.event_type IN ('step_entered', 'step_completed') AND e.step IS NOT NULL GROUP BY 1`)
  yield* explain("log search window", `SELECT id FROM log_entries WHERE project_id = 'prj' AND occurred_at >= '${iso(today - 2 * DAY)}' AND occurred_at <= '${iso(today - DAY)}' AND source = ANY('{flow_event}') AND search @@ 'set7'::tsquery ORDER BY occurred_at DESC, id DESC LIMIT 51`)
  yield* explain("log search 14 days", `SELECT id FROM log_entries WHERE project_id = 'prj' AND occurred_at >= '${iso(today - 14 * DAY)}' AND occurred_at <= '${iso(today + DAY)}' AND source = ANY('{flow_event}') ORDER BY occurred_at DESC, id DESC LIMIT 51`)
  yield* sql.unsafe(`PREPARE s(text, timestamptz, timestamptz) AS SELECT id FROM log_entries WHERE project_id = $1 AND occurred_at >= $2 AND occurred_at <= $3 ORDER BY occurred_at DESC, id DESC LIMIT 51`)
  yield* sql.unsafe(`SET plan_cache_mode = force_generic_plan`)
  yield* explain("log search generic plan", `EXECUTE s('prj', '${iso(today - 2 * DAY)}', '${iso(today - DAY)}')`)
  yield* sql.unsafe(`RESET plan_cache_mode`)
  yield* explain("log prune", `DELETE FROM log_entries WHERE (tableoid, ctid) IN (SELECT tableoid, ctid FROM log_entries WHERE occurred_at < '${iso(today - 14 * DAY)}' LIMIT 10000) RETURNING id`)
})
Effect.runPromise(Effect.scoped(program)).catch((e) => { console.error(e); process.exit(1) })
