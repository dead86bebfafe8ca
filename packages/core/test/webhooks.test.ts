/**
 * Webhook deliveries on memory ports with the job queue, the relay and a
 * scripted receiver on the TestClock: signed exact bytes and headers, the
 * retry schedules and the 10 s timeout, payload versions, buffering windows,
 * auto-pause, `upstream` bytes, manual retries, test deliveries and the
 * private-address rule at delivery time.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Option } from "effect"
import { TestClock } from "effect/testing"
import { createHash, createHmac } from "node:crypto"
import { Events } from "../src/events/Events.ts"
import { Outbox } from "../src/ports/Outbox.ts"
import { Transactor } from "../src/ports/Transactor.ts"
import { WebhookDeliveriesRepo } from "../src/webhooks/WebhooksRepo.ts"
import { type Principal, Projects } from "../src/projects/Projects.ts"
import { Ids } from "../src/shared/Ids.ts"
import { isPrivateAddress } from "../src/shared/PrivateAddress.ts"
import { MemoryWebhookReceiver, type ReceivedWebhookRequest } from "../src/testing/index.ts"
import { WebhookDeliveries } from "../src/webhooks/Deliveries.ts"
import type { WebhookInput } from "../src/webhooks/Webhook.ts"
import { Webhooks } from "../src/webhooks/Webhooks.ts"
import { webhooksEnvironment } from "./webhooks.support.ts"

const PNID = "106540352242922"
const OTHER_PNID = "106540352242999"
const START = Date.UTC(2026, 2, 4, 12, 0, 0)
const SECRET = "whsec_0123456789"
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

/** The numbers every project of these tests has. */
const Env = webhooksEnvironment(
  (_projectId, kind, id) =>
    Effect.succeed(kind === "phone_number" && (id === PNID || id === OTHER_PNID) ? Option.some("+1 555") : Option.none()),
  Layer.empty
)

/** Runs a test at START over a fresh environment (the clock is set before the workers start). */
const run = <A, E>(body: Effect.Effect<A, E, Layer.Success<typeof Env>>) =>
  TestClock.setTime(START).pipe(Effect.andThen(Effect.provide(body, Env)))

/** Lets the fibers woken so far (relay, queue, attempts) run until `check` holds. */
const until = (what: string, check: () => boolean) =>
  Effect.gen(function*() {
    for (let i = 0; i < 5_000; i++) {
      if (check()) return
      yield* Effect.yieldNow
    }
    return yield* Effect.die(new Error(`still waiting for: ${what}`))
  })

/** `until` with a check that reads the stores. */
const untilEffect = <E, R>(what: string, check: Effect.Effect<boolean, E, R>) =>
  Effect.gen(function*() {
    for (let i = 0; i < 5_000; i++) {
      if (yield* check) return
      yield* Effect.yieldNow
    }
    return yield* Effect.die(new Error(`still waiting for: ${what}`))
  })

/** The project's deliveries, newest first. */
const logOf = (principal: Principal) =>
  Effect.gen(function*() {
    const deliveries = yield* WebhookDeliveries
    return (yield* deliveries.list(principal, {}, { mode: "cursor", limit: 100 })).items
  })

/** Lets everything woken run, for checks that something did not happen. */
const settle = Effect.yieldNow.pipe(Effect.repeat({ times: 500 }))

const newPrincipal = Effect.gen(function*() {
  const project = yield* (yield* Projects).create("Acme")
  return { project, apiKey: { id: "key", name: "test" } } satisfies Principal
})

const hook = (overrides: Partial<WebhookInput> = {}): WebhookInput => ({
  url: "https://hooks.example.com/parley",
  secret_key: SECRET,
  events: ["project.event"],
  ...overrides
})

const hmac = (body: Uint8Array, secret = SECRET) => createHmac("sha256", secret).update(body).digest("hex")
const text = (r: ReceivedWebhookRequest) => Buffer.from(r.body).toString("utf8")
const json = (r: ReceivedWebhookRequest) => JSON.parse(text(r)) as any

const msgConfig = { id: "cfg-1", phone_number_id: PNID, display_phone_number: "+1 555-010-0000", name: "Support" }

const messageData = (n: number, conversationId = "conv-1", phoneNumberId = PNID) => ({
  message: { id: `wamid.${n}`, from: "15550001111", timestamp: "1772625600", type: "text", text: { body: `hi ${n}` } },
  conversation: { id: conversationId, phone_number: "15550001111", contact_name: "Ana" },
  is_new_conversation: n === 1,
  phone_number_id: phoneNumberId
})

/** A `msg.*` domain event as messaging writes it. */
const appendMsg = (projectId: string, type: string, data: unknown, conversationPhone: string | null = "15550001111") =>
  Effect.gen(function*() {
    const outbox = yield* Outbox
    const id = yield* (yield* Ids).uuid
    yield* (yield* Transactor).withTransaction(outbox.append({
      id,
      project_id: projectId,
      type,
      payload: { data, msg_config: msgConfig, conversation_phone_number: conversationPhone },
      created_at: new Date(START).toISOString()
    }))
    return id
  })

const iso = (ms: number) => new Date(ms).toISOString()

