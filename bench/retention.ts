/**
 * Retention of the append-heavy tables partitioned by day (migration 0036): what deleting a day's rows cost (as the
 * retention jobs did before, 10,000 a statement through the adapters' `prune`, and the VACUUM that must follow
 * to reuse the space) against dropping the day's partition (`TimePartitions.retire`), in time and WAL bytes, on a
 * durable embedded PostgreSQL (fsync and synchronous commit on, as `npm start` runs it).
 *
 * The rows are copies of what the engine writes: one chain run (start + `CHAIN` set_variable) is run through a
 * real host, then its step events and log entries are copied into partitions of their own (a day of log entries, a
 * week of step events), spread over the span in time order, `RETENTION_ROWS` a partition (100,000 by default; a
 * quarter of that for the second one dropped, to show a drop does not grow with its rows). A CHECKPOINT comes before each measurement: the rows retention removes are weeks
 * old, their pages written out long ago, so the first change of each page writes its full image to the WAL.
 *
 * The day at the envelope's rate: the figures per row times the rows a day at `RETENTION_RATE` transitions a
 * second (404 by default: the one-host envelope in docs/scale.md), with the step events and log entries a
 * transition writes as this run counted them.
 *
 *   BENCH_ONLY=retention npm run bench
 *   RETENTION_ROWS=500000 RETENTION_RATE=1000 BENCH_ONLY=retention npm run bench
 */
