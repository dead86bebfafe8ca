/**
 * `TimePartitions` on PostgreSQL (migration 0036): `log_entries` and `workflow_step_events` are range-partitioned by
 * their time column, in spans of `SPAN_DAYS` (UTC days; weeks start on Monday) named `<table>_pYYYYMMDD` after the
 * span's first day, with a default partition `<table>_default` for the rows of any time without one, so an insert
 * never fails for want of a partition. Retention drops a span's partition (a catalogue change: no WAL per row, no
 * dead tuples for autovacuum) instead of deleting its rows.
 *
 * Both DDL statements here lock briefly and wait at most `LOCK_TIMEOUT` for their locks: while a lock request
 * waits behind a long query on the table, every statement after it queues too, so it gives up soon instead, with a
 * warning. The maintenance jobs run again the next day and ready two days ahead, so a span left unreadied or undropped
 * for a day costs nothing but a day's rows in the default partition or a day's longer keeping.
 */
import { READY_AHEAD_MS, TIME_PARTITIONED, type TimePartitionedTable, TimePartitions } from "@parley/core"
import { Clock, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { decodeRows } from "./Rows.ts"

export const DAY_MS = 24 * 60 * 60 * 1000
const LOCK_TIMEOUT = "1s"

/** The column each table is partitioned by. */
export const PARTITION_COLUMN: { readonly [T in TimePartitionedTable]: string } = {
  log_entries: "occurred_at",
  workflow_step_events: "created_at"
}

/**
 * Days a partition spans. Log entries a day: searches give a window, kept 14 days by default. Step events a week:
 * they are kept 90 days and read by execution, from the run's start on (`stepEventsSince`), so a read visits the
 * weeks since its run started; the joins over many runs (stats, erasure) still plan every partition, and 14 of them
 * instead of 92 keep that small, at the price of keeping an event up to a week past its 90 days.
 */
export const SPAN_DAYS: { readonly [T in TimePartitionedTable]: 1 | 7 } = { log_entries: 1, workflow_step_events: 7 }

/** The first instant (epoch ms) of the table's span holding `ms`: a UTC day, or the week from Monday. */
export const spanOf = (table: TimePartitionedTable, ms: number): number => {
  const day = Math.floor(ms / DAY_MS)
  // 1970-01-05, epoch day 4, was a Monday.
  return (SPAN_DAYS[table] === 1 ? day : day - (((day - 4) % 7) + 7) % 7) * DAY_MS
}

/** The partition of the span starting at `startMs`. */
export const partitionName = (table: TimePartitionedTable, startMs: number): string =>
  `${table}_p${new Date(startMs).toISOString().slice(0, 10).replaceAll("-", "")}`

export const defaultPartition = (table: TimePartitionedTable): string => `${table}_default`

/** The span's bounds as `FOR VALUES` takes them (DDL takes no parameters; both are ISO text made here). */
export const spanBounds = (table: TimePartitionedTable, startMs: number): string =>
  `FROM ('${new Date(startMs).toISOString()}') TO ('${new Date(startMs + SPAN_DAYS[table] * DAY_MS).toISOString()}')`

/** The span start a partition's name gives, for the names `partitionName` makes. */
const startOfPartition = (table: TimePartitionedTable, name: string): number | undefined => {
  const match = /^(\d{4})(\d{2})(\d{2})$/.exec(name.startsWith(`${table}_p`) ? name.slice(table.length + 2) : "")
  return match === null ? undefined : Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3]))
}

/** `effect` unless its table was too busy to lock within `LOCK_TIMEOUT`: then a warning, and the next run tries again. */
const unlessBusy = (action: string, partition: string) => <A>(effect: Effect.Effect<A, SqlError>) =>
  effect.pipe(Effect.catch((error) =>
    error.reason._tag === "LockTimeoutError"
      ? Effect.logWarning(`Time partitions: the table was busy, ${action} waits for the next maintenance`).pipe(
        Effect.annotateLogs({ partition })
      )
      : Effect.fail(error)
  ))

const toNames = decodeRows("time partitions", Schema.Struct({ name: Schema.String }))
const toDue = decodeRows("time partitions analyzed", Schema.Struct({ due: Schema.Boolean }))

/** A partitioned table's figures are gathered again when older than this (retention runs daily and at host starts). */
const ANALYZE_EVERY_HOURS = 20

/**
 * The PostgreSQL adapter over `sql`. `prepare` must not run for a span while rows of that span are being written:
 * an insert that routed its row to the default partition before the span's ATTACH committed fails the default
 * partition's new constraint ("violates partition constraint"). Retention readies spans two days ahead, and a
 * starting host readies the current ones before it serves (`readyCurrentSpans`), so that never meets traffic.
 */
