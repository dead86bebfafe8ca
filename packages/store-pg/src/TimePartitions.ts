/**
 * `TimePartitions` on PostgreSQL (migration 0036): `log_entries` and `workflow_step_events` are range-partitioned by
 * their time column, a partition a UTC day named `<table>_pYYYYMMDD`, with a default partition `<table>_default`
 * for the rows of any day without one, so an insert never fails for want of a partition. Retention drops a day's
 * partition (a catalogue change: no WAL per row, no dead tuples for autovacuum) instead of deleting its rows.
 *
 * Both DDL statements here lock briefly and wait at most `LOCK_TIMEOUT` for their locks (a long query on the
 * table must not queue every insert behind them): the maintenance job runs again the next day, and readies two days
 * ahead, so a day's attempt lost to a busy table costs nothing.
 */
import { type TimePartitionedTable, TimePartitions } from "@parley/core"
import { Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { decodeRows } from "./Rows.ts"

export const DAY_MS = 24 * 60 * 60 * 1000
const LOCK_TIMEOUT = "5s"

/** The column each table is partitioned by. */
export const PARTITION_COLUMN: { readonly [T in TimePartitionedTable]: string } = {
  log_entries: "occurred_at",
  workflow_step_events: "created_at"
}

/** The UTC day holding `ms`, as the epoch ms of its start. */
export const dayOf = (ms: number): number => Math.floor(ms / DAY_MS) * DAY_MS

/** The partition of the day starting at `dayMs`. */
export const partitionName = (table: TimePartitionedTable, dayMs: number): string =>
  `${table}_p${new Date(dayMs).toISOString().slice(0, 10).replaceAll("-", "")}`

export const defaultPartition = (table: TimePartitionedTable): string => `${table}_default`

/** The day's bounds as `FOR VALUES` takes them (DDL takes no parameters; both are ISO text made here). */
export const dayBounds = (dayMs: number): string =>
  `FROM ('${new Date(dayMs).toISOString()}') TO ('${new Date(dayMs + DAY_MS).toISOString()}')`

/** The day a partition's name gives, for the names `partitionName` makes. */
const dayOfPartition = (table: TimePartitionedTable, name: string): number | undefined => {
  const match = /^(\d{4})(\d{2})(\d{2})$/.exec(name.startsWith(`${table}_p`) ? name.slice(table.length + 2) : "")
  return match === null ? undefined : Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3]))
}

const toNames = decodeRows("time partitions", Schema.Struct({ name: Schema.String }))

export const layerTimePartitions = Layer.effect(
  TimePartitions,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const partitionsOf = (table: TimePartitionedTable) =>
      Effect.flatMap(
        sql`
          SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
          WHERE i.inhparent = ${table}::regclass`,
        toNames
      )

    /**
     * Readies one day: a table of its own, the day's rows moved in from the default partition, attached. ATTACH
     * locks the parent SHARE UPDATE EXCLUSIVE (inserts and reads go on) and the default partition ACCESS EXCLUSIVE,
     * taken first here and held through the move, so no row of the day lands there meanwhile. The advisory lock
     * makes hosts readying the same table take turns.
     */
    const attachDay = (table: TimePartitionedTable, dayMs: number) =>
      sql.withTransaction(Effect.gen(function*() {
        const name = partitionName(table, dayMs)
        yield* sql`SELECT pg_advisory_xact_lock(hashtextextended(${`parley.time_partitions.${table}`}, 0))`
        if ((yield* partitionsOf(table)).some((p) => p.name === name)) return
        const column = PARTITION_COLUMN[table]
        yield* sql.unsafe(`SET LOCAL lock_timeout = '${LOCK_TIMEOUT}'`)
        yield* sql.unsafe(`LOCK TABLE ${defaultPartition(table)} IN ACCESS EXCLUSIVE MODE`)
        yield* sql.unsafe(`CREATE TABLE ${name} (LIKE ${table} INCLUDING DEFAULTS)`)
        yield* sql`
          WITH moved AS (
            DELETE FROM ${sql(defaultPartition(table))}
            WHERE ${sql(column)} >= ${new Date(dayMs).toISOString()}::timestamptz
              AND ${sql(column)} < ${new Date(dayMs + DAY_MS).toISOString()}::timestamptz
            RETURNING *
          )
          INSERT INTO ${sql(name)} SELECT * FROM moved`
        yield* sql.unsafe(`ALTER TABLE ${table} ATTACH PARTITION ${name} FOR VALUES ${dayBounds(dayMs)}`)
      }))

    const dropPartition = (name: string) =>
      sql.withTransaction(Effect.gen(function*() {
        yield* sql.unsafe(`SET LOCAL lock_timeout = '${LOCK_TIMEOUT}'`)
        yield* sql.unsafe(`DROP TABLE IF EXISTS ${name}`)
      }))

    return TimePartitions.of({
      prepare: Effect.fnUntraced(function*(table: TimePartitionedTable, from: string, until: string) {
        for (let day = dayOf(Date.parse(from)); day <= dayOf(Date.parse(until)); day += DAY_MS) {
          yield* attachDay(table, day)
        }
      }, Effect.orDie),

      retire: Effect.fnUntraced(function*(table: TimePartitionedTable, before: string) {
        const cut = dayOf(Date.parse(before))
        for (const { name } of yield* partitionsOf(table)) {
          const day = dayOfPartition(table, name)
          if (day !== undefined && day + DAY_MS <= cut) yield* dropPartition(name)
        }
        return new Date(cut).toISOString()
      }, Effect.orDie)
    })
  })
)
