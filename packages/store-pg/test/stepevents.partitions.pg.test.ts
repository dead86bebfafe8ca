/**
 * Reads of one run's step events plan only the weekly partitions (0036) the run can have written: every statement
 * `StepEventsRepo` runs for `latest` and `list` (page count and rows, cursors both ways with their lookup), captured
 * as it goes to PostgreSQL and `EXPLAIN`ed with its parameters, names no partition of a week before the run's. A read
 * of one event by id (`find`) plans the weeks its UUIDv7 id's day either side reaches, where an id of another kind
 * (the statement as it was before the bound) plans every partition; those of a run that ended plan none of the weeks
 * after its end.
 */
import { ExecutionsRepo, StepEventsRepo, TimePartitions, WorkflowsRepo } from "@parley/core"
import { givenProject, makeExecution, makeStepEvent, makeWorkflow, uuidV7At } from "@parley/core/testing/conformance"
import { assert, layer } from "@effect/vitest"
import { Effect, Layer, Option, Schema } from "effect"
import { SqlClient, Statement } from "effect/sql"
import { decodeRows } from "../src/Rows.ts"
import { layerStorage } from "../src/Storage.ts"
import { partitionName, spanOf } from "../src/TimePartitions.ts"
import { layerTestDatabase } from "./pg.ts"

const DAY = 24 * 60 * 60 * 1000
const WEEK = 7 * DAY
const iso = (ms: number) => new Date(ms).toISOString()
const toCount = decodeRows("partitions", Schema.Struct({ partitions: Schema.Number }))
const toPlanLines = decodeRows("plan", Schema.Struct({ "QUERY PLAN": Schema.String }))

/** The statements on `workflow_step_events` that `effect` runs, compiled as they were sent, and its result. */
const captured = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const statements: Array<readonly [string, ReadonlyArray<unknown>]> = []
    const result = yield* effect.pipe(Effect.provideService(Statement.CurrentTransformer, (statement) =>
      Effect.sync(() => {
        const compiled = statement.compile()
        if (compiled[0].includes("workflow_step_events")) statements.push(compiled)
        return statement
      })))
    return { result, statements }
  })

/** The step event partitions the plan of `statement` (with its parameters, as a custom plan) names. */
const partitionsPlanned = ([text, params]: readonly [string, ReadonlyArray<unknown>]) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const lines = yield* toPlanLines(yield* sql.unsafe(`EXPLAIN (COSTS OFF) ${text}`, params))
    return new Set(lines.flatMap((l) => [...l["QUERY PLAN"].matchAll(/\bworkflow_step_events_(p\d{8}|default)\b/g)].map((m) => m[0])))
  })

