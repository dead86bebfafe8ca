/**
 * Log search's write side and retention: the recorder's bounded buffer, the daily prune of entries past the
 * retention, and what makes an entry of each source a problem.
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, ConfigProvider, Context, Effect, Exit, Latch, Layer } from "effect"
import { TestClock } from "effect/testing"
import type { StepEventRecord } from "../src/executions/Execution.ts"
import { logEntry } from "../src/logs/LogEntry.ts"
import { LINGER, type LogDraft, LogRecorder, LogSettings, MAX_BATCH, MAX_BUFFERED } from "../src/logs/LogRecorder.ts"
import { layerLogsWorkers, pruneLogEntries } from "../src/logs/LogsJobs.ts"
import { stepEventEntry } from "../src/executions/StepLogEntries.ts"
import { upstreamChangeEntries } from "../src/logs/Sources.ts"
import { deliveryAttemptEntry } from "../src/webhooks/DeliveryLogEntries.ts"
import { LogSearch, logWords, MAX_SEARCH_TEXT } from "../src/logs/LogSearch.ts"
import { Ids } from "../src/shared/Ids.ts"
import { layerMemoryJobQueue, layerMemoryStorage } from "../src/testing/index.ts"
import type { WebhookDeliveryRecord } from "../src/webhooks/Webhook.ts"

const DAY = 24 * 60 * 60 * 1000
const FAR_FUTURE = "9999-01-01T00:00:00.000Z"

/** Lets the jobs due now run to their end. */
const runDue = Effect.yieldNow.pipe(Effect.repeat({ times: 100 }))

const draft = (occurredAt: string): LogDraft => ({
  project_id: "prj_1",
  source: "external_api_log",
  occurred_at: occurredAt,
  problem: false,
  message: "GET /platform/v1/workflows 200"
})

/** The memory store's `LogSearch`, whose writes wait for `gate`. */
const gatedLogSearch = (gate: Latch.Latch) =>
  Layer.effect(
    LogSearch,
    Effect.gen(function*() {
      const logs = yield* LogSearch
      return LogSearch.of({ ...logs, append: (entries) => Effect.andThen(gate.await, logs.append(entries)) })
    })
  )

describe("LogRecorder", () => {
  it.effect("drops what exceeds its bound while the store is stalled, and writes everything it kept", () =>
    Effect.gen(function*() {
      const gate = yield* Latch.make(false)
      const context = yield* Layer.build(
        LogRecorder.layer.pipe(
          Layer.provideMerge(gatedLogSearch(gate)),
          Layer.provideMerge(Layer.fresh(layerMemoryStorage)),
          Layer.provide(Ids.layerSequential)
        )
      )
      const recorder = Context.get(context, LogRecorder)
      const logs = Context.get(context, LogSearch)
      yield* recorder.record([draft("2026-01-01T00:00:00.000Z")])
      // Once its batch lingered, the writer takes that entry and waits at the gate with it; the buffer is empty again.
      yield* TestClock.adjust(LINGER)
      yield* Effect.yieldNow.pipe(Effect.repeat({ times: 20 }))
      yield* recorder.record(Array.from({ length: MAX_BUFFERED + 5 }, () => draft("2026-01-01T00:00:01.000Z")))
      yield* gate.open
      yield* recorder.flush
      assert.strictEqual(yield* logs.prune(FAR_FUTURE, 1_000_000), 1 + MAX_BUFFERED)
    }).pipe(Effect.scoped))

  it.effect("gathers what arrives while a batch lingers into one write, unless a flush or a full batch cuts it short", () =>
    Effect.gen(function*() {
      const writes: Array<number> = []
      const counted = Layer.effect(
        LogSearch,
        Effect.gen(function*() {
          const logs = yield* LogSearch
          return LogSearch.of({ ...logs, append: (entries) => Effect.sync(() => writes.push(entries.length)).pipe(Effect.andThen(logs.append(entries))) })
        })
      )
      const context = yield* Layer.build(
        LogRecorder.layer.pipe(Layer.provideMerge(counted), Layer.provideMerge(Layer.fresh(layerMemoryStorage)), Layer.provide(Ids.layerSequential))
      )
      const recorder = Context.get(context, LogRecorder)
      const settle = Effect.yieldNow.pipe(Effect.repeat({ times: 20 }))
      for (let i = 0; i < 3; i++) {
        yield* recorder.record([draft("2026-01-01T00:00:00.000Z")])
        yield* settle
      }
      assert.deepStrictEqual(writes, [])
      yield* TestClock.adjust(LINGER)
      yield* settle
      assert.deepStrictEqual(writes, [3])
      // A flush does not wait for the linger.
      yield* recorder.record([draft("2026-01-01T00:00:01.000Z")])
      yield* settle
      yield* recorder.flush
      assert.deepStrictEqual(writes, [3, 1])
      // Nor does a full batch.
      yield* recorder.record(Array.from({ length: MAX_BATCH }, () => draft("2026-01-01T00:00:02.000Z")))
      yield* settle
      assert.deepStrictEqual(writes, [3, 1, MAX_BATCH])
    }).pipe(Effect.scoped))
})

