/**
 * What a read of one run's step events costs with a year of weekly partitions (0036): retention keeps 90 days by
 * default, but an operator may keep a year, and every partition a read cannot rule out is planned, locked and
 * probed. `WEEKS` weekly partitions back from this week hold `RUNS_A_WEEK` runs each (30 events a run); the run read
 * started this week. Each statement `StepEventsRepo` sends for the reads the execution GET and the events list make
 * is captured as sent and `EXPLAIN ANALYZE`d with its parameters twice: as it is (bounded by the run's start), and
 * with that bound made `-infinity`, which reaches every partition as the statements did before the bound (the
 * baseline, same run); so is the read of one of the run's events by its id (`find`, an id the engine's way, UUIDv7),
 * bounded by the day either side of its id's time, and the latest events of a run that ended long ago, bounded by its
 * start and its end, each against the same statement with those bounds made infinite. Then
 * the whole call, as the repository runs it (prepared statements, plan cache and all):
 * `latest(run, 100)` (what the GET reads) for the run, against the same call for the run as if it had started before
 * every partition. Last, the statements that join runs to their events (a workflow's node flow and split counts, a
 * contact's events erased, in a rolled back transaction) for a workflow and a contact whose runs started this week,
 * against the same text with the day of skew made a century (every partition in reach).
 *
 *   BENCH_ONLY=stepevents npm run bench          (STEP_EVENT_WEEKS, default 52)
 */
import { PgClient } from "@effect/sql-pg"
import {
  ExecutionsErasure,
  Ids,
  STEP_EVENT_SKEW_MS,
  StepEventsRepo,
  type StepEventsOf,
  stepEventSpan,
  stepEventsSince,
  stepEventsUntil,
  TimePartitions,
  WorkflowStatsRepo
} from "@parley/core"
import { EmbeddedPostgres, layerStorage, migrate } from "@parley/store-pg"
import { Context, Effect, Layer } from "effect"
import { SqlClient, Statement } from "effect/sql"
import { performance } from "node:perf_hooks"
import { explained, median, RolledBack } from "./plans.ts"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"

const DAY = 24 * 60 * 60 * 1000
const WEEK = 7 * DAY
const RUNS_A_WEEK = 100
const EVENTS_A_RUN = 30
const SAMPLES = 9
const CALLS = 1_000

export interface PlanFigures {
  /** Partitions the plan names (planned and locked), and those whose scans ran. */
  readonly partitions: number
  readonly scanned: number
  readonly planningMs: number
  readonly executionMs: number
}

export interface StatementPlan {
  readonly read: string
  readonly bounded: PlanFigures
  readonly unbounded: PlanFigures
}

export interface StepEventPlans {
  readonly weeks: number
  readonly partitions: number
  readonly events: number
  readonly plans: ReadonlyArray<StatementPlan>
  /** µs per `latest(run, 100)` call: bounded, as if unbounded, and the statement before the bound (rows not decoded). */
  readonly call: { readonly boundedUs: number; readonly unboundedUs: number; readonly beforeUs: number }
}


