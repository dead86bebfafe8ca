/**
 * Time partitions on PostgreSQL: the port's conformance suite, migration 0036 on a database that already holds rows
 * (every row kept, each in its day's partition, every key and foreign key still refusing what it refused), and what
 * retention does to the catalogue and the plans.
 */
import { PgClient } from "@effect/sql-pg"
import {
  ExecutionsRepo,
  LogSearch,
  logEntry,
  StepEventsRepo,
  TimePartitions
} from "@parley/core"
import {
  givenProject,
  makeExecution,
  makeStepEvent,
  makeWorkflow,
  timePartitionsConformance,
  uniqueId
} from "@parley/core/testing/conformance"
import { assert, describe, it, layer } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Layer, Redacted } from "effect"
import { Migrator, SqlClient } from "effect/sql"
import { layerFromUrl, migrations } from "../src/Database.ts"
import { partitionName, spanOf } from "../src/TimePartitions.ts"
import { layerStorage } from "../src/Storage.ts"
import { emptyDatabase, layerTestDatabase } from "./pg.ts"

timePartitionsConformance("time partitions (postgres)", layerStorage.pipe(Layer.provideMerge(layerTestDatabase)))

const DAY = 24 * 60 * 60 * 1000
const HOUR = 60 * 60 * 1000
const iso = (ms: number) => new Date(ms).toISOString()

const migrateUpTo = (last: number) =>
  Migrator.make({})({
    loader: Effect.map(migrations, (all) => all.filter(([id]) => id <= last)),
    table: "parley_migrations"
  })

const rowsOf = (table: string) =>
  SqlClient.SqlClient.use((sql) =>
    sql.unsafe<{ readonly row: string }>(`SELECT to_jsonb(t)::text AS row FROM ${table} t ORDER BY 1`)
  ).pipe(Effect.map((rows) => rows.map((r) => r.row)))

/** The table's partitions by name, with the rows each holds. */
const partitionsOf = (table: string) =>
  SqlClient.SqlClient.use((sql) =>
    sql<{ readonly name: string; readonly rows: number }>`
      SELECT c.relname AS name, (xpath('/row/n/text()', query_to_xml(format('SELECT count(*) AS n FROM %I', c.relname), false, true, '')))[1]::text::int AS rows
      FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = ${table}::regclass ORDER BY 1`
  ).pipe(Effect.map((rows) => Object.fromEntries(rows.map((r) => [r.name, r.rows]))))

const explain = (statement: string) =>
  SqlClient.SqlClient.use((sql) => sql.unsafe<{ readonly "QUERY PLAN": string }>(`EXPLAIN ${statement}`)).pipe(
    Effect.map((rows) => rows.map((r) => r["QUERY PLAN"]).join("\n"))
  )

describe("a starting host", () => {
  // An insert routed to the default partition fails if its span is attached meanwhile: the spans a host writes into
  // are ready before it serves, not readied by its first maintenance under its own traffic.
  it.live("readies the current spans of both tables after its migrations", () =>
    Effect.gen(function*() {
      const url = yield* emptyDatabase
      const now = Date.now()
      const names = yield* Effect.gen(function*() {
        return { logs: Object.keys(yield* partitionsOf("log_entries")), events: Object.keys(yield* partitionsOf("workflow_step_events")) }
      }).pipe(Effect.provide(layerFromUrl(url)))
      for (const day of [now, now + DAY, now + 2 * DAY]) assert.include(names.logs, partitionName("log_entries", spanOf("log_entries", day)))
      assert.include(names.events, partitionName("workflow_step_events", spanOf("workflow_step_events", now)))
      assert.include(names.events, partitionName("workflow_step_events", spanOf("workflow_step_events", now + 2 * DAY)))
    }))
})