describe("log retention", () => {
  it.effect("drops the entries older than the retention, and no newer", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(Date.UTC(2026, 5, 1))
      const logs = yield* LogSearch
      const at = (ms: number) => new Date(Date.UTC(2026, 5, 1) - ms).toISOString()
      const entry = (id: string, ago: number) => logEntry({ ...draft(at(ago)), id, ingested_at: at(ago) })
      yield* logs.append([entry("a", 30 * DAY), entry("b", 14 * DAY + 1), entry("c", 14 * DAY - 1), entry("d", DAY)])
      assert.strictEqual(yield* pruneLogEntries, 2)
      assert.strictEqual(yield* logs.prune(FAR_FUTURE, 100), 2)
    }).pipe(
      Effect.provide(Layer.mergeAll(
        Layer.fresh(layerMemoryStorage),
        Layer.succeed(LogSettings, LogSettings.of({ recordApiRequests: true, retentionDays: 14 }))
      ))
    ))
})

describe("log entries of each source", () => {
  it("a failed step is a problem with its error; an entered step is not", () => {
    const event = (event_type: string, payload: Record<string, unknown>): StepEventRecord => ({
      id: "evt_1",
      project_id: "prj_1",
      execution_id: "exe_1",
      seq: 3,
      event_type,
      direction: null,
      edge_label: null,
      created_at: "2026-01-01T00:00:00.000Z",
      payload,
      step: { id: "stp_1", identifier: "ask", node_type: "function", display_name: "Ask" }
    })
    const failed = stepEventEntry(event("step_failed", { error: { message: "function timed out", code: "timeout" } }), {
      workflow_id: "wf_1",
      workflow_name: "Onboarding",
      status: "failed"
    })
    assert.deepInclude(failed, {
      problem: true,
      level: "error",
      message: "step_failed at ask (Onboarding): function timed out",
      error_class: "timeout",
      error_message: "function timed out",
      flow_name: "Onboarding",
      step_type: "function"
    })
    assert.deepInclude(stepEventEntry(event("step_entered", { node_type: "function" }), null), { problem: false, level: "info", flow_name: null })
  })

  it("a delivery attempt that failed is a problem: a warning while retries remain, an error once failed", () => {
    const delivery = {
      id: "dlv_1",
      project_id: "prj_1",
      webhook_id: "wh_1",
      webhook_url: "https://example.com/hook",
      event: "msg.message.received",
      status: "pending",
      max_attempts: 3,
      next_attempt_at: "2026-01-01T00:00:10.000Z",
      error_message: null,
      test: false,
      phone_number_id: "pn_1",
      conversation_phone_number: null
    } as unknown as WebhookDeliveryRecord
    const attempt = { delivery_id: "dlv_1", attempt: 1, attempted_at: "2026-01-01T00:00:00.000Z", response_status: null, duration_ms: 10_000, error: "timeout" }
    assert.deepInclude(deliveryAttemptEntry(delivery, attempt), {
      problem: true,
      level: "warning",
      message: "msg.message.received to https://example.com/hook: attempt 1 failed: timeout"
    })
    assert.deepInclude(deliveryAttemptEntry({ ...delivery, status: "failed" }, attempt), { problem: true, level: "error" })
    assert.deepInclude(deliveryAttemptEntry({ ...delivery, status: "delivered" }, { ...attempt, response_status: 204, error: null }), {
      problem: false,
      level: "info",
      response_status: 204
    })
  })

  it("an upstream status that failed is a problem with the network's error", () => {
    const [entry] = upstreamChangeEntries({
      projectId: "prj_1",
      receivedAt: "2026-01-01T00:00:00.000Z",
      inboxId: "inb_1",
      businessAccountId: "waba_1",
      field: "messages",
      value: {
        statuses: [{
          id: "wamid.1",
          status: "failed",
          recipient_id: "15550001111",
          errors: [{ code: 131026, title: "Message undeliverable", message: "Message undeliverable" }]
        }]
      },
      phoneNumberId: "pn_1",
      displayPhoneNumber: "+1 555 000 2222"
    })
    assert.deepInclude(entry, {
      problem: true,
      level: "error",
      status: "failed",
      event: "failed",
      resource_id: "wamid.1",
      error_class: "131026",
      error_message: "Message undeliverable",
      message: "status failed of wamid.1 to 15550001111: Message undeliverable"
    })
  })

  it("an entry's searchable text is its words, lowercased and cut at a word boundary, in ASCII or not", () => {
    const searchText = (message: string) =>
      logEntry({ id: "e", project_id: "p", source: "external_api_log", occurred_at: "t", ingested_at: "t", problem: false, message }).search_text
    // The ASCII scan and `logWords` agree: the same text either way.
    const uuid = "0193A5B2-7c1d-7abc-8def-0123456789ab"
    for (
      const message of [
        "GET /v1/Things?a=B_c 200",
        "  --Héllo, WÖRLD!! déjà-vu 42",
        "İstanbul ß ΣΑΣ 😀 x",
        "",
        "!!!",
        `GET /platform/v1/workflows/${uuid} 200`,
        `x${uuid} ${uuid}x ${uuid}-more ${uuid.slice(0, 35)} é ${uuid}`,
        `${uuid}é`
      ]
    ) {
      assert.strictEqual(searchText(message), logWords(message).join(" "), message)
    }
    // A UUID is one word of its digits, lowercased; with a letter or digit next to it, it is no UUID.
    assert.strictEqual(searchText(`to ${uuid}.`), "to 0193a5b27c1d7abc8def0123456789ab")
    assert.strictEqual(searchText(`${uuid}0`), "0193a5b2 7c1d 7abc 8def 0123456789ab0")
    // Cut after the last whole word that fits, whether the text is ASCII or not.
    const long = "a".repeat(MAX_SEARCH_TEXT - 3)
    assert.strictEqual(searchText(`${long} bb cc`), `${long} bb`)
    assert.strictEqual(searchText(`${long} bbb cc`), long)
    assert.strictEqual(searchText(`${long} bé cc`), `${long} bé`)
    assert.strictEqual(searchText(`${long} béé cc`), long)
  })
})

