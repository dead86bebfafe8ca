/**
 * Job payloads are Schemas beside their queue names, decoded in one place (`decodingPayload`): a payload that
 * does not decode never reaches the handler, fails the attempt with `JobPayloadInvalid` (so the queue retries it,
 * then gives up) and is logged with its queue and job id.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Layer, Logger, Schema } from "effect"
import { TestClock } from "effect/testing"
import { LOGS_MAINTENANCE_QUEUE, layerLogsWorkers } from "../src/logs/LogsJobs.ts"
import { LogSettings } from "../src/logs/LogRecorder.ts"
import { LogSearch } from "../src/logs/LogSearch.ts"
import { AttemptJob, FlushJob } from "../src/webhooks/Deliveries.ts"
import { ForwardJob, InboxJob, NumberRefreshJob } from "../src/messaging/Queues.ts"
import { SendJob } from "../src/broadcasts/Broadcasts.ts"
import { RunJob, TimerJob } from "../src/executions/Engine.ts"
import { RelayJob } from "../src/outbox/Relay.ts"
import { decodingPayload, type Job, JobPayloadInvalid, JobQueue, SlotJob } from "../src/ports/JobQueue.ts"
import { layerMemoryJobQueue } from "../src/ports/MemoryJobQueue.ts"
import { layerMemoryTimePartitions } from "../src/ports/TimePartitions.ts"

const settle = Effect.yieldNow.pipe(Effect.repeat({ times: 20 }))

const capture = () => {
  const lines: Array<string> = []
  return { lines, layer: Logger.layer([Logger.map(Logger.formatJson, (line) => void lines.push(line))]) }
}

const job = (payload: unknown): Job => ({ id: "job-1", queue: "test.queue", payload, attempt: 1 })

describe("job payloads", () => {
  it.effect("a payload that decodes reaches the handler decoded", () =>
    Effect.gen(function*() {
      const seen: Array<number> = []
      yield* decodingPayload(SlotJob, (p) => Effect.sync(() => void seen.push(p.slot)))(job({ slot: 7 }))
      assert.deepStrictEqual(seen, [7])
    }))

  it.effect("a payload that does not decode fails the attempt with the queue, the job and the issue, and is logged", () => {
    const logs = capture()
    return Effect.gen(function*() {
      let called = 0
      const exit = yield* Effect.exit(
        decodingPayload(SlotJob, () => Effect.sync(() => void called++))(job({ slot: "yesterday" }))
      )
      assert.strictEqual(called, 0)
      assert.isTrue(Exit.isFailure(exit))
      const error = Exit.isFailure(exit) ? exit.cause.reasons[0] : undefined
      assert.isTrue(error !== undefined && error._tag === "Fail" && error.error instanceof JobPayloadInvalid)
      const invalid = (error as { readonly error: JobPayloadInvalid }).error
      assert.strictEqual(invalid.queue, "test.queue")
      assert.strictEqual(invalid.jobId, "job-1")
      assert.include(invalid.issue, "slot")
      assert.include(invalid.message, "test.queue")
      const line = logs.lines.find((l) => l.includes("does not decode"))
      assert.isDefined(line)
      assert.include(line!, "test.queue")
      assert.include(line!, "job-1")
    }).pipe(Effect.provide(logs.layer))
  })

  it.effect("on the queue, an undecodable job is retried to its limit and never handled; good jobs still are", () =>
    Effect.gen(function*() {
      const jobs = yield* JobQueue
      const attempts: Array<number> = []
      const handled: Array<number> = []
      const handler = decodingPayload(SlotJob, (p) => Effect.sync(() => void handled.push(p.slot)))
      yield* jobs.work("test.slots", { concurrency: 1 }, (j) => {
        attempts.push(j.attempt)
        return handler(j)
      })
      yield* jobs.enqueue("test.slots", { slot: null }, { retryLimit: 2, retryDelayMs: 10 })
      for (let i = 0; i < 10; i++) yield* TestClock.adjust(10).pipe(Effect.andThen(settle))
      assert.deepStrictEqual(attempts, [1, 2, 3])
      assert.deepStrictEqual(handled, [])
      yield* jobs.enqueue("test.slots", { slot: 3 })
      yield* settle
      assert.deepStrictEqual(handled, [3])
    }).pipe(Effect.scoped, Effect.provide(layerMemoryJobQueue), Effect.provide(capture().layer)))

  it.effect("a real worker (logs.maintenance) fails and logs a payload it cannot read instead of guessing a slot", () => {
    const logs = capture()
    let prunes = 0
    const search = Layer.succeed(LogSearch, { prune: () => Effect.sync(() => (prunes++, 0)) } as unknown as LogSearch["Service"])
    const settings = Layer.succeed(LogSettings, LogSettings.of({ recordApiRequests: false, retentionDays: 14 }))
    return Effect.gen(function*() {
      const jobs = yield* JobQueue
      yield* Layer.build(layerLogsWorkers.pipe(Layer.provide([search, settings, layerMemoryTimePartitions])))
      yield* settle
      const atStart = prunes
      assert.strictEqual(atStart, 1)
      yield* jobs.enqueue(LOGS_MAINTENANCE_QUEUE, { slot: "today" }, { retryLimit: 0 })
      yield* settle
      assert.strictEqual(prunes, atStart)
      assert.isTrue(logs.lines.some((l) => l.includes("does not decode") && l.includes(LOGS_MAINTENANCE_QUEUE)))
    }).pipe(Effect.scoped, Effect.provide(layerMemoryJobQueue), Effect.provide(logs.layer))
  })

  it("each queue's Schema takes what its enqueue writes and refuses what a hand probe used to drop", () => {
    const accepts = <S extends Schema.Decoder<unknown>>(schema: S, value: unknown) =>
      assert.isTrue(Schema.decodeUnknownOption(schema)(value)._tag === "Some", JSON.stringify(value))
    const refuses = <S extends Schema.Decoder<unknown>>(schema: S, value: unknown) =>
      assert.isTrue(Schema.decodeUnknownOption(schema)(value)._tag === "None", JSON.stringify(value))
    accepts(InboxJob, { inbox_id: "i" })
    refuses(InboxJob, {})
    accepts(ForwardJob, { inbox_id: "i", msg_config_id: "c" })
    refuses(ForwardJob, { inbox_id: "i" })
    accepts(NumberRefreshJob, { msg_config_id: "c" })
    refuses(NumberRefreshJob, null)
    accepts(AttemptJob, { project_id: "p", delivery_id: "d", attempt: 1 })
    refuses(AttemptJob, { project_id: "p", delivery_id: "d", attempt: "1" })
    accepts(FlushJob, { buffer_id: "b" })
    refuses(FlushJob, "b")
    accepts(SendJob, { project_id: "p", id: "b" })
    refuses(SendJob, { id: "b" })
    accepts(RunJob, { id: "e" })
    accepts(TimerJob, { id: "e", seq: 2 })
    refuses(TimerJob, { id: "e" })
    const entry = { id: "o", project_id: null, type: "msg.message.received", payload: { a: 1 }, created_at: "2026-01-01T00:00:00.000Z" }
    accepts(RelayJob, entry)
    accepts(RelayJob, [entry, { ...entry, project_id: "p" }])
    refuses(RelayJob, [{ ...entry, type: 1 }])
    refuses(SlotJob, { slot: "1" })
  })
})
