/**
 * A run's step events go with the run on PostgreSQL without a foreign key between them (migration 0041): every
 * statement that deletes runs deletes their events after it, whether it deletes them itself or a cascade does (a
 * workflow's deletion, reached here from its project's), in every weekly partition; and a delete that waited for a
 * checkpoint holding the run's row deletes the events that checkpoint committed meanwhile, as the key's cascade did.
 */
import { ExecutionsRepo, StepEventsRepo, TimePartitions, WorkflowsRepo } from "@parley/core"
import { givenProject, makeExecution, makeStepEvent, makeWorkflow } from "@parley/core/testing/conformance"
import { assert, layer } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { decodeRows } from "../src/Rows.ts"
import { layerStorage } from "../src/Storage.ts"
import { layerTestDatabase } from "./pg.ts"

const DAY = 24 * 60 * 60 * 1000
const iso = (ms: number) => new Date(ms).toISOString()
const toCount = decodeRows("step events", Schema.Struct({ n: Schema.Number }))
const toWaiting = decodeRows("pg_stat_activity", Schema.Struct({ waiting: Schema.Boolean }))

/** The step events of the runs `ids`, in every partition. */
const eventsOf = (ids: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const [row] = yield* toCount(yield* sql`SELECT count(*)::int AS n FROM workflow_step_events WHERE execution_id IN ${sql.in(ids)}`)
    return row!.n
  })

const givenRuns = (count: number) =>
  Effect.gen(function*() {
    const project = yield* givenProject()
    const workflow = makeWorkflow(project.id)
    yield* (yield* WorkflowsRepo).insert(workflow)
    const runs = Array.from({ length: count }, () => makeExecution(workflow))
    for (const run of runs) assert.isTrue(yield* (yield* ExecutionsRepo).insert(run))
    return { project, workflow, runs }
  })

layer(layerStorage.pipe(Layer.provideMerge(layerTestDatabase)), { excludeTestServices: true })("step events without a foreign key (postgres)", (it) => {
  it.effect("go with their runs when a cascade deletes them (a project's, through its workflows), from every weekly partition", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const { project, runs } = yield* givenRuns(2)
      const { runs: [kept] } = yield* givenRuns(1)
      const start = Date.parse(runs[0]!.started_at)
      yield* (yield* TimePartitions).prepare("workflow_step_events", iso(start), iso(start + 21 * DAY))
      // Three weeks of events for each run, and the run of another project.
      yield* (yield* StepEventsRepo).append([...runs, kept!].flatMap((run) =>
        [0, 1, 2].map((week) => makeStepEvent(run, { seq: week, created_at: iso(start + week * 7 * DAY) }))
      ))
      assert.strictEqual(yield* eventsOf(runs.map((r) => r.id)), 6)
      yield* sql`DELETE FROM projects WHERE id = ${project.id}`
      assert.strictEqual(yield* eventsOf(runs.map((r) => r.id)), 0)
      assert.strictEqual(yield* eventsOf([kept!.id]), 3, "another project's events stay")
    }))

  it.effect("go with a run whose checkpoint committed while its deletion waited for the row", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const repo = yield* ExecutionsRepo
      const { runs: [run] } = yield* givenRuns(1)
      const checkpointed = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      // The checkpoint writes its events and holds the run's row, uncommitted, until released.
      const checkpoint = yield* Effect.forkChild(sql.withTransaction(Effect.gen(function*() {
        const next = { ...run!, step_seq: run!.step_seq + 1, state_version: run!.state_version + 1 }
        assert.isTrue(yield* repo.checkpoint(next, run!.state_version, [makeStepEvent(run!), makeStepEvent(run!, { seq: 1 })]))
        yield* Deferred.succeed(checkpointed, undefined)
        yield* Deferred.await(release)
      })))
      yield* Deferred.await(checkpointed)
      const deletion = yield* Effect.forkChild(sql`DELETE FROM workflow_executions WHERE id = ${run!.id}`)
      // The deletion waits for the checkpoint's row lock.
      for (let waited = false; !waited;) {
        yield* Effect.sleep("20 millis")
        const rows = yield* toWaiting(yield* sql`
          SELECT wait_event_type = 'Lock' AS waiting FROM pg_stat_activity
          WHERE query LIKE 'DELETE FROM workflow_executions WHERE id = %' AND state = 'active'`)
        waited = rows.some((r) => r.waiting)
      }
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(checkpoint)
      yield* Fiber.join(deletion)
      assert.strictEqual(yield* eventsOf([run!.id]), 0)
    }))
})