describe("log settings", () => {
  it.effect("refuse a retention under a day", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(Layer.build(LogSettings.layerConfig).pipe(
        Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromUnknown({ PARLEY_LOG_RETENTION_DAYS: "0" })),
        Effect.scoped
      ))
      assert.isTrue(Exit.hasDies(exit))
      const kept = yield* Effect.gen(function*() {
        return (yield* LogSettings).retentionDays
      }).pipe(
        Effect.provide(LogSettings.layerConfig),
        Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromUnknown({ PARLEY_LOG_RETENTION_DAYS: "30" }))
      )
      assert.strictEqual(kept, 30)
    }))
})

describe("the daily log maintenance", () => {
  it.effect("deletes entries past the retention at the first midnight after", () =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const logs = yield* LogSearch
      const at = (ms: number) => new Date(ms).toISOString()
      const young = logEntry({ ...draft(at(now)), id: "young", ingested_at: at(now) })
      yield* logs.append([young])
      yield* Layer.build(layerLogsWorkers)
      // The run at start and the next twelve keep it (13 days old)...
      yield* runDue
      yield* TestClock.adjust(13 * DAY)
      yield* runDue
      assert.strictEqual(yield* logs.prune(FAR_FUTURE, 100), 1)
      yield* logs.append([young])
      // ...and the first run once it is past 14 days drops it.
      yield* TestClock.adjust(2 * DAY)
      yield* runDue
      assert.strictEqual(yield* logs.prune(FAR_FUTURE, 100), 0)
    }).pipe(
      Effect.scoped,
      Effect.provide(Layer.mergeAll(
        Layer.fresh(layerMemoryStorage),
        layerMemoryJobQueue,
        Layer.succeed(LogSettings, LogSettings.of({ recordApiRequests: true, retentionDays: 14 }))
      ))
    ))
})
