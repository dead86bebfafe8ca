/**
 * `log_entries` and `workflow_step_events` become range-partitioned by their time column (`occurred_at`,
 * `created_at`), a partition a UTC day for log entries and a week for step events, and a default partition for a
 * time without one (`TimePartitions.ts`), so retention drops a span instead of deleting its rows (docs/scale.md
 * "Partitioning the append-heavy tables").
 *
 * Each table is rebuilt with its rows: the old one renamed, the partitioned one made in its name with a partition
 * for every span the rows cover, the rows copied, the old table dropped, then the indexes and constraints built over
 * the partitions (once, after the copy). The retention jobs ready the coming days' partitions when a host starts.
 *
 * What changes with the partitioning:
 * - `workflow_step_events`' primary key becomes (id, created_at): a partitioned table's unique keys must hold the
 *   partition key. Nothing is lost: an event gets its id and its `created_at` once (`Engine.stamp`) and is
 *   written with both, so the same event written again is refused as before; no write looks an event up by id to
 *   dedupe it. Its foreign key to `workflow_executions` stays, `ON DELETE CASCADE` as before.
 * - Its B-tree on `created_at`, there only for retention's deletes, becomes a BRIN index: retention drops weeks now,
 *   and deletes by time only the rows the default partition holds; an event written pays one B-tree fewer.
 * - `log_entries` had no key and no foreign key; its indexes are rebuilt as they were.
 */
import { Effect, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { decodeRows } from "../Rows.ts"
import { DAY_MS, defaultPartition, PARTITION_COLUMN, partitionName, spanBounds, spanOf } from "../TimePartitions.ts"

const toDays = decodeRows("0036 days", Schema.Struct({ day: Schema.Number }))

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  for (const table of ["log_entries", "workflow_step_events"] as const) {
    const column = PARTITION_COLUMN[table]
    const old = `${table}_unpartitioned`
    yield* sql.unsafe(`ALTER TABLE ${table} RENAME TO ${old}`)
    yield* sql.unsafe(`CREATE TABLE ${table} (LIKE ${old} INCLUDING DEFAULTS) PARTITION BY RANGE (${column})`)
    yield* sql.unsafe(`CREATE TABLE ${defaultPartition(table)} PARTITION OF ${table} DEFAULT`)
    const days = yield* toDays(
      yield* sql.unsafe(`SELECT DISTINCT floor(extract(epoch FROM ${column}) / 86400)::int AS day FROM ${old}`)
    )
    for (const start of new Set(days.map(({ day }) => spanOf(table, day * DAY_MS)))) {
      yield* sql.unsafe(`CREATE TABLE ${partitionName(table, start)} PARTITION OF ${table} FOR VALUES ${spanBounds(table, start)}`)
    }
    yield* sql.unsafe(`INSERT INTO ${table} SELECT * FROM ${old}`)
    yield* sql.unsafe(`DROP TABLE ${old}`)
  }
  // As 0023 made them.
  yield* sql`CREATE INDEX log_entries_project_time ON log_entries (project_id, occurred_at DESC)`
  yield* sql`CREATE INDEX log_entries_search ON log_entries USING gin (search)`
  yield* sql`CREATE INDEX log_entries_occurred_at ON log_entries USING brin (occurred_at)`
  // As 0011 made them, but the key and the index retention used (above).
  yield* sql`ALTER TABLE workflow_step_events ADD PRIMARY KEY (id, created_at)`
  yield* sql`
    ALTER TABLE workflow_step_events ADD FOREIGN KEY (execution_id) REFERENCES workflow_executions (id) ON DELETE CASCADE`
  yield* sql`
    CREATE INDEX workflow_step_events_execution_idx
    ON workflow_step_events (execution_id, created_at DESC, seq DESC, id DESC)`
  yield* sql`CREATE INDEX workflow_step_events_created_idx ON workflow_step_events USING brin (created_at)`
  // Autovacuum analyzes the partitions in time but never a partitioned table itself: the planner's figures for both
  // levels from the start.
  yield* sql`ANALYZE log_entries, workflow_step_events`
})