export const benchStepEventPlans = (options: { readonly weeks: number }) =>
  Effect.gen(function*() {
    const dataDir = yield* Effect.acquireRelease(
      Effect.sync(() => Fs.mkdtempSync(Path.join(Os.tmpdir(), "parley-bench-stepevents-"))),
      (dir) => Effect.sync(() => Fs.rmSync(dir, { recursive: true, force: true }))
    )
    const pg = yield* EmbeddedPostgres.start({ dataDir, throwaway: true })
    const client = yield* Layer.build(PgClient.layer({ url: pg.url, maxConnections: 2 })).pipe(Effect.orDie)
    const sql = Context.get(client, SqlClient.SqlClient)
    const run = (statement: string) => Effect.orDie(sql.unsafe(statement))
    yield* Effect.orDie(Effect.provideContext(migrate, client))
    const context = yield* Layer.build(layerStorage.pipe(Layer.provide(Layer.succeedContext(client))))
    const events = Context.get(context, StepEventsRepo)
    const now = Date.now()
    const iso = (ms: number) => new Date(ms).toISOString()
    yield* Context.get(context, TimePartitions).prepare("workflow_step_events", iso(now - options.weeks * WEEK), iso(now + 2 * DAY))

    // Runs `RUNS_A_WEEK` a week back to `weeks` ago, the newest first ('exe0' started an hour ago), each with its events
    // spread over the hour after its start.
    const runs = RUNS_A_WEEK * (options.weeks + 1)
    yield* run(`INSERT INTO projects (id, name, disabled, created_at, updated_at) VALUES ('prj', 'Plans', false, now(), now())`)
    yield* run(`
      INSERT INTO workflows (id, project_id, name, slug, status, lock_version, inbound_message_read_mode, created_at,
        updated_at, created_by, definition)
      VALUES ('wf', 'prj', 'Plans', 'plans', 'active', 0, 'disabled', now(), now(), '{}', '{"nodes":[],"edges":[]}')`)
    yield* run(`
      INSERT INTO workflow_executions (id, project_id, workflow_id, workflow_name, revision_id, tracking_id, status,
        trigger_type, observer, call_depth, started_at, last_event_at, current_node, execution_context, step_seq, state_version)
      SELECT 'exe' || i, 'prj', 'wf', 'Plans', 'rev', 'trk' || i, 'ended', 'api_call', false, 0,
        '${iso(now)}'::timestamptz - interval '1 hour' - i * interval '${WEEK / RUNS_A_WEEK / 1000} seconds', now(), 'start', '{}', 0, 0
      FROM generate_series(0, ${runs - 1}) i`)
    yield* run(`
      INSERT INTO workflow_step_events (id, project_id, execution_id, seq, event_type, created_at, payload, step)
      SELECT gen_random_uuid()::text, 'prj', x.id, s, CASE WHEN s % 2 = 0 THEN 'step_entered' ELSE 'step_completed' END,
        x.started_at + s * interval '1 minute', '{"node_type":"set_variable"}', jsonb_build_object('identifier', 'set' || s)
      FROM workflow_executions x, generate_series(0, ${EVENTS_A_RUN - 1}) s`)
    // One event of 'exe0' with an id the engine's way (UUIDv7, minted now: its events are an hour old), for `find`.
    const eventId = yield* Context.get(yield* Layer.build(Ids.layer), Ids).uuid
    yield* run(`UPDATE workflow_step_events SET id = '${eventId}' WHERE id = (
      SELECT id FROM workflow_step_events WHERE execution_id = 'exe0' ORDER BY created_at LIMIT 1)`)
    yield* run(`VACUUM ANALYZE`)
    const counted = yield* Effect.orDie(sql<{ readonly partitions: number }>`
      SELECT count(*)::int AS partitions FROM pg_inherits WHERE inhparent = 'workflow_step_events'::regclass`)
    const partitions = counted[0]!.partitions
    const [started] = yield* Effect.orDie(sql<{ readonly started_at: Date }>`SELECT started_at FROM workflow_executions WHERE id = 'exe0'`)
    const target: StepEventsOf = { id: "exe0", started_at: started!.started_at.toISOString(), status: "running", ended_at: null }
    // The same run as if it had started before every partition: the bound rules none out.
    const beforeAll: StepEventsOf = { ...target, started_at: iso(now - (options.weeks + 2) * WEEK) }
    // A run that started and ended (an hour later, its events in between) `weeks * 3 / 4` weeks ago.
    const oldRun = `exe${Math.floor(options.weeks * 3 / 4) * RUNS_A_WEEK}`
    const [oldStart] = yield* Effect.orDie(sql<{ readonly started_at: Date }>`SELECT started_at FROM workflow_executions WHERE id = ${oldRun}`)
    const ended: StepEventsOf = {
      id: oldRun,
      started_at: oldStart!.started_at.toISOString(),
      status: "ended",
      ended_at: iso(oldStart!.started_at.getTime() + 60 * 60 * 1000)
    }
    const since = stepEventsSince(target)
    const span = stepEventSpan(eventId)!
    /** The bounds made to reach every partition, as the statements read before them. */
    const lower = new Set([since, stepEventsSince(ended), span.since])
    const upper = new Set([stepEventsUntil(ended), span.until])
    const unbounded = (params: ReadonlyArray<unknown>) =>
      params.map((p) => (lower.has(p as string) ? "-infinity" : upper.has(p as string) ? "infinity" : p))

    /** The statements `effect` sends, as sent. */
    const captured = <A>(effect: Effect.Effect<A>) =>
      Effect.gen(function*() {
        const statements: Array<readonly [string, ReadonlyArray<unknown>]> = []
        yield* effect.pipe(Effect.provideService(Statement.CurrentTransformer, (statement) =>
          Effect.sync(() => {
            statements.push(statement.compile())
            return statement
          })))
        return statements
      })
    const timed = (text: string, params: ReadonlyArray<unknown>) =>
      Effect.gen(function*() {
        const samples: Array<{ planning: number; execution: number; partitions: number; scanned: number }> = []
        for (let i = 0; i < SAMPLES; i++) {
          const lines = yield* explained(sql, text, params)
          const time = (label: string) => Number(/([\d.]+) ms/.exec(lines.find((l) => l.startsWith(label)) ?? "")?.[1] ?? NaN)
          // The partitions the plan holds, run or not (what was planned and locked).
          const named = (ls: ReadonlyArray<string>) =>
            new Set(ls.flatMap((l) => [...l.matchAll(/\bworkflow_step_events_(p\d{8}|default)\b/g)].map((m) => m[0])))
          samples.push({
            planning: time("Planning Time"),
            execution: time("Execution Time"),
            partitions: named(lines).size,
            scanned: named(lines.filter((l) => / on workflow_step_events_/.test(l) && !/never executed/.test(l))).size
          })
        }
        return {
          partitions: samples[0]!.partitions,
          scanned: samples[0]!.scanned,
          planningMs: median(samples.map((s) => s.planning)),
          executionMs: median(samples.map((s) => s.execution))
        }
      })

    const [oldest] = yield* events.latest(target, EVENTS_A_RUN)
    const reads: ReadonlyArray<readonly [string, Effect.Effect<unknown>]> = [
      ["latest 100 (execution GET)", events.latest(target, 100)],
      ["events page 1 of 20 (count, rows)", events.list("prj", target, {}, { mode: "page", page: 1, perPage: 20 })],
      ["events after a cursor", events.list("prj", target, {}, { mode: "cursor", limit: 20, after: { sortKey: oldest!.created_at, id: oldest!.id } })],
      ["an event by id (find)", events.find("prj", eventId)],
      ["latest 100 of a run ended long ago", events.latest(ended, 100)],
      // The same read with its start's bound only, as it was before an ended run took its end's.
      ["  same, bounded by its start only", events.latest({ ...ended, status: "waiting" }, 100)]
    ]
    const plans: Array<StatementPlan> = []
    for (const [read, effect] of reads) {
      for (const [text, params] of yield* captured(effect)) {
        plans.push({
          read,
          bounded: yield* timed(text, params),
          unbounded: yield* timed(text, unbounded(params))
        })
      }
    }

    // Joins of runs to their events, for a workflow and a contact of this week.
    yield* run(`
      INSERT INTO workflows (id, project_id, name, slug, status, lock_version, inbound_message_read_mode, created_at,
        updated_at, created_by, definition)
      VALUES ('fresh', 'prj', 'Fresh', 'fresh', 'active', 0, 'disabled', now(), now(), '{}', '{"nodes":[],"edges":[]}')`)
    yield* run(`UPDATE workflow_executions SET workflow_id = 'fresh', contact_id = 'contact' WHERE started_at > now() - interval '3 days'`)
    yield* run(`ANALYZE workflow_executions`)
    const stats = Context.get(context, WorkflowStatsRepo)
    const erasure = Context.get(context, ExecutionsErasure)
    const skew = `interval '${STEP_EVENT_SKEW_MS} milliseconds'`
    const joins: ReadonlyArray<readonly [string, Effect.Effect<unknown>]> = [
      ["a workflow's node flow", stats.nodeFlow("prj", "fresh")],
      ["a workflow's split counts", stats.splitCounts("prj", "fresh", "set1", { type: "node", node_id: "set3" })],
      [
        "a contact's events erased",
        sql.withTransaction(Effect.andThen(
          erasure.deleteStepEvents("prj", "contact", 1000),
          Effect.fail(new RolledBack({ lines: [] }))
        )).pipe(Effect.ignore)
      ]
    ]
    for (const [read, effect] of joins) {
      for (const [text, params] of yield* captured(effect)) {
        if (!text.includes("workflow_step_events")) continue
        plans.push({
          read,
          bounded: yield* timed(text, params),
          unbounded: yield* timed(text.replaceAll(skew, "interval '100 years'"), params)
        })
      }
    }

    // The whole call, interleaved in blocks so both see the same machine.
    // `before`: the statement `latest` sent before the bound, prepared and cached the same way.
    const before = Effect.orDie(sql`
      SELECT * FROM workflow_step_events WHERE execution_id = ${target.id}
      ORDER BY created_at DESC, seq DESC, id DESC LIMIT ${100}`)
    const calls = { bounded: events.latest(target, 100), unbounded: events.latest(beforeAll, 100), before }
    const callUs = { bounded: 0, unbounded: 0, before: 0 }
    for (let block = 0; block < 10; block++) {
      for (const key of ["bounded", "unbounded", "before"] as const) {
        const start = performance.now()
        for (let i = 0; i < CALLS / 10; i++) yield* calls[key]
        callUs[key] += (performance.now() - start) * 1000 / CALLS
      }
    }
    return {
      weeks: options.weeks,
      partitions,
      events: runs * EVENTS_A_RUN,
      plans,
      call: { boundedUs: callUs.bounded, unboundedUs: callUs.unbounded, beforeUs: callUs.before }
    } satisfies StepEventPlans
  }).pipe(Effect.scoped)