layer(layerStorage.pipe(Layer.provideMerge(layerTestDatabase)), { excludeTestServices: true })("step events by run (postgres)", (it) => {
  it.effect("plans no weekly partition from before the run", () =>
    Effect.gen(function*() {
      const events = yield* StepEventsRepo
      const project = yield* givenProject()
      const workflow = makeWorkflow(project.id)
      yield* (yield* WorkflowsRepo).insert(workflow)
      // Ten weeks of partitions; the run starts on the Monday of the sixth, an hour after midnight, so the day its
      // events may be stamped before it (clock skew) reaches into the fifth week, and no further.
      const first = spanOf("workflow_step_events", Date.UTC(2027, 0, 6))
      yield* (yield* TimePartitions).prepare("workflow_step_events", iso(first), iso(first + 9 * WEEK))
      const week = (n: number) => partitionName("workflow_step_events", first + n * WEEK)
      const started = first + 5 * WEEK + 60 * 60 * 1000
      const run = makeExecution(workflow, { started_at: iso(started), last_event_at: iso(started) })
      const older = makeExecution(workflow, { started_at: iso(first), last_event_at: iso(first) })
      for (const e of [run, older]) assert.isTrue(yield* (yield* ExecutionsRepo).insert(e))
      const mine = [0, 1, 2, 3].map((n) => makeStepEvent(run, { seq: n, created_at: iso(started + n * 3 * DAY) }))
      yield* events.append([
        ...mine,
        ...[0, 1, 2, 3, 4, 5].map((n) => makeStepEvent(older, { seq: n, created_at: iso(first + n * WEEK) }))
      ])

      let statements = 0
      /** `read`'s answer, once each statement it sent was checked to plan none of the weeks before the run's. */
      const checked = <A>(read: Effect.Effect<A>) =>
        Effect.gen(function*() {
          const { result, statements: sent } = yield* captured(read)
          for (const statement of sent) {
            statements++
            const planned = yield* partitionsPlanned(statement)
            assert.isTrue(planned.has(week(5)), `the run's first week in ${statement[0]}`)
            for (const n of [0, 1, 2, 3]) assert.isFalse(planned.has(week(n)), `week ${n} in ${statement[0]}`)
          }
          return result
        })
      const ids = (xs: ReadonlyArray<{ readonly id: string }>) => xs.map((x) => x.id)
      assert.deepStrictEqual(ids(yield* checked(events.latest(run, 10))), ids([...mine].reverse()))
      assert.deepStrictEqual(
        yield* checked(events.list(project.id, run, {}, { mode: "page", page: 1, perPage: 2 })),
        { items: [mine[3]!, mine[2]!], hasMore: true, total: 4 }
      )
      yield* checked(events.list(project.id, run, { event_types: ["step_entered"] }, { mode: "cursor", limit: 2 }))
      const after = yield* checked(
        events.list(project.id, run, {}, { mode: "cursor", limit: 2, after: { sortKey: mine[2]!.created_at, id: mine[2]!.id } })
      )
      assert.deepStrictEqual(ids(after.items), ids([mine[1]!, mine[0]!]))
      const before = yield* checked(
        events.list(project.id, run, {}, { mode: "cursor", limit: 2, before: { sortKey: mine[1]!.created_at, id: mine[1]!.id } })
      )
      assert.deepStrictEqual(ids(before.items), ids([mine[3]!, mine[2]!]))
      // latest, the page's count and rows, a page, two cursors (each with its lookup inside).
      assert.strictEqual(statements, 6)
    }))

  it.effect("plans the weeks an event's UUIDv7 id reaches when read by id, not every week", () =>
    Effect.gen(function*() {
      const events = yield* StepEventsRepo
      const project = yield* givenProject()
      const workflow = makeWorkflow(project.id)
      yield* (yield* WorkflowsRepo).insert(workflow)
      const first = spanOf("workflow_step_events", Date.UTC(2027, 5, 2))
      yield* (yield* TimePartitions).prepare("workflow_step_events", iso(first), iso(first + 9 * WEEK))
      const weeks = Array.from({ length: 10 }, (_, n) => partitionName("workflow_step_events", first + n * WEEK))
      const run = makeExecution(workflow, { started_at: iso(first), last_event_at: iso(first) })
      assert.isTrue(yield* (yield* ExecutionsRepo).insert(run))
      // Mid-week (the day either side stays in the week), and early on a Monday (the day before reaches the week before).
      const midWeek = first + 4 * WEEK + 3 * DAY
      const monday = first + 6 * WEEK + 60 * 60 * 1000
      const stamped = (ms: number, seq: number) =>
        makeStepEvent(run, { id: uuidV7At(ms), seq, created_at: iso(ms) })
      const [inWeek, onMonday] = [stamped(midWeek, 0), stamped(monday, 1)]
      const plain = makeStepEvent(run, { id: crypto.randomUUID(), seq: 2, created_at: iso(midWeek) })
      yield* events.append([inWeek, onMonday, plain])
      const plannedBy = (id: string) =>
        Effect.gen(function*() {
          const { result, statements } = yield* captured(events.find(project.id, id))
          assert.lengthOf(statements, 1)
          return { found: result, planned: [...yield* partitionsPlanned(statements[0]!)].sort() }
        })
      const a = yield* plannedBy(inWeek.id)
      assert.deepStrictEqual(a.found, Option.some(inWeek))
      assert.deepStrictEqual(a.planned, [weeks[4]!])
      const b = yield* plannedBy(onMonday.id)
      assert.deepStrictEqual(b.found, Option.some(onMonday))
      assert.deepStrictEqual(b.planned, [weeks[5]!, weeks[6]!])
      // An id that is no UUIDv7 gives no bound: every partition (this suite's others too, and the default one), as every
      // `find` did before.
      const c = yield* plannedBy(plain.id)
      assert.deepStrictEqual(c.found, Option.some(plain))
      const [{ partitions }] = yield* toCount(yield* (yield* SqlClient.SqlClient)`
        SELECT count(*)::int AS partitions FROM pg_inherits WHERE inhparent = 'workflow_step_events'::regclass`)
      assert.isAtLeast(partitions, weeks.length + 1)
      assert.strictEqual(c.planned.length, partitions)
    }))

  it.effect("plans no weekly partition from after an ended run's end", () =>
    Effect.gen(function*() {
      const events = yield* StepEventsRepo
      const project = yield* givenProject()
      const workflow = makeWorkflow(project.id)
      yield* (yield* WorkflowsRepo).insert(workflow)
      const first = spanOf("workflow_step_events", Date.UTC(2027, 9, 6))
      yield* (yield* TimePartitions).prepare("workflow_step_events", iso(first), iso(first + 9 * WEEK))
      const week = (n: number) => partitionName("workflow_step_events", first + n * WEEK)
      // Started on the Thursday of the second week, ended on its Saturday: the day after it stays in that week.
      const started = first + 1 * WEEK + 3 * DAY
      const ended = started + 2 * DAY
      const run = makeExecution(workflow, { started_at: iso(started), last_event_at: iso(ended), status: "ended", ended_at: iso(ended) })
      assert.isTrue(yield* (yield* ExecutionsRepo).insert(run))
      const mine = [0, 1, 2].map((n) => makeStepEvent(run, { seq: n, created_at: iso(started + n * DAY) }))
      yield* events.append(mine)
      const planned = (read: Effect.Effect<unknown>) =>
        Effect.gen(function*() {
          const { statements } = yield* captured(read)
          const all = new Set<string>()
          for (const statement of statements) for (const p of yield* partitionsPlanned(statement)) all.add(p)
          return all
        })
      const later = [2, 3, 4, 5, 6, 7, 8, 9].map(week)
      for (const read of [
        events.latest(run, 10),
        events.list(project.id, run, {}, { mode: "page", page: 1, perPage: 2 }),
        events.list(project.id, run, {}, { mode: "cursor", limit: 2, after: { sortKey: mine[1]!.created_at, id: mine[1]!.id } })
      ]) {
        const named = yield* planned(read)
        assert.isTrue(named.has(week(1)))
        for (const w of later) assert.isFalse(named.has(w), `${w} after the run's end`)
      }
      assert.deepStrictEqual((yield* events.latest(run, 10)).map((e) => e.id), [...mine].reverse().map((e) => e.id))
      // The same run still waiting: every week from its start on.
      const live = yield* planned(events.latest({ ...run, status: "waiting" }, 10))
      for (const w of later) assert.isTrue(live.has(w), `${w} while the run can move`)
    }))
})