import { LogSearch, StepEventsRepo, type TimePartitionedTable, TimePartitions, UpstreamSettings } from "@parley/core"
import { partitionName, SPAN_DAYS, spanOf } from "@parley/store-pg"
import { Context, Effect, Option, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { performance } from "node:perf_hooks"
import { chainDefinition } from "./executions.ts"
import { startBenchHost } from "./host.ts"

const KEY = "pk_bench_retention_0123456789abcdef"
const CHAIN = 50
const DAY = 24 * 60 * 60 * 1000
const BATCH = 10_000

export interface RetentionOptions {
  /** Rows a day for each table. */
  readonly rows: number
  /** Step transitions a second the day's rows are extrapolated at. */
  readonly rate: number
}

export const retentionOptionsFromEnv = (): RetentionOptions => ({
  rows: Number(process.env.RETENTION_ROWS ?? 100_000),
  rate: Number(process.env.RETENTION_RATE ?? 404)
})

interface Cost {
  readonly rows: number
  readonly ms: number
  readonly walBytes: number
}

interface TableRetention {
  readonly table: TimePartitionedTable
  /** Rows this table gets per step transition (counted on the chain run). */
  readonly rowsPerTransition: number
  readonly deleted: Cost
  readonly vacuum: Cost
  readonly dropped: Cost
  readonly droppedQuarter: Cost
}

export interface RetentionBenchResult {
  readonly options: RetentionOptions
  readonly tables: ReadonlyArray<TableRetention>
}

const COLUMNS: { readonly [T in TimePartitionedTable]: { readonly time: string; readonly copy: string; readonly of: string } } = {
  workflow_step_events: {
    time: "created_at",
    copy: "project_id, execution_id, seq, event_type, direction, edge_label, payload, step",
    of: "execution_id = $1"
  },
  log_entries: {
    time: "occurred_at",
    copy:
      "project_id, source, ingested_at, level, problem, message, status, resource_type, resource_id, http_method, endpoint, api_key_id, api_key_name, response_status, response_time_ms, event_type, field, event, message_type, phone_number_id, display_phone_number, flow_name, flow_id, flow_execution_id, flow_event_id, step_identifier, step_type, webhook_id, webhook_url, error_class, error_message, attributes, payload, search_text, search",
    of: "flow_execution_id = $1"
  }
}

export const benchRetention = (options: RetentionOptions) =>
  Effect.gen(function*() {
    const { context, url } = yield* startBenchHost(KEY, { durable: true })
    const sql = Context.get(context, SqlClient.SqlClient)
    const partitions = Context.get(context, TimePartitions)
    const prune: { readonly [T in TimePartitionedTable]: (before: string, limit: number) => Effect.Effect<number> } = {
      workflow_step_events: Context.get(context, StepEventsRepo).prune,
      log_entries: Context.get(context, LogSearch).prune
    }
    const call = (method: string, path: string, body?: unknown) =>
      Effect.promise(async () => {
        const res = await fetch(`${url}${path}`, {
          method,
          headers: { "x-api-key": KEY, "content-type": "application/json" },
          ...(body === undefined ? {} : { body: JSON.stringify(body) })
        })
        return { status: res.status, body: await res.json().catch(() => undefined) as any }
      })
    const number = Option.getOrThrow(Context.get(context, UpstreamSettings).simulatedNumber)
    const connected = yield* call("POST", "/platform/v1/msg/phone_numbers", {
      msg_config: { phone_number_id: number.phoneNumberId, business_account_id: number.businessAccountId, access_token: Redacted.value(number.accessToken) }
    })
    if (connected.status !== 201) return yield* Effect.die(new Error(`connect: ${connected.status} ${JSON.stringify(connected.body)}`))
    const created = yield* call("POST", "/platform/v1/workflows", { workflow: { name: "Chain", status: "active", definition: chainDefinition(CHAIN) } })
    if (created.status !== 201) return yield* Effect.die(new Error(`workflow: ${created.status}`))
    const started = yield* call("POST", `/platform/v1/workflows/${created.body.data.id}/executions`, {
      workflow_execution: { phone_number: "+15550001234", phone_number_id: number.phoneNumberId }
    })
    if (started.status !== 201 && started.status !== 202) return yield* Effect.die(new Error(`start: ${started.status} ${JSON.stringify(started.body)}`))
    const run = started.body.data.id as string
    const count = (query: string, params: ReadonlyArray<unknown> = []) =>
      Effect.map(Effect.orDie(sql.unsafe<{ readonly n: string }>(query, params)), (rows) => Number(rows[0]!.n))
    const today = Math.floor(Date.now() / DAY) * DAY
    const ofRun = (table: TimePartitionedTable) =>
      count(`SELECT count(*) AS n FROM ${table} WHERE ${COLUMNS[table].of} AND ${COLUMNS[table].time} >= $2`, [run, new Date(today).toISOString()])
    const eventsOfRun = ofRun("workflow_step_events")
    const entriesOfRun = ofRun("log_entries")
    // The run ends, and the log recorder's batch with its step events' entries is written.
    for (let i = 0; ; i++) {
      const ended = yield* count(`SELECT count(*) AS n FROM workflow_executions WHERE id = $1 AND status = 'ended'`, [run])
      if (ended === 1 && (yield* entriesOfRun) >= (yield* eventsOfRun)) break
      if (i > 600) return yield* Effect.die(new Error("the chain run did not end with its log entries"))
      yield* Effect.sleep("100 millis")
    }

    const wal = Effect.map(
      Effect.orDie(sql<{ readonly lsn: string }>`SELECT pg_current_wal_lsn()::text AS lsn`),
      (rows) => rows[0]!.lsn
    )
    const measure = <A>(rows: number, effect: Effect.Effect<A>) =>
      Effect.gen(function*() {
        yield* Effect.orDie(sql`CHECKPOINT`)
        const from = yield* wal
        const t = performance.now()
        yield* effect
        const ms = performance.now() - t
        const to = yield* wal
        const bytes = yield* count(`SELECT pg_wal_lsn_diff($1::pg_lsn, $2::pg_lsn) AS n`, [to, from])
        return { rows, ms, walBytes: bytes }
      })

    // Three spans (days of log entries, weeks of step events) ending a span before today's: the first two dropped
    // whole (`rows` and a quarter of it), the last deleted by rows.
    const spansOf = (table: TimePartitionedTable) => {
      const span = SPAN_DAYS[table] * DAY
      const last = spanOf(table, today) - 2 * span
      return [last - 2 * span, last - span, last]
    }
    const fill = (table: TimePartitionedTable, start: number, rows: number) => {
      const { copy, of, time } = COLUMNS[table]
      return Effect.orDie(sql.unsafe(
        `INSERT INTO ${table} (id, ${time}, ${copy})
         SELECT gen_random_uuid()::text, $2::timestamptz + ((g * t.k + t.i) * $3::float8) * interval '1 millisecond', ${copy.split(", ").map((c) => `t.${c}`).join(", ")}
         FROM (SELECT *, row_number() OVER () - 1 AS i, count(*) OVER () AS k FROM ${table} WHERE ${of} AND ${time} >= $5) t,
           generate_series(0, ceil($4::float8 / (SELECT count(*) FROM ${table} WHERE ${of} AND ${time} >= $5))::int - 1) g
         WHERE g * t.k + t.i < $4
         ORDER BY 2`,
        [run, new Date(start).toISOString(), (SPAN_DAYS[table] * DAY) / rows, rows, new Date(today).toISOString()]
      ))
    }

    const tables: Array<TableRetention> = []
    for (const table of ["workflow_step_events", "log_entries"] as const) {
      const [first, second, third] = spansOf(table) as [number, number, number]
      yield* partitions.prepare(table, new Date(first).toISOString(), new Date(third).toISOString())
      yield* fill(table, first, options.rows)
      yield* fill(table, second, Math.floor(options.rows / 4))
      yield* fill(table, third, options.rows)
      yield* Effect.orDie(sql.unsafe(`VACUUM ANALYZE ${table}`))
      const dropped = yield* measure(options.rows, partitions.retire(table, new Date(second).toISOString()))
      const droppedQuarter = yield* measure(Math.floor(options.rows / 4), partitions.retire(table, new Date(third).toISOString()))
      const before = new Date(third + SPAN_DAYS[table] * DAY).toISOString()
      const deleted = yield* measure(options.rows, Effect.gen(function*() {
        while ((yield* prune[table](before, BATCH)) === BATCH) {
          // 10,000 a statement, as the jobs did.
        }
      }))
      const vacuum = yield* measure(options.rows, Effect.orDie(sql.unsafe(`VACUUM ${partitionName(table, third)}`)))
      const perRun = table === "workflow_step_events" ? yield* eventsOfRun : yield* entriesOfRun
      tables.push({ table, rowsPerTransition: perRun / (CHAIN + 1), deleted, vacuum, dropped, droppedQuarter })
    }
    return { options, tables }
  }).pipe(Effect.scoped)

const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`

export const formatRetentionBench = (r: RetentionBenchResult): string => {
  const lines = [
    `Retention: DELETE (10,000 rows a statement, then VACUUM) against DROP of a partition (a day of log entries, a week of step events)`,
    `(durable embedded PostgreSQL, CHECKPOINT before each; ${r.options.rows.toLocaleString("en-US")} rows a partition copied from a chain run)`
  ]
  for (const t of r.tables) {
    const perDay = t.rowsPerTransition * r.options.rate * 86_400
    const scale = (c: Cost) => perDay / c.rows
    lines.push(
      `  ${t.table} (${t.rowsPerTransition.toFixed(2)} rows a transition)`,
      `    DELETE ${t.deleted.rows.toLocaleString("en-US")} rows   ${t.deleted.ms.toFixed(0).padStart(7)} ms  ${mb(t.deleted.walBytes).padStart(9)} WAL` +
        `   (+ VACUUM ${t.vacuum.ms.toFixed(0)} ms, ${mb(t.vacuum.walBytes)} WAL)`,
      `    DROP   ${t.dropped.rows.toLocaleString("en-US")} rows   ${t.dropped.ms.toFixed(1).padStart(7)} ms  ${(t.dropped.walBytes / 1024).toFixed(1).padStart(6)} KB WAL` +
        `   (a partition of ${t.droppedQuarter.rows.toLocaleString("en-US")}: ${t.droppedQuarter.ms.toFixed(1)} ms, ${(t.droppedQuarter.walBytes / 1024).toFixed(1)} KB WAL)`,
      `    a day at ${r.options.rate} transitions/s (${Math.round(perDay).toLocaleString("en-US")} rows): DELETE + VACUUM ~${
        ((t.deleted.ms + t.vacuum.ms) * scale(t.deleted) / 60_000).toFixed(1)
      } min and ~${mb((t.deleted.walBytes + t.vacuum.walBytes) * scale(t.deleted))} WAL; DROP of its partition (${
        t.table === "log_entries" ? "the day's" : "the week's, 7 days of rows"
      }) ~${t.dropped.ms.toFixed(0)} ms and ~${(t.dropped.walBytes / 1024).toFixed(0)} KB WAL`
    )
  }
  return lines.join("\n") + "\n"
}