const makeTimePartitions = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  const partitionsOf = (table: TimePartitionedTable) =>
    Effect.flatMap(
      sql`
        SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = ${table}::regclass`,
      toNames
    )

  /**
   * Readies one span: a table of its own, the span's rows moved in from the default partition, attached. ATTACH
   * locks the parent SHARE UPDATE EXCLUSIVE (inserts and reads go on) and the default partition ACCESS EXCLUSIVE,
   * taken first here and held through the move, so no row of the span lands there meanwhile. The advisory lock
   * makes hosts readying the same table take turns.
   */
  const attachSpan = (table: TimePartitionedTable, start: number) =>
    sql.withTransaction(Effect.gen(function*() {
      const name = partitionName(table, start)
      yield* sql`SELECT pg_advisory_xact_lock(hashtextextended(${`parley.time_partitions.${table}`}, 0))`
      if ((yield* partitionsOf(table)).some((p) => p.name === name)) return
      const column = PARTITION_COLUMN[table]
      yield* sql.unsafe(`SET LOCAL lock_timeout = '${LOCK_TIMEOUT}'`)
      yield* sql.unsafe(`LOCK TABLE ${defaultPartition(table)} IN ACCESS EXCLUSIVE MODE`)
      yield* sql.unsafe(`CREATE TABLE ${name} (LIKE ${table} INCLUDING DEFAULTS)`)
      yield* sql`
        WITH moved AS (
          DELETE FROM ${sql(defaultPartition(table))}
          WHERE ${sql(column)} >= ${new Date(start).toISOString()}::timestamptz
            AND ${sql(column)} < ${new Date(start + SPAN_DAYS[table] * DAY_MS).toISOString()}::timestamptz
          RETURNING *
        )
        INSERT INTO ${sql(name)} SELECT * FROM moved`
      yield* sql.unsafe(`ALTER TABLE ${table} ATTACH PARTITION ${name} FOR VALUES ${spanBounds(table, start)}`)
    })).pipe(unlessBusy("readying it", partitionName(table, start)))

  const dropPartition = (name: string) =>
    sql.withTransaction(Effect.gen(function*() {
      yield* sql.unsafe(`SET LOCAL lock_timeout = '${LOCK_TIMEOUT}'`)
      yield* sql.unsafe(`DROP TABLE IF EXISTS ${name}`)
    })).pipe(unlessBusy("dropping it", name))

  return TimePartitions.of({
    prepare: Effect.fnUntraced(function*(table: TimePartitionedTable, from: string, until: string) {
      const span = SPAN_DAYS[table] * DAY_MS
      for (let start = spanOf(table, Date.parse(from)); start <= spanOf(table, Date.parse(until)); start += span) {
        yield* attachSpan(table, start)
      }
    }, Effect.orDie),

    retire: Effect.fnUntraced(function*(table: TimePartitionedTable, before: string) {
      const cut = spanOf(table, Date.parse(before))
      let dropped = 0
      for (const { name } of yield* partitionsOf(table)) {
        const start = startOfPartition(table, name)
        if (start !== undefined && start + SPAN_DAYS[table] * DAY_MS <= cut) {
          yield* dropPartition(name)
          dropped++
        }
      }
      // Autovacuum analyzes each partition but never the partitioned table: its figures (joins over all the
      // partitions use them) are gathered here from a sample, when spans went or the last figures are older than
      // `ANALYZE_EVERY_HOURS`. Not at every host start (retention runs then too): a sample of every partition cost
      // PostgreSQL ~0.7 s of CPU each time (webhooks bench, 4eea6d1 against main).
      const [{ due }] = yield* toDue(yield* sql`
        SELECT coalesce(pg_stat_get_last_analyze_time(${table}::regclass) < now() - make_interval(hours => ${ANALYZE_EVERY_HOURS}), true) AS due`)
      if (dropped > 0 || due) yield* sql.unsafe(`ANALYZE ${table}`)
      return new Date(cut).toISOString()
    }, Effect.orDie)
  })
})

export const layerTimePartitions = Layer.effect(TimePartitions, makeTimePartitions)

/**
 * Readies every table's spans from now through `READY_AHEAD_MS`: run by a starting host after its migrations and
 * before it serves or works, so the rows it writes find their span (a fresh database, or one whose hosts were all
 * down past the spans retention readied) and no span is attached under its own rows' inserts.
 */
export const readyCurrentSpans = Effect.gen(function*() {
  const partitions = yield* makeTimePartitions
  const now = yield* Clock.currentTimeMillis
  for (const table of TIME_PARTITIONED) {
    yield* partitions.prepare(table, new Date(now).toISOString(), new Date(now + READY_AHEAD_MS).toISOString())
  }
})
