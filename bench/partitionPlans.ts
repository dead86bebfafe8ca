/**
 * What the queries on the time-partitioned tables (migration 0036) cost their plans: each statement the adapters
 * run on `workflow_step_events` and `log_entries`, `EXPLAIN ANALYZE`d on a retention's worth of rows in their
 * partitions (step events: runs spread over 92 days, a partition a week; log entries: 15 days, a partition a day,
 * each readied two days ahead as the retention jobs do, and the default partitions), beside the same statement on an unpartitioned copy of the same rows with the indexes the tables had before
 * 0036. Printed: how long 0036 took on those rows (they are written before it), then for each statement the
 * partitions it reads, its planning and execution time (medians of 5). The step event statements are as they were
 * before reads of one run were bounded by its start: `bench/stepEventPlans.ts` measures the bounded ones.
 *
 *   BENCH_ONLY=plans npm run bench
 */
import { TimePartitions } from "@parley/core"
import { PgClient } from "@effect/sql-pg"
import { EmbeddedPostgres, layerStorage, migrations } from "@parley/store-pg"
import { Context, Effect, Layer } from "effect"
import { Migrator, SqlClient } from "effect/sql"
import { performance } from "node:perf_hooks"
import { explained, median } from "./plans.ts"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"

const DAY = 24 * 60 * 60 * 1000
const RUNS = 9_200
const EVENTS_A_RUN = 30
const ENTRIES = 150_000

export interface PlanCost {
  readonly query: string
  /** Partitions (or tables) the executed plan read. */
  readonly scanned: number
  readonly planningMs: number
  readonly executionMs: number
  readonly unpartitioned: { readonly planningMs: number; readonly executionMs: number } | undefined
}