describe("migration 0036 on a database with rows", () => {
  it.live("rebuilds both tables partitioned by time, every row kept, every key still holding", () =>
    Effect.gen(function*() {
      const url = yield* emptyDatabase
      const environment = layerStorage.pipe(Layer.provideMerge(PgClient.layer({ url: Redacted.make(url), maxConnections: 4 })))
      yield* Effect.gen(function*() {
        yield* migrateUpTo(35)
        const project = yield* givenProject()
        const workflow = makeWorkflow(project.id)
        // The workflow as 0035's schema holds it (today's repository also writes 0042's references).
        yield* SqlClient.SqlClient.use((sql) =>
          sql`INSERT INTO workflows ${sql.insert({
            id: workflow.id,
            project_id: workflow.project_id,
            name: workflow.name,
            slug: workflow.slug,
            description: workflow.description,
            status: workflow.status,
            lock_version: workflow.lock_version,
            message_debounce_seconds: workflow.message_debounce_seconds,
            agent_default_tools_version: workflow.agent_default_tools_version,
            inbound_message_read_mode: workflow.inbound_message_read_mode,
            created_at: workflow.created_at,
            updated_at: workflow.updated_at,
            created_by: JSON.stringify(workflow.created_by),
            definition: JSON.stringify(workflow.definition)
          })}`
        )
        const execution = makeExecution(workflow)
        const other = makeExecution(workflow)
        assert.isTrue(yield* (yield* ExecutionsRepo).insert(execution))
        assert.isTrue(yield* (yield* ExecutionsRepo).insert(other))
        const day = Date.UTC(2026, 10, 20)
        const times = [day - 10 * DAY + HOUR, day - 3 * DAY + HOUR, day - 3 * DAY + 2 * HOUR, day - DAY, day + 5 * HOUR, day + DAY - 1]
        const events = times.map((t, seq) => makeStepEvent(execution, { seq, created_at: iso(t) }))
        yield* (yield* StepEventsRepo).append([...events, makeStepEvent(other, { seq: 0, created_at: iso(day) })])
        yield* (yield* LogSearch).append(times.map((t) =>
          logEntry({
            id: uniqueId("log"),
            project_id: project.id,
            source: "flow_event",
            occurred_at: iso(t),
            ingested_at: iso(t),
            problem: false,
            message: "step entered",
            flow_execution_id: execution.id,
            payload: { at: t }
          })
        ))
        const before = { logs: yield* rowsOf("log_entries"), events: yield* rowsOf("workflow_step_events") }

        yield* migrateUpTo(36)
        assert.deepStrictEqual(yield* rowsOf("log_entries"), before.logs, "every entry, every column")
        assert.deepStrictEqual(yield* rowsOf("workflow_step_events"), before.events, "every event, every column")
        // Log entries a day a partition, step events a week from Monday.
        assert.deepStrictEqual(yield* partitionsOf("log_entries"), {
          log_entries_default: 0,
          log_entries_p20261110: 1,
          log_entries_p20261117: 2,
          log_entries_p20261119: 1,
          log_entries_p20261120: 2
        })
        assert.deepStrictEqual(yield* partitionsOf("workflow_step_events"), {
          workflow_step_events_default: 0,
          workflow_step_events_p20261109: 1,
          workflow_step_events_p20261116: 6
        })

        // The keys refuse what they refused: the same event again, an event of no execution.
        const stepEvents = yield* StepEventsRepo
        assert.isTrue(Exit.isFailure(yield* Effect.exit(stepEvents.append([events[0]!]))), "the same event twice")
        assert.isTrue(
          Exit.isFailure(yield* Effect.exit(stepEvents.append([makeStepEvent({ id: "exe_missing", project_id: project.id })]))),
          "an event of a missing execution"
        )
        // A week without a partition lands in the default one until retention readies it, which moves it in.
        const late = makeStepEvent(execution, { seq: 9, created_at: iso(day + 4 * DAY + HOUR) })
        yield* stepEvents.append([late])
        assert.strictEqual((yield* partitionsOf("workflow_step_events")).workflow_step_events_default, 1)
        const partitions = yield* TimePartitions
        yield* partitions.prepare("workflow_step_events", iso(day + 4 * DAY), iso(day + 11 * DAY))
        const readied = yield* partitionsOf("workflow_step_events")
        assert.strictEqual(readied.workflow_step_events_default, 0)
        assert.strictEqual(readied.workflow_step_events_p20261123, 1)
        assert.strictEqual(readied.workflow_step_events_p20261130, 0)

        // A search keeps to the days of its window.
        const window = yield* explain(`
          SELECT id FROM log_entries WHERE project_id = '${project.id}'
            AND occurred_at >= '${iso(day - 3 * DAY)}' AND occurred_at <= '${iso(day - 3 * DAY + 10 * HOUR)}'`)
        assert.include(window, "log_entries_p20261117")
        assert.notInclude(window, "log_entries_p20261120")
        assert.notInclude(window, "log_entries_default")

        // Retention drops the spans wholly before its cut (the start of the span holding its time); deleting an
        // execution deletes its events as before.
        assert.strictEqual(yield* partitions.retire("workflow_step_events", iso(day + 12 * HOUR)), iso(Date.UTC(2026, 10, 16)))
        assert.deepStrictEqual(Object.keys(yield* partitionsOf("workflow_step_events")), [
          "workflow_step_events_default",
          "workflow_step_events_p20261116",
          "workflow_step_events_p20261123",
          "workflow_step_events_p20261130"
        ])
        assert.deepStrictEqual((yield* stepEvents.latest(execution, 10)).map((e) => e.seq), [9, 5, 4, 3, 2, 1])
        yield* (yield* LogSearch).append(Array.from({ length: 5 }, () =>
          logEntry({
            id: uniqueId("log"),
            project_id: project.id,
            source: "external_api_log",
            occurred_at: iso(day + 6 * HOUR),
            ingested_at: iso(day + 6 * HOUR),
            problem: false,
            message: "written after 0036"
          })
        ))
        assert.strictEqual(yield* partitions.retire("log_entries", iso(day + 12 * HOUR)), iso(day))
        assert.deepStrictEqual(Object.keys(yield* partitionsOf("log_entries")), [
          "log_entries_default",
          "log_entries_p20261120"
        ])
        // Retiring gathers the partitioned table's figures (0036 gathered them before these rows), which autovacuum
        // never does.
        const analyzed = yield* SqlClient.SqlClient.use((sql) =>
          sql<{ readonly n: number }>`
            SELECT count(*)::int AS n FROM pg_stats WHERE tablename = 'log_entries' AND attname = 'message'
              AND 'written after 0036' = ANY(most_common_vals::text::text[])`
        )
        assert.strictEqual(analyzed[0]!.n, 1, "the parent's statistics describe the rows left")
        // Retention also runs at every host start: with no span gone and fresh figures, it does not sample again.
        const lastAnalyzed = SqlClient.SqlClient.use((sql) =>
          sql<{ readonly at: string }>`SELECT pg_stat_get_last_analyze_time('log_entries'::regclass)::text AS at`
        )
        const analyzedAt = (yield* lastAnalyzed)[0]!.at
        assert.isNotNull(analyzedAt)
        assert.strictEqual(yield* partitions.retire("log_entries", iso(day + 12 * HOUR)), iso(day))
        assert.strictEqual((yield* lastAnalyzed)[0]!.at, analyzedAt, "not analyzed again within the day")
        // What is left for row-by-row pruning before the cut is in the default partition only.
        const prune = yield* explain(`DELETE FROM log_entries WHERE occurred_at < '${iso(day)}' AND (tableoid, ctid) IN (
          SELECT tableoid, ctid FROM log_entries WHERE occurred_at < '${iso(day)}' LIMIT 10000)`)
        assert.include(prune, "log_entries_default")
        assert.notInclude(prune, "log_entries_p20261120")
        yield* SqlClient.SqlClient.use((sql) => sql`DELETE FROM workflow_executions WHERE id = ${other.id}`)
        assert.deepStrictEqual(yield* stepEvents.latest(other, 10), [])
      }).pipe(Effect.provide(environment))
    }).pipe(Effect.scoped), 120_000)
})

