/** Step events are kept 90 days (decisions 4.2): the maintenance prune drops older ones, in batches, and no newer. */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Effect } from "effect"
import { pruneStepEvents, STEP_EVENTS_KEEP_MS } from "../src/executions/ExecutionsJobs.ts"
import { ExecutionsRepo, StepEventsRepo } from "../src/executions/ExecutionsRepo.ts"
import { makeExecution, makeStepEvent } from "../src/testing/conformance/ExecutionsStorageConformance.ts"
import { layerMemoryParley, sandboxProject } from "../src/testing/index.ts"
import { Workflows } from "../src/workflows/Workflows.ts"

const DAY = 24 * 60 * 60 * 1000

describe("step event retention", () => {
  it.effect("drops events older than 90 days and keeps the rest", () =>
    Effect.gen(function*() {
      const { principal } = yield* sandboxProject("Acme")
      const workflow = yield* (yield* Workflows).create(principal, { name: "Kept" })
      const now = yield* Clock.currentTimeMillis
      const at = (ms: number) => new Date(ms).toISOString()
      const execution = makeExecution(workflow, { started_at: at(now - 200 * DAY), last_event_at: at(now - 200 * DAY) })
      assert.isTrue(yield* (yield* ExecutionsRepo).insert(execution))
      const events = yield* StepEventsRepo
      yield* events.append([
        makeStepEvent(execution, { seq: 1, created_at: at(now - 200 * DAY) }),
        makeStepEvent(execution, { seq: 2, created_at: at(now - STEP_EVENTS_KEEP_MS - 1) }),
        makeStepEvent(execution, { seq: 3, created_at: at(now - 89 * DAY) }),
        makeStepEvent(execution, { seq: 4, created_at: at(now) })
      ])
      assert.strictEqual(yield* pruneStepEvents, 2)
      assert.deepStrictEqual((yield* events.latest(execution, 10)).map((e) => e.seq).sort(), [3, 4])
      assert.strictEqual(yield* pruneStepEvents, 0, "nothing left to prune")
      assert.isTrue((yield* (yield* ExecutionsRepo).get(execution.id))._tag === "Some", "the record stays with its workflow")
    }).pipe(Effect.provide(layerMemoryParley)))
})