export const formatStepEventPlans = (r: StepEventPlans): string =>
  [
    `Step events of one run with ${r.partitions} partitions (${r.weeks} weeks back, ${r.events} events), medians of ${SAMPLES}`,
    `  ${"statement of".padEnd(36)} bounded: ${"planned/ran".padStart(10)} ${"plan ms".padStart(8)} ${"run ms".padStart(7)}   baseline (unbounded): planned/ran, plan / run ms`,
    ...r.plans.map((p) =>
      `  ${p.read.padEnd(36)}          ${`${p.bounded.partitions}/${p.bounded.scanned}`.padStart(10)} ${
        p.bounded.planningMs.toFixed(3).padStart(8)
      } ${p.bounded.executionMs.toFixed(3).padStart(7)}   ${p.unbounded.partitions}/${p.unbounded.scanned}, ${
        p.unbounded.planningMs.toFixed(3)
      } / ${p.unbounded.executionMs.toFixed(3)}`
    ),
    `  latest(run, 100) as the repository runs it, ${CALLS} calls each: ${r.call.boundedUs.toFixed(0)} µs a call, against ${
      r.call.unboundedUs.toFixed(0)
    } µs unbounded (ratio ${(r.call.unboundedUs / r.call.boundedUs).toFixed(2)}); the statement before the bound, rows not decoded: ${
      r.call.beforeUs.toFixed(0)
    } µs`
  ].join("\n") + "\n"