export const benchPartitionPlans = Effect.gen(function*() {
  const dataDir = yield* Effect.acquireRelease(
    Effect.sync(() => Fs.mkdtempSync(Path.join(Os.tmpdir(), "parley-bench-plans-"))),
    (dir) => Effect.sync(() => Fs.rmSync(dir, { recursive: true, force: true }))
  )
  const pg = yield* EmbeddedPostgres.start({ dataDir, throwaway: true })
  const client = yield* Layer.build(PgClient.layer({ url: pg.url, maxConnections: 8 })).pipe(Effect.orDie)
  const sql = Context.get(client, SqlClient.SqlClient)
  const run = (statement: string) => Effect.orDie(sql.unsafe(statement))
  const iso = (ms: number) => new Date(ms).toISOString()
  const today = Math.floor(Date.now() / DAY) * DAY
  const migrateUpTo = (last: number) =>
    Migrator.make({})({ loader: Effect.map(migrations, (all) => all.filter(([id]) => id <= last)), table: "parley_migrations" })
      .pipe(Effect.provideContext(client), Effect.orDie)
  yield* migrateUpTo(35)

  // Before 0036: a project, a workflow, its runs (one a day back to 91 days, in turn), their events and log entries.
  yield* run(`INSERT INTO projects (id, name, disabled, created_at, updated_at) VALUES ('prj', 'Plans', false, now(), now())`)
  yield* run(`
    INSERT INTO workflows (id, project_id, name, slug, status, lock_version, inbound_message_read_mode, created_at,
      updated_at, created_by, definition)
    VALUES ('wf', 'prj', 'Plans', 'plans', 'active', 0, 'disabled', now(), now(), '{}', '{"nodes":[],"edges":[]}')`)
  yield* run(`
    INSERT INTO workflow_executions (id, project_id, workflow_id, workflow_name, revision_id, tracking_id, status,
      trigger_type, observer, call_depth, started_at, last_event_at, current_node, execution_context, step_seq,
      state_version, contact_id)
    SELECT 'exe' || i, 'prj', 'wf', 'Plans', 'rev', 'trk' || i, 'ended', 'api_call', false, 0,
      now() - (i % 92) * interval '1 day', now(), 'start', '{}', 0, 0, 'contact' || (i % 1000)
    FROM generate_series(0, ${RUNS - 1}) i`)
  yield* run(`
    INSERT INTO workflow_step_events (id, project_id, execution_id, seq, event_type, created_at, payload, step)
    SELECT gen_random_uuid()::text, 'prj', 'exe' || (i / ${EVENTS_A_RUN}), i % ${EVENTS_A_RUN},
      CASE WHEN i % 2 = 0 THEN 'step_entered' ELSE 'step_completed' END,
      now() - ((i / ${EVENTS_A_RUN}) % 92) * interval '1 day' + (i % ${EVENTS_A_RUN}) * interval '1 second',
      '{"node_type":"set_variable"}', jsonb_build_object('identifier', 'set' || (i % ${EVENTS_A_RUN}))
    FROM generate_series(0, ${RUNS * EVENTS_A_RUN - 1}) i`)
  yield* run(`
    INSERT INTO log_entries (id, project_id, source, occurred_at, ingested_at, level, problem, message, attributes,
      search_text, search, flow_execution_id)
    SELECT gen_random_uuid()::text, 'prj', 'flow_event', now() - (i % 15) * interval '1 day' - (i % 1000) * interval '1 second',
      now(), 'info', false, 'step entered ' || i, '{}', 'step entered set' || (i % 50), ('step entered set' || (i % 50))::tsvector,
      'exe' || (i % ${RUNS})
    FROM generate_series(0, ${ENTRIES - 1}) i`)
  // 0036 on those rows, timed: what an upgrade's downtime is made of.
  const migrationStart = performance.now()
  yield* migrateUpTo(36)
  const migration = { rows: RUNS * EVENTS_A_RUN + ENTRIES, ms: performance.now() - migrationStart }
  const context = yield* Layer.build(layerStorage.pipe(Layer.provide(Layer.succeedContext(client))))
  const partitions = Context.get(context, TimePartitions)
  // As the retention jobs would when a host starts.
  yield* partitions.prepare("workflow_step_events", iso(today), iso(today + 2 * DAY))
  yield* partitions.prepare("log_entries", iso(today), iso(today + 2 * DAY))

  // The same rows unpartitioned, indexed as before 0036.
  yield* run(`CREATE TABLE step_events_flat AS SELECT * FROM workflow_step_events`)
  yield* run(`ALTER TABLE step_events_flat ADD PRIMARY KEY (id)`)
  yield* run(`CREATE INDEX ON step_events_flat (execution_id, created_at DESC, seq DESC, id DESC)`)
  yield* run(`CREATE INDEX ON step_events_flat (created_at)`)
  yield* run(`CREATE TABLE log_entries_flat AS SELECT * FROM log_entries`)
  yield* run(`CREATE INDEX ON log_entries_flat (project_id, occurred_at DESC)`)
  yield* run(`CREATE INDEX ON log_entries_flat USING gin (search)`)
  yield* run(`CREATE INDEX ON log_entries_flat USING brin (occurred_at)`)
  yield* run(`VACUUM ANALYZE`)

  const [first] = yield* Effect.orDie(sql<{ readonly id: string }>`
    SELECT id FROM workflow_step_events WHERE execution_id = 'exe4321' LIMIT 1`)
  const eventId = first!.id
  const timed = (statement: string) =>
    Effect.gen(function*() {
      const samples: Array<{ planning: number; execution: number; scanned: number }> = []
      for (let i = 0; i < 5; i++) {
        const text = yield* explained(sql, statement)
        const time = (label: string) => Number(/([\d.]+) ms/.exec(text.find((l) => l.startsWith(label)) ?? "")?.[1] ?? NaN)
        // A partition counts when a scan node of the executed plan ran on it (never-executed nodes do not); the
        // runs a join reads are not counted.
        const scanned = new Set(
          text.filter((l) => /Scan (using \S+ )?on \w+/.test(l) && !/never executed/.test(l))
            .map((l) => /Scan (?:using \S+ )?on (\w+)/.exec(l)![1])
            .filter((table) => table !== "workflow_executions")
        )
        samples.push({ planning: time("Planning Time"), execution: time("Execution Time"), scanned: scanned.size })
      }
      return {
        planningMs: median(samples.map((s) => s.planning)),
        executionMs: median(samples.map((s) => s.execution)),
        scanned: samples[0]!.scanned
      }
    })

  const e = "'exe4321'"
  const contact = "SELECT id FROM workflow_executions WHERE project_id = 'prj' AND contact_id = 'contact7'"
  const events = (table: string) => ({
    "a run's newest 10 (latest)": `SELECT * FROM ${table} WHERE execution_id = ${e} ORDER BY created_at DESC, seq DESC, id DESC LIMIT 10`,
    "a run's page count": `SELECT count(*) FROM ${table} WHERE execution_id = ${e} AND project_id = 'prj'`,
    "a page after a cursor":
      `SELECT * FROM ${table} WHERE execution_id = ${e} AND project_id = 'prj' AND (created_at, seq, id) < (now(), coalesce((SELECT seq FROM ${table} WHERE id = '${eventId}' AND execution_id = ${e}), -1), '${eventId}') ORDER BY created_at DESC, seq DESC, id DESC LIMIT 21`,
    "an event by id (find)": `SELECT * FROM ${table} WHERE project_id = 'prj' AND id = '${eventId}'`,
    // As `ContactErasureRepo.deleteStepEvents`: the execution condition outside too, or the delete scans every partition.
    "a contact's events erased": `DELETE FROM ${table} WHERE execution_id IN (${contact}) AND (id, created_at) IN (
      SELECT id, created_at FROM ${table} WHERE execution_id IN (${contact}) LIMIT 1000)`,
    "a workflow's node flow":
      `SELECT e.step->>'identifier', count(DISTINCT e.execution_id) FROM workflow_executions x JOIN ${table} e ON e.execution_id = x.id WHERE x.project_id = 'prj' AND x.workflow_id = 'wf' AND e.event_type IN ('step_entered', 'step_completed') AND e.step IS NOT NULL GROUP BY 1`
  })
  const logs = (table: string) => ({
    "log search, a day's window": `SELECT id FROM ${table} WHERE project_id = 'prj' AND occurred_at >= '${iso(today - 2 * DAY)}' AND occurred_at <= '${iso(today - DAY)}' AND source = ANY('{flow_event}') AND search @@ 'set7'::tsquery ORDER BY occurred_at DESC, id DESC LIMIT 51`,
    "log search, 14 days": `SELECT id FROM ${table} WHERE project_id = 'prj' AND occurred_at >= '${iso(today - 14 * DAY)}' AND occurred_at <= '${iso(today + DAY)}' ORDER BY occurred_at DESC, id DESC LIMIT 51`
  })
  const costs: Array<PlanCost> = []
  for (const [partitioned, flat] of [[events("workflow_step_events"), events("step_events_flat")], [logs("log_entries"), logs("log_entries_flat")]] as const) {
    for (const [query, statement] of Object.entries(partitioned)) {
      const cost = yield* timed(statement)
      const before = yield* timed((flat as Record<string, string>)[query]!)
      costs.push({ query, ...cost, unpartitioned: { planningMs: before.planningMs, executionMs: before.executionMs } })
    }
  }
  // What retention leaves to row deletes once it dropped the expired spans: the default partition only.
  costs.push({
    query: "prune of what is left before the cut",
    ...yield* timed(`DELETE FROM log_entries WHERE occurred_at < '${iso(today - 14 * DAY)}' AND (tableoid, ctid) IN (
      SELECT tableoid, ctid FROM log_entries WHERE occurred_at < '${iso(today - 14 * DAY)}' LIMIT 10000)`),
    unpartitioned: undefined
  })
  return { migration, costs }
}).pipe(Effect.scoped)

export const formatPartitionPlans = ({ costs, migration }: {
  readonly costs: ReadonlyArray<PlanCost>
  readonly migration: { readonly rows: number; readonly ms: number }
}): string =>
  [
    `Migration 0036 on ${migration.rows} rows (both tables): ${(migration.ms / 1000).toFixed(1)} s, ${
      Math.round(migration.rows / (migration.ms / 1000))
    } rows/s`,
    `Plans on the partitioned tables (${RUNS * EVENTS_A_RUN} step events over 92 days, a partition a week; ${ENTRIES} log entries over 15 days, a partition a day), medians of 5`,
    `  ${"query".padEnd(38)} ${"partitions".padStart(10)}  ${"plan ms".padStart(8)} ${"run ms".padStart(8)}   unpartitioned plan / run ms`,
    ...costs.map((c) =>
      `  ${c.query.padEnd(38)} ${String(c.scanned).padStart(10)}  ${c.planningMs.toFixed(2).padStart(8)} ${c.executionMs.toFixed(2).padStart(8)}   ${
        c.unpartitioned === undefined ? "—" : `${c.unpartitioned.planningMs.toFixed(2)} / ${c.unpartitioned.executionMs.toFixed(2)}`
      }`
    )
  ].join("\n") + "\n"