layer(layerStorage.pipe(Layer.provideMerge(layerTestDatabase)), { excludeTestServices: true })("a busy table", (it) => {
  it.effect("readying or dropping a partition gives up after its lock timeout, and is done once the table is free", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const partitions = yield* TimePartitions
      const day = Date.UTC(1977, 4, 2)
      const names = Effect.map(partitionsOf("log_entries"), Object.keys)
      /** A reader holding the table (its partitions too) in an open transaction while `effect` runs. */
      const whileRead = <A>(effect: Effect.Effect<A>) =>
        Effect.gen(function*() {
          const reading = yield* Deferred.make<void>()
          const done = yield* Deferred.make<void>()
          const reader = yield* sql.withTransaction(Effect.gen(function*() {
            yield* sql`SELECT count(*) FROM log_entries`
            yield* Deferred.succeed(reading, undefined)
            yield* Deferred.await(done)
          })).pipe(Effect.orDie, Effect.forkChild)
          yield* Deferred.await(reading)
          const a = yield* effect
          yield* Deferred.succeed(done, undefined)
          yield* Fiber.join(reader)
          return a
        })
      yield* whileRead(partitions.prepare("log_entries", iso(day), iso(day)))
      assert.notInclude(yield* names, "log_entries_p19770502", "not readied while the table was read")
      yield* partitions.prepare("log_entries", iso(day), iso(day))
      assert.include(yield* names, "log_entries_p19770502")
      assert.strictEqual(yield* whileRead(partitions.retire("log_entries", iso(day + DAY))), iso(day + DAY))
      assert.include(yield* names, "log_entries_p19770502", "not dropped while the table was read")
      yield* partitions.retire("log_entries", iso(day + DAY))
      assert.notInclude(yield* names, "log_entries_p19770502")
    }), 60_000)
})