/** A `msg.message.received` domain event, for dispatching by hand. */
const receivedEntry = (id: string, projectId: string) => ({
  id,
  project_id: projectId,
  type: "msg.message.received",
  payload: { data: messageData(1), msg_config: msgConfig, conversation_phone_number: null },
  created_at: iso(START)
})

describe("webhook deliveries", () => {
  it.effect("delivers a project event: the exact bytes signed, the headers of 6.2, and the log", () =>
    run(Effect.gen(function*() {
      const receiver = yield* MemoryWebhookReceiver
      const deliveries = yield* WebhookDeliveries
      const principal = yield* newPrincipal
      const webhook = yield* (yield* Webhooks).create(principal, hook({ headers: { "X-Tenant": "acme" } }))
      const event = yield* (yield* Events).emit(principal.project.id, { name: "order.paid", properties: { total: 5 } })
      yield* until("the delivery", () => receiver.requests.length === 1)
      const [request] = receiver.requests
      assert.strictEqual(request!.url, "https://hooks.example.com/parley")
      assert.strictEqual(
        text(request!),
        JSON.stringify({
          event: "project.event",
          project_id: principal.project.id,
          data: { id: event.id, name: "order.paid", occurred_at: event.occurred_at, conversation_id: null, properties: { total: 5 } }
        })
      )
      const { "x-idempotency-key": key, ...headers } = request!.headers
      assert.match(key!, UUID)
      assert.deepStrictEqual(headers, {
        "x-tenant": "acme",
        "content-type": "application/json",
        "user-agent": "Parley-Webhooks/0.1.0",
        "x-webhook-event": "project.event",
        "x-webhook-payload-version": "v2",
        "x-webhook-signature": hmac(request!.body)
      })
      yield* untilEffect("the log to say delivered", Effect.map(logOf(principal), ([d]) => d?.status === "delivered"))
      const slice = yield* deliveries.list(principal, {}, { mode: "cursor", limit: 10 })
      assert.strictEqual(slice.items.length, 1)
      const { attempts, delivery } = yield* deliveries.get(principal, slice.items[0]!.id)
      assert.deepStrictEqual(
        [delivery.status, delivery.response_status, delivery.attempt_count, delivery.delivered_at, delivery.error_message],
        ["delivered", 200, 1, iso(START), null]
      )
      assert.deepStrictEqual([delivery.webhook_id, delivery.event, delivery.idempotency_key], [webhook.id, "project.event", key])
      assert.strictEqual(Buffer.from(delivery.body, "base64").toString("utf8"), text(request!))
      assert.deepStrictEqual(attempts.map((a) => [a.attempt, a.attempted_at, a.response_status, a.duration_ms, a.error]), [
        [1, iso(START), 200, 0, null]
      ])
    })))

  it.effect("retries on the standard schedule (now, +10 s, +40 s) with one idempotency key, then fails for good", () =>
    run(Effect.gen(function*() {
      const receiver = yield* MemoryWebhookReceiver
      receiver.respondWith(() => Effect.succeed({ status: 500, body: "boom" }))
      const principal = yield* newPrincipal
      yield* (yield* Webhooks).create(principal, hook())
      yield* (yield* Events).emit(principal.project.id, { name: "order.paid" })
      yield* until("attempt 1", () => receiver.requests.length === 1)
      yield* TestClock.adjust(9_999)
      yield* settle
      assert.strictEqual(receiver.requests.length, 1, "not before 10 s")
      yield* TestClock.adjust(1)
      yield* until("attempt 2", () => receiver.requests.length === 2)
      yield* TestClock.adjust(39_999)
      yield* settle
      assert.strictEqual(receiver.requests.length, 2, "not before 40 s more")
      yield* TestClock.adjust(1)
      yield* until("attempt 3", () => receiver.requests.length === 3)
      yield* untilEffect("the failure to be final", Effect.map(logOf(principal), ([d]) => d?.status === "failed"))
      yield* TestClock.adjust(3_600_000)
      yield* settle
      assert.strictEqual(receiver.requests.length, 3, "three attempts in all")
      assert.deepStrictEqual(receiver.requests.map((r) => r.at - START), [0, 10_000, 50_000])
      assert.strictEqual(new Set(receiver.requests.map((r) => r.headers["x-idempotency-key"])).size, 1)
      assert.strictEqual(new Set(receiver.requests.map(text)).size, 1, "the same bytes every time")
      for (const r of receiver.requests) assert.strictEqual(r.headers["x-webhook-signature"], hmac(r.body))

      const deliveries = yield* WebhookDeliveries
      const [listed] = (yield* deliveries.list(principal, {}, { mode: "cursor", limit: 10 })).items
      assert.deepStrictEqual(
        [listed!.status, listed!.attempt_count, listed!.response_status, listed!.error_message, listed!.failed_at, listed!.next_attempt_at],
        ["failed", 3, 500, "boom", iso(START + 50_000), null]
      )
      const { attempts } = yield* deliveries.get(principal, listed!.id)
      assert.deepStrictEqual(attempts.map((a) => [a.attempted_at, a.response_status, a.error]), [
        [iso(START), 500, "boom"],
        [iso(START + 10_000), 500, "boom"],
        [iso(START + 50_000), 500, "boom"]
      ])
      assert.strictEqual((yield* deliveries.list(principal, { errors_only: true }, { mode: "cursor", limit: 10 })).items.length, 1)
    })))

  it.effect("retries on the extended schedule: 8 attempts over about 8.7 hours", () =>
    run(Effect.gen(function*() {
      const receiver = yield* MemoryWebhookReceiver
      receiver.respondWith(() => Effect.succeed({ status: 503, body: "" }))
      const principal = yield* newPrincipal
      yield* (yield* Webhooks).create(principal, hook({ retry_schedule: "extended" }))
      yield* (yield* Events).emit(principal.project.id, { name: "order.paid" })
      const offsets = [0, 10_000, 50_000, 140_000, 440_000, 2_240_000, 9_440_000, 31_040_000]
      for (const [i, offset] of offsets.entries()) {
        yield* TestClock.setTime(START + offset)
        yield* until(`attempt ${i + 1}`, () => receiver.requests.length === i + 1)
      }
      yield* TestClock.adjust(86_400_000)
      yield* settle
      assert.deepStrictEqual(receiver.requests.map((r) => r.at - START), offsets)
      const [listed] = (yield* (yield* WebhookDeliveries).list(principal, {}, { mode: "cursor", limit: 10 })).items
      assert.deepStrictEqual([listed!.status, listed!.attempt_count, listed!.error_message], ["failed", 8, "HTTP 503"])
    })))

  it.effect("gives an attempt 10 s: a slower answer is a timeout, retried 10 s later", () =>
    run(Effect.gen(function*() {
      const receiver = yield* MemoryWebhookReceiver
      receiver.respondWith(() => Effect.as(Effect.sleep(10_001), { status: 200, body: "" }))
      const principal = yield* newPrincipal
      yield* (yield* Webhooks).create(principal, hook())
      yield* (yield* Events).emit(principal.project.id, { name: "order.paid" })
      yield* until("attempt 1", () => receiver.requests.length === 1)
      receiver.respondWith(() => Effect.succeed({ status: 204, body: "" }))
      yield* TestClock.adjust(10_000)
      yield* settle
      const deliveries = yield* WebhookDeliveries
      const [pending] = (yield* deliveries.list(principal, {}, { mode: "cursor", limit: 10 })).items
      assert.deepStrictEqual(
        [pending!.status, pending!.error_message, pending!.response_status, pending!.next_attempt_at],
        ["pending", "Timed out after 10 s", null, iso(START + 20_000)]
      )
      yield* TestClock.adjust(10_000)
      yield* until("attempt 2", () => receiver.requests.length === 2)
      yield* settle
      const { attempts, delivery } = yield* deliveries.get(principal, pending!.id)
      assert.deepStrictEqual([delivery.status, delivery.response_status, delivery.error_message], ["delivered", 204, null])
      assert.deepStrictEqual(attempts.map((a) => [a.duration_ms, a.response_status, a.error]), [
        [10_000, null, "Timed out after 10 s"],
        [0, 204, null]
      ])
    })))

  it.effect("sends message events to the subscribed webhooks of their number only, in each one's payload version", () =>
    run(Effect.gen(function*() {
      const receiver = yield* MemoryWebhookReceiver
      const webhooks = yield* Webhooks
      const principal = yield* newPrincipal
      const at = (path: string) => `https://hooks.example.com/${path}`
      yield* webhooks.create(principal, hook({ url: at("v2"), events: ["msg.message.received"] }), { phoneNumberId: PNID })
      yield* webhooks.create(
        principal,
        hook({ url: at("v1"), events: ["msg.message.received", "msg.message.sent"], payload_version: "v1" }),
        { phoneNumberId: PNID }
      )
      yield* webhooks.create(principal, hook({ url: at("other-number"), events: ["msg.message.received"] }), {
        phoneNumberId: OTHER_PNID
      })
      yield* webhooks.create(principal, hook({ url: at("read-only"), events: ["msg.message.read"] }), { phoneNumberId: PNID })
      yield* webhooks.create(principal, hook({ url: at("paused"), events: ["msg.message.received"], active: false }), {
        phoneNumberId: PNID
      })
      yield* webhooks.create(principal, hook({ url: at("project") }))
      const data = messageData(1)
      yield* appendMsg(principal.project.id, "msg.message.received", data)
      yield* until("two deliveries", () => receiver.requests.length === 2)
      yield* settle
      assert.strictEqual(receiver.requests.length, 2)
      const byUrl = new Map(receiver.requests.map((r) => [r.url, r]))
      assert.strictEqual(text(byUrl.get(at("v2"))!), JSON.stringify(data))
      assert.strictEqual(
        text(byUrl.get(at("v1"))!),
        JSON.stringify({ message: data.message, conversation: data.conversation, msg_config: msgConfig })
      )
      assert.strictEqual(byUrl.get(at("v1"))!.headers["x-webhook-payload-version"], "v1")
      assert.strictEqual(byUrl.get(at("v2"))!.headers["x-webhook-payload-version"], "v2")
      const listed = (yield* (yield* WebhookDeliveries).list(principal, {}, { mode: "cursor", limit: 10 })).items
      assert.deepStrictEqual(
        listed.map((d) => [d.event, d.msg_config_id, d.phone_number_id, d.conversation_phone_number]),
        [
          ["msg.message.received", "cfg-1", PNID, "15550001111"],
          ["msg.message.received", "cfg-1", PNID, "15550001111"]
        ]
      )
      assert.notStrictEqual(listed[0]!.idempotency_key, listed[1]!.idempotency_key, "a key per webhook")
    })))

  it.effect("sends number lifecycle events to project webhooks, with the v1 legacy twin msg.config.created", () =>
    run(Effect.gen(function*() {
      const receiver = yield* MemoryWebhookReceiver
      const webhooks = yield* Webhooks
      const principal = yield* newPrincipal
      yield* webhooks.create(principal, hook({ events: ["msg.phone_number.created", "msg.config.created"] }))
      const data = { phone_number_id: PNID, project: { id: principal.project.id }, customer: { id: "cus-1" } }
      yield* appendMsg(principal.project.id, "msg.phone_number.created", data, null)
      yield* until("two deliveries", () => receiver.requests.length === 2)
      const byEvent = new Map(receiver.requests.map((r) => [r.headers["x-webhook-event"], r]))
      assert.strictEqual(text(byEvent.get("msg.phone_number.created")!), JSON.stringify(data))
      assert.strictEqual(
        text(byEvent.get("msg.config.created")!),
        JSON.stringify({ msg_config: msgConfig, project: data.project, customer: data.customer })
      )
    })))

  it.effect("delivers one domain event once per webhook when its job runs again; a repeat first run sends the same key", () =>
    run(Effect.gen(function*() {
      const receiver = yield* MemoryWebhookReceiver
      const deliveries = yield* WebhookDeliveries
      const principal = yield* newPrincipal
      yield* (yield* Webhooks).create(principal, hook({ events: ["msg.message.received"] }), { phoneNumberId: PNID })
      const entry = receivedEntry("dom-1", principal.project.id)
      yield* deliveries.dispatch(entry)
      yield* until("the delivery", () => receiver.requests.length === 1)
      // The relay job retried (its entries may have been dispatched): the stored delivery stands, nothing is sent.
      yield* deliveries.dispatch(entry, 2)
      yield* deliveries.dispatch(entry, 3)
      yield* settle
      assert.strictEqual(receiver.requests.length, 1)
      const [delivery] = (yield* deliveries.list(principal, {}, { mode: "cursor", limit: 10 })).items
      // Dispatched again as if for the first time (a relay took it twice): the first attempt comes before the
      // store finds the delivery, so it goes again with the same key; the log keeps one delivery and its attempt.
      yield* deliveries.dispatch(entry)
      yield* settle
      assert.strictEqual(receiver.requests.length, 2)
      const keys = receiver.requests.map((r) => r.headers["x-idempotency-key"])
      assert.deepStrictEqual(keys, [delivery!.idempotency_key, delivery!.idempotency_key])
      assert.deepStrictEqual((yield* deliveries.list(principal, {}, { mode: "cursor", limit: 10 })).items, [delivery!])
      assert.strictEqual((yield* deliveries.get(principal, delivery!.id)).attempts.length, 1)
    })))

  it.effect("a dispatch stopped during its first attempt stores nothing; its job's retry sends the same key", () =>
    run(Effect.gen(function*() {
      const receiver = yield* MemoryWebhookReceiver
      receiver.respondWith(() => Effect.never)
      const deliveries = yield* WebhookDeliveries
      const principal = yield* newPrincipal
      yield* (yield* Webhooks).create(principal, hook({ events: ["msg.message.received"] }), { phoneNumberId: PNID })
      const entry = receivedEntry("dom-2", principal.project.id)
      // The host stops mid-attempt: the dispatch (and so its relay job) never finished.
      const first = yield* Effect.forkChild(deliveries.dispatch(entry))
      yield* until("attempt 1", () => receiver.requests.length === 1)
      yield* Fiber.interrupt(first)
      assert.deepStrictEqual(yield* logOf(principal), [])
      receiver.respondWith(() => Effect.succeed({ status: 200, body: "" }))
      yield* deliveries.dispatch(entry, 2)
      yield* until("attempt 2", () => receiver.requests.length === 2)
      const [a, b] = receiver.requests
      assert.strictEqual(b!.headers["x-idempotency-key"], a!.headers["x-idempotency-key"])
      assert.deepStrictEqual(b!.body, a!.body)
      const delivered = yield* untilEffect(
        "delivered",
        Effect.map(logOf(principal), (log) => log.length === 1 && log[0]!.status === "delivered")
      ).pipe(Effect.andThen(logOf(principal)))
      assert.strictEqual(delivered[0]!.idempotency_key, a!.headers["x-idempotency-key"])
      assert.strictEqual((yield* deliveries.get(principal, delivered[0]!.id)).attempts.length, 1)
    })))

  describe("buffering", () => {
    it.effect("batches per conversation: each message restarts the window; the batch is one signed delivery", () =>
      run(Effect.gen(function*() {
        const receiver = yield* MemoryWebhookReceiver
        const principal = yield* newPrincipal
        yield* (yield* Webhooks).create(
          principal,
          hook({ events: ["msg.message.received", "msg.message.sent"], buffer_enabled: true, buffer_window_seconds: 5 }),
          { phoneNumberId: PNID }
        )
        const projectId = principal.project.id
        yield* appendMsg(projectId, "msg.message.received", messageData(1, "conv-1"))
        yield* settle
        yield* TestClock.adjust(3_000)
        yield* appendMsg(projectId, "msg.message.received", messageData(2, "conv-1"))
        yield* appendMsg(projectId, "msg.message.sent", messageData(3, "conv-1"))
        yield* until("the unbuffered event", () => receiver.requests.length === 1)
        assert.strictEqual(receiver.requests[0]!.headers["x-webhook-event"], "msg.message.sent")
        assert.isUndefined(receiver.requests[0]!.headers["x-webhook-batch"])
        yield* TestClock.adjust(1_000)
        yield* appendMsg(projectId, "msg.message.received", messageData(4, "conv-2"))
        yield* settle
        // conv-1's window restarted at +3 s: nothing at +5 s.
        yield* TestClock.adjust(3_999)
        yield* settle
        assert.strictEqual(receiver.requests.length, 1)
        yield* TestClock.adjust(1)
        yield* until("conv-1's batch", () => receiver.requests.length === 2)
        yield* TestClock.adjust(1_000)
        yield* until("conv-2's batch", () => receiver.requests.length === 3)
        const [, first, second] = receiver.requests
        assert.deepStrictEqual([first!.at - START, second!.at - START], [8_000, 9_000])
        assert.strictEqual(
          text(first!),
          JSON.stringify({ type: "msg.message.received", batch: true, data: [messageData(1, "conv-1"), messageData(2, "conv-1")] })
        )
        assert.deepStrictEqual(json(second!), { type: "msg.message.received", batch: true, data: [messageData(4, "conv-2")] })
        assert.deepStrictEqual(
          [first!.headers["x-webhook-event"], first!.headers["x-webhook-batch"], first!.headers["x-batch-size"]],
          ["msg.message.received", "true", "2"]
        )
        assert.strictEqual(second!.headers["x-batch-size"], "1", "with buffering on, a single message is a batch too")
        assert.strictEqual(first!.headers["x-webhook-signature"], hmac(first!.body))
        const listed = (yield* (yield* WebhookDeliveries).list(principal, { event: "msg.message.received" }, {
          mode: "cursor",
          limit: 10
        })).items
        assert.strictEqual(listed.length, 2, "a batch is one delivery")
      })))

    it.effect("orders a batch by when its events happened, whatever order they were dispatched in", () =>
      run(Effect.gen(function*() {
        const receiver = yield* MemoryWebhookReceiver
        const deliveries = yield* WebhookDeliveries
        const principal = yield* newPrincipal
        yield* (yield* Webhooks).create(
          principal,
          hook({ events: ["msg.message.received"], buffer_enabled: true, buffer_window_seconds: 1 }),
          { phoneNumberId: PNID }
        )
        const entry = (n: number, at: number) => ({
          id: `dom-${n}`,
          project_id: principal.project.id,
          type: "msg.message.received",
          payload: { data: messageData(n), msg_config: msgConfig, conversation_phone_number: null },
          created_at: iso(at)
        })
        yield* deliveries.dispatch(entry(2, START - 10))
        yield* deliveries.dispatch(entry(1, START - 20))
        yield* deliveries.dispatch(entry(3, START - 10))
        yield* TestClock.adjust(1_000)
        yield* until("the batch", () => receiver.requests.length === 1)
        assert.deepStrictEqual(json(receiver.requests[0]!).data.map((m: any) => m.message.id), ["wamid.1", "wamid.2", "wamid.3"])
      })))

    it.effect("sends a full buffer at once", () =>
      run(Effect.gen(function*() {
        const receiver = yield* MemoryWebhookReceiver
        const principal = yield* newPrincipal
        yield* (yield* Webhooks).create(
          principal,
          hook({ events: ["msg.message.received"], buffer_enabled: true, buffer_window_seconds: 10, max_buffer_size: 3 }),
          { phoneNumberId: PNID }
        )
        for (const n of [1, 2, 3, 4]) yield* appendMsg(principal.project.id, "msg.message.received", messageData(n, "full"))
        yield* until("the full batch", () => receiver.requests.length === 1)
        assert.strictEqual(receiver.requests[0]!.at, START)
        assert.deepStrictEqual(json(receiver.requests[0]!).data.map((m: any) => m.message.id), ["wamid.1", "wamid.2", "wamid.3"])
        // The fourth opened a new buffer, sent when its window runs out.
        yield* TestClock.adjust(10_000)
        yield* until("the next batch", () => receiver.requests.length === 2)
        assert.deepStrictEqual(json(receiver.requests[1]!).data.map((m: any) => m.message.id), ["wamid.4"])
        assert.notStrictEqual(receiver.requests[0]!.headers["x-idempotency-key"], receiver.requests[1]!.headers["x-idempotency-key"])
      })))

    it.effect("sends a buffer 120 s after its first message, however busy the conversation", () =>
      run(Effect.gen(function*() {
        const receiver = yield* MemoryWebhookReceiver
        const principal = yield* newPrincipal
        yield* (yield* Webhooks).create(
          principal,
          hook({ events: ["msg.message.received"], buffer_enabled: true, buffer_window_seconds: 10, max_buffer_size: 100 }),
          { phoneNumberId: PNID }
        )
        // One message every 8 s: a 10 s window never runs out.
        for (let n = 0; n < 15; n++) {
          yield* appendMsg(principal.project.id, "msg.message.received", messageData(n, "chatty"))
          yield* settle
          yield* TestClock.adjust(8_000)
          yield* settle
        }
        assert.strictEqual(receiver.requests.length, 1)
        assert.strictEqual(receiver.requests[0]!.at - START, 120_000)
        assert.strictEqual(json(receiver.requests[0]!).data.length, 15)
      })))
  })
  it.effect("forwards upstream payloads byte for byte, keyed by their hash, without an event name", () =>
    run(Effect.gen(function*() {
      const receiver = yield* MemoryWebhookReceiver
      const principal = yield* newPrincipal
      yield* (yield* Webhooks).create(principal, hook({ kind: "upstream", events: [] }), { phoneNumberId: PNID })
      yield* (yield* Webhooks).create(principal, hook({ events: ["msg.message.received"] }), { phoneNumberId: PNID })
      // Bytes a re-serialization would change: spacing, key order, escapes.
      const raw = Buffer.from(`{"object":"whatsapp_business_account" ,"entry":[{"id":"1","z":1,"a":"caf\u00e9 ☕"}]}\n`)
      const outbox = yield* Outbox
      yield* outbox.append({
        id: "dom-upstream",
        project_id: principal.project.id,
        type: "upstream.payload",
        payload: { phone_number_ids: [PNID, OTHER_PNID], body_base64: raw.toString("base64") },
        created_at: iso(START)
      })
      yield* until("the forward", () => receiver.requests.length === 1)
      yield* settle
      assert.strictEqual(receiver.requests.length, 1, "only the upstream webhook")
      const [request] = receiver.requests
      assert.isTrue(Buffer.from(request!.body).equals(raw))
      assert.strictEqual(request!.headers["x-idempotency-key"], createHash("sha256").update(raw).digest("hex"))
      assert.strictEqual(request!.headers["x-webhook-signature"], hmac(raw))
      assert.isUndefined(request!.headers["x-webhook-event"])
      assert.isUndefined(request!.headers["x-webhook-payload-version"])
      const [logged] = yield* logOf(principal)
      assert.deepStrictEqual([logged!.event, logged!.phone_number_id], ["upstream", PNID])
    })))

  describe("auto-pause", () => {
    /** `n` project events, each delivery settled (delivered, or failed after its 50 s schedule). */
    const deliverMany = (principal: Principal, n: number) =>
      Effect.gen(function*() {
        const events = yield* Events
        for (let i = 0; i < n; i++) yield* events.emit(principal.project.id, { name: "tick" })
        yield* settle
        yield* TestClock.adjust(10_000)
        yield* settle
        yield* TestClock.adjust(40_000)
        yield* settle
      })

    it.effect("pauses after more than 85 % of at least 20 finished deliveries failed; resuming opens a fresh window", () =>
      run(Effect.gen(function*() {
        const receiver = yield* MemoryWebhookReceiver
        const webhooks = yield* Webhooks
        const principal = yield* newPrincipal
        const watched = yield* webhooks.create(principal, hook({ url: "https://a.example.com/", auto_pause: true }))
        const unwatched = yield* webhooks.create(principal, hook({ url: "https://b.example.com/" }))
        yield* deliverMany(principal, 3)
        receiver.respondWith(() => Effect.succeed({ status: 500, body: "down" }))
        yield* deliverMany(principal, 17)
        // 17 of 20 is exactly 85 %: not more.
        assert.isTrue((yield* webhooks.get(principal, watched.id)).active)
        // A test delivery never counts.
        const tested = yield* webhooks.test(principal, watched.id, undefined)
        assert.isFalse(tested.success)
        assert.isTrue((yield* webhooks.get(principal, watched.id)).active)
        yield* deliverMany(principal, 1)
        const paused = yield* webhooks.get(principal, watched.id)
        assert.deepStrictEqual([paused.active, paused.paused_at, paused.pause_reason], [
          false,
          // Three rounds of 50 s: the last failure is final at +150 s.
          iso(START + 150_000),
          "failure_rate"
        ])
        assert.isTrue((yield* webhooks.get(principal, unwatched.id)).active, "auto_pause is opt-in")

        // While paused nothing new is created for it.
        const before = (yield* logOf(principal)).filter((d) => d.webhook_id === watched.id).length
        receiver.respondWith(() => Effect.succeed({ status: 200, body: "" }))
        yield* deliverMany(principal, 2)
        assert.strictEqual((yield* logOf(principal)).filter((d) => d.webhook_id === watched.id).length, before)

        const resumed = yield* webhooks.update(principal, watched.id, { active: true })
        assert.deepStrictEqual([resumed.active, resumed.paused_at, resumed.pause_reason], [true, null, null])
        // A fresh window: the 18 failures before the resume no longer count.
        receiver.respondWith(() => Effect.succeed({ status: 500, body: "down" }))
        yield* deliverMany(principal, 19)
        assert.isTrue((yield* webhooks.get(principal, watched.id)).active)
        yield* deliverMany(principal, 1)
        assert.isFalse((yield* webhooks.get(principal, watched.id)).active)
      })))

    it.effect("counts only the last 15 minutes", () =>
      run(Effect.gen(function*() {
        const receiver = yield* MemoryWebhookReceiver
        const webhooks = yield* Webhooks
        const principal = yield* newPrincipal
        const watched = yield* webhooks.create(principal, hook({ auto_pause: true }))
        receiver.respondWith(() => Effect.succeed({ status: 500, body: "down" }))
        yield* deliverMany(principal, 19)
        yield* TestClock.adjust(15 * 60_000)
        yield* deliverMany(principal, 19)
        assert.isTrue((yield* webhooks.get(principal, watched.id)).active, "19 in each window")
        yield* deliverMany(principal, 1)
        assert.isFalse((yield* webhooks.get(principal, watched.id)).active)
      })))
  })

  it.effect("retries a failed delivery once more with the same key; refuses other deliveries", () =>
    run(Effect.gen(function*() {
      const receiver = yield* MemoryWebhookReceiver
      const deliveries = yield* WebhookDeliveries
      const principal = yield* newPrincipal
      const webhook = yield* (yield* Webhooks).create(principal, hook())
      receiver.respondWith(() => Effect.succeed({ status: 502, body: "" }))
      yield* (yield* Events).emit(principal.project.id, { name: "order.paid" })
      yield* TestClock.adjust(50_000)
      yield* untilEffect("the failure", Effect.map(logOf(principal), ([d]) => d?.status === "failed"))
      const [failed] = yield* logOf(principal)
      receiver.respondWith(() => Effect.succeed({ status: 200, body: "" }))
      const retried = yield* deliveries.retry(principal, failed!.id)
      assert.deepStrictEqual([retried.status, retried.failed_at, retried.next_attempt_at], ["pending", null, iso(START + 50_000)])
      yield* until("the retry", () => receiver.requests.length === 4)
      yield* untilEffect("delivered", Effect.map(logOf(principal), ([d]) => d?.status === "delivered"))
      assert.strictEqual(new Set(receiver.requests.map((r) => r.headers["x-idempotency-key"])).size, 1)
      const { attempts, delivery } = yield* deliveries.get(principal, failed!.id)
      assert.deepStrictEqual([delivery.attempt_count, delivery.response_status, attempts.length], [4, 200, 4])
      const refusal = (id: string) => Effect.map(Effect.flip(deliveries.retry(principal, id)), (e) => [e._tag, e.error])
      assert.deepStrictEqual(yield* refusal(failed!.id), ["Unprocessable", "Only failed deliveries can be retried; this one is delivered"])
      assert.deepStrictEqual(yield* refusal("nope"), ["NotFound", "Webhook delivery not found"])
      const other = yield* newPrincipal
      assert.strictEqual((yield* Effect.flip(deliveries.retry(other, failed!.id)))._tag, "NotFound")
      receiver.respondWith(() => Effect.succeed({ status: 500, body: "" }))
      const tested = yield* (yield* Webhooks).test(principal, webhook.id, undefined)
      assert.deepStrictEqual(yield* refusal(tested.delivery_id), ["Unprocessable", "Test deliveries cannot be retried"])
    })))

  it.effect("sends a test delivery once, now: a sample payload marked X-Webhook-Test, logged", () =>
    run(Effect.gen(function*() {
      const receiver = yield* MemoryWebhookReceiver
      const webhooks = yield* Webhooks
      const principal = yield* newPrincipal
      const webhook = yield* webhooks.create(principal, hook({ events: ["msg.message.failed", "msg.message.received"], payload_version: "v1" }), {
        phoneNumberId: PNID
      })
      const ok = yield* webhooks.test(principal, webhook.id, undefined)
      assert.deepStrictEqual(ok, { success: true, response_status: 200, delivery_id: ok.delivery_id })
      const [request] = receiver.requests
      assert.deepStrictEqual(
        [request!.headers["x-webhook-test"], request!.headers["x-webhook-event"], request!.headers["x-webhook-payload-version"]],
        ["true", "msg.message.failed", "v1"]
      )
      const body = json(request!)
      assert.deepStrictEqual(Object.keys(body), ["message", "conversation", "msg_config"])
      assert.strictEqual(body.message.ext.statuses[0].errors[0].code, 131047)
      assert.strictEqual(request!.headers["x-webhook-signature"], hmac(request!.body))
      receiver.respondWith(() => Effect.succeed({ status: 404, body: "no such hook" }))
      const refused = yield* webhooks.test(principal, webhook.id, "msg.conversation.ended")
      assert.deepStrictEqual(refused, { success: false, response_status: 404, error: "no such hook", delivery_id: refused.delivery_id })
      assert.deepStrictEqual(Object.keys(json(receiver.requests[1]!)), ["conversation", "reason", "msg_config"])
      yield* TestClock.adjust(3_600_000)
      yield* settle
      assert.strictEqual(receiver.requests.length, 2, "no retries")
      const logged = yield* logOf(principal)
      assert.deepStrictEqual(logged.map((d) => [d.event, d.status, d.attempt_count]), [
        ["msg.conversation.ended", "failed", 1],
        ["msg.message.failed", "delivered", 1]
      ])
      const wrongScope = yield* Effect.flip(webhooks.test(principal, webhook.id, "project.event"))
      assert.strictEqual(wrongScope.error, "project.event is a project event: phone number webhooks cannot subscribe to it")
    })))

  it.effect("sweeps up an attempt whose job was lost: delivered within two minutes, with its own key", () =>
    run(Effect.gen(function*() {
      const receiver = yield* MemoryWebhookReceiver
      const principal = yield* newPrincipal
      const webhook = yield* (yield* Webhooks).create(principal, hook())
      // As if a host died between committing the delivery and queuing its job.
      const repo = yield* WebhookDeliveriesRepo
      yield* repo.insert({
        id: "lost-1",
        project_id: principal.project.id,
        webhook_id: webhook.id,
        webhook_url: webhook.url,
        event: "project.event",
        status: "pending",
        response_status: null,
        delivered_at: null,
        failed_at: null,
        last_attempt_at: null,
        next_attempt_at: iso(START),
        attempt_count: 0,
        max_attempts: 3,
        retry_schedule: "standard",
        error_message: null,
        created_at: iso(START),
        msg_config_id: null,
        phone_number_id: null,
        conversation_phone_number: null,
        idempotency_key: "4a8a7b4e-3d4c-4f5e-8a9b-0c1d2e3f4a5b",
        payload_version: "v2",
        batch_size: null,
        test: false,
        source_key: "lost-source",
        body: Buffer.from(`{"event":"project.event"}`).toString("base64")
      })
      yield* TestClock.adjust(60_000)
      yield* settle
      assert.strictEqual(receiver.requests.length, 0, "not before it is a minute late")
      yield* TestClock.adjust(60_000)
      yield* until("the swept attempt", () => receiver.requests.length === 1)
      assert.strictEqual(receiver.requests[0]!.headers["x-idempotency-key"], "4a8a7b4e-3d4c-4f5e-8a9b-0c1d2e3f4a5b")
      yield* untilEffect("delivered", Effect.map(logOf(principal), ([d]) => d?.status === "delivered"))
      yield* TestClock.adjust(600_000)
      yield* settle
      assert.strictEqual(receiver.requests.length, 1, "swept once")
    })))

  it.effect("checks the address again at delivery time, and fails deliveries of a deleted webhook", () =>
    run(Effect.gen(function*() {
      const receiver = yield* MemoryWebhookReceiver
      const webhooks = yield* Webhooks
      const principal = yield* newPrincipal
      const webhook = yield* webhooks.create(principal, hook({ url: "https://moving.example.com/hook" }))
      receiver.setAddresses("moving.example.com", ["10.1.2.3"])
      yield* (yield* Events).emit(principal.project.id, { name: "order.paid" })
      yield* untilEffect("the first attempt", Effect.map(logOf(principal), ([d]) => d?.attempt_count === 1))
      const [attempted] = yield* logOf(principal)
      assert.deepStrictEqual([attempted!.status, attempted!.error_message], [
        "pending",
        "moving.example.com resolves to a private address"
      ])
      assert.strictEqual(receiver.requests.length, 0)
      yield* webhooks.delete(principal, webhook.id)
      yield* TestClock.adjust(10_000)
      yield* untilEffect("the failure", Effect.map(logOf(principal), ([d]) => d?.status === "failed"))
      const [failed] = yield* logOf(principal)
      assert.deepStrictEqual([failed!.error_message, failed!.attempt_count, failed!.webhook_url], [
        "Webhook was deleted",
        1,
        "https://moving.example.com/hook"
      ])
      assert.deepStrictEqual(
        [(yield* Effect.flip(webhooks.create(principal, hook({ url: "https://moving.example.com/x" })))).error],
        ["url host moving.example.com resolves to a private, loopback or link-local address"]
      )
    })))
})

describe("private addresses", () => {
  it("refuses loopback, private, link-local, CGNAT, reserved and mapped addresses; accepts public ones", () => {
    const refused = ["127.0.0.1", "10.0.0.1", "172.16.5.4", "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0",
      "224.0.0.1", "::1", "::", "fe80::1", "fc00::1", "::ffff:10.0.0.1", "::ffff:8.8.8.8", "[::1]", "localhost", ""]
    for (const address of refused) assert.isTrue(isPrivateAddress(address), address)
    for (const address of ["8.8.8.8", "93.184.215.14", "1.1.1.1", "2606:4700:4700::1111", "[2606:4700:4700::1111]"]) {
      assert.isFalse(isPrivateAddress(address), address)
    }
  })
})

