/**
 * `msg.conversation.inactive` on memory ports with the relay, the job queue
 * and a scripted receiver on the TestClock: one delivery after the quiet
 * period with the exact v2 and v1 bodies, none when a message (either
 * direction) comes first, re-armed by the next message, each webhook on its
 * own minutes, nothing for paused or unsubscribed webhooks.
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Effect, Layer, Option } from "effect"
import { TestClock } from "effect/testing"
import { v2Conversation } from "../src/messaging/DomainEvents.ts"
import type { MessageRecord } from "../src/messaging/Message.ts"
import { Messaging } from "../src/messaging/Messaging.ts"
import { type Principal, Projects } from "../src/projects/Projects.ts"
import { configRef, type MessageConfigRecord } from "../src/messaging/numbers/MessageConfig.ts"
import { MessageConfigs } from "../src/messaging/numbers/MessageConfigs.ts"
import { MemoryWebhookReceiver, type ReceivedWebhookRequest } from "../src/testing/index.ts"
import { WebhookDeliveries } from "../src/webhooks/Deliveries.ts"
import type { WebhookInput } from "../src/webhooks/Webhook.ts"
import { Webhooks } from "../src/webhooks/Webhooks.ts"
import { webhooksEnvironment } from "./webhooks.support.ts"

const START = Date.UTC(2026, 2, 4, 12, 0, 0)
const MINUTE = 60_000
const CONTACT = "15550001111"

/** Every phone number id is one of the project's (the simulated number's id is the config's). */
const Env = webhooksEnvironment(
  (_projectId, kind) => Effect.succeed(kind === "phone_number" ? Option.some("+1 555") : Option.none()),
  Layer.empty
)

const run = <A, E>(body: Effect.Effect<A, E, Layer.Success<typeof Env>>) =>
  TestClock.setTime(START).pipe(Effect.andThen(Effect.provide(body, Env)))

/** Lets everything woken run (relay, timers, attempts). */
const settle = Effect.yieldNow.pipe(Effect.repeat({ times: 500 }))
const advance = (ms: number) => Effect.andThen(TestClock.adjust(ms), settle)

const text = (r: ReceivedWebhookRequest) => Buffer.from(r.body).toString("utf8")
const json = (r: ReceivedWebhookRequest) => JSON.parse(text(r)) as any

const given = Effect.gen(function*() {
  const project = yield* (yield* Projects).create("Acme")
  const principal = { project, apiKey: { id: "key", name: "test" } } satisfies Principal
  const config = Option.getOrThrow(yield* (yield* MessageConfigs).bootstrap(project.id))
  return { principal, config }
})

const hook = (config: MessageConfigRecord, principal: Principal, overrides: Partial<WebhookInput> = {}) =>
  Effect.flatMap(Webhooks, (webhooks) =>
    webhooks.create(principal, {
      url: "https://hooks.example.com/parley",
      secret_key: "whsec_0123456789",
      events: ["msg.conversation.inactive"],
      ...overrides
    }, { phoneNumberId: config.phone_number_id }))

let inboundSeq = 0
/** An inbound text from the contact, timestamped now. */
const inbound = (config: MessageConfigRecord) =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const outcome = yield* (yield* Messaging).recordInbound(config, {
      message: {
        id: `wamid.in${++inboundSeq}`,
        from: CONTACT,
        timestamp: String(Math.floor(now / 1000)),
        type: "text",
        text: { body: "hello" }
      },
      contact: { profile: { name: "Ana" }, wa_id: CONTACT }
    })
    assert.strictEqual(outcome._tag, "Recorded")
    yield* settle
    return (outcome as { readonly message: MessageRecord }).message
  })

/** A send to the contact recorded by the proxy (no domain event of its own at send time). */
const outbound = (config: MessageConfigRecord) =>
  Effect.gen(function*() {
    const { message } = yield* (yield* Messaging).recordOutbound(config, {
      envelope: { messaging_product: "whatsapp", to: CONTACT, type: "text", text: { body: "hi there" } }
    })
    yield* settle
    return message
  })

const expectedV2 = (projectId: string, config: MessageConfigRecord, message: MessageRecord, minutes: number) =>
  Effect.gen(function*() {
    const conversation = yield* (yield* Messaging).getConversation(projectId, message.conversation_id)
    return {
      conversation: JSON.parse(JSON.stringify(v2Conversation(conversation))),
      since_message: {
        id: message.id,
        msg_message_id: message.network_id,
        direction: message.direction,
        created_at: message.created_at
      },
      inactivity: { minutes },
      phone_number_id: config.phone_number_id
    }
  })

describe("msg.conversation.inactive", () => {
  it.effect("fires once after the quiet period with the exact v2 body, and logs the delivery", () =>
    run(Effect.gen(function*() {
      const receiver = yield* MemoryWebhookReceiver
      const { config, principal } = yield* given
      const webhook = yield* hook(config, principal, { inactivity_minutes: 5 })
      const message = yield* inbound(config)
      yield* advance(5 * MINUTE - 1_000)
      assert.strictEqual(receiver.requests.length, 0, "not before the quiet period")
      yield* advance(1_000)
      assert.strictEqual(receiver.requests.length, 1)
      const request = receiver.requests[0]!
      assert.strictEqual(request.headers["x-webhook-event"], "msg.conversation.inactive")
      assert.strictEqual(request.headers["x-webhook-payload-version"], "v2")
      const body = json(request)
      assert.deepStrictEqual(Object.keys(body), ["conversation", "since_message", "inactivity", "phone_number_id"])
      assert.deepStrictEqual(body, yield* expectedV2(principal.project.id, config, message, 5))
      yield* advance(24 * 60 * MINUTE)
      assert.strictEqual(receiver.requests.length, 1, "once per quiet period")
      const log = (yield* (yield* WebhookDeliveries).list(principal, {}, { mode: "cursor", limit: 10 })).items
      assert.deepStrictEqual(
        log.map((d) => [d.webhook_id, d.event, d.status, d.phone_number_id, d.msg_config_id, d.conversation_phone_number]),
        [[webhook.id, "msg.conversation.inactive", "delivered", config.phone_number_id, config.id, CONTACT]]
      )
    })))

  it.effect("a message in either direction before the end holds it off; the next quiet period fires again", () =>
    run(Effect.gen(function*() {
      const receiver = yield* MemoryWebhookReceiver
      const { config, principal } = yield* given
      yield* hook(config, principal, { inactivity_minutes: 5 })
      yield* inbound(config)
      yield* advance(3 * MINUTE)
      const reply = yield* outbound(config)
      yield* advance(3 * MINUTE)
      assert.strictEqual(receiver.requests.length, 0, "the reply restarted the quiet period")
      yield* advance(2 * MINUTE)
      assert.strictEqual(receiver.requests.length, 1)
      const first = json(receiver.requests[0]!)
      assert.deepStrictEqual(first.since_message, {
        id: reply.id,
        msg_message_id: null,
        direction: "outbound",
        created_at: new Date(START + 3 * MINUTE).toISOString()
      })
      // The next message re-arms it.
      yield* advance(60 * MINUTE)
      const again = yield* inbound(config)
      yield* advance(5 * MINUTE)
      assert.strictEqual(receiver.requests.length, 2)
      const second = json(receiver.requests[1]!)
      assert.deepStrictEqual(second, yield* expectedV2(principal.project.id, config, again, 5))
      assert.notStrictEqual(receiver.requests[0]!.headers["x-idempotency-key"], receiver.requests[1]!.headers["x-idempotency-key"])
    })))

  it.effect("each webhook waits its own minutes; v1 nests msg_config", () =>
    run(Effect.gen(function*() {
      const receiver = yield* MemoryWebhookReceiver
      const { config, principal } = yield* given
      yield* hook(config, principal, { url: "https://hooks.example.com/five", inactivity_minutes: 5 })
      yield* hook(config, principal, { url: "https://hooks.example.com/thirty", inactivity_minutes: 30, payload_version: "v1" })
      const message = yield* inbound(config)
      yield* advance(5 * MINUTE)
      assert.deepStrictEqual(receiver.requests.map((r) => r.url), ["https://hooks.example.com/five"])
      yield* advance(25 * MINUTE - 1_000)
      assert.strictEqual(receiver.requests.length, 1)
      yield* advance(1_000)
      assert.deepStrictEqual(receiver.requests.map((r) => r.url), [
        "https://hooks.example.com/five",
        "https://hooks.example.com/thirty"
      ])
      const v1 = json(receiver.requests[1]!)
      const { phone_number_id: _pnid, ...rest } = yield* expectedV2(principal.project.id, config, message, 30)
      assert.deepStrictEqual(v1, { ...rest, msg_config: configRef(config) })
      assert.deepStrictEqual(Object.keys(v1), ["conversation", "since_message", "inactivity", "msg_config"])
      assert.strictEqual(receiver.requests[1]!.headers["x-webhook-payload-version"], "v1")
    })))

  it.effect("a webhook whose minutes grew after arming waits for its new minutes; an ended conversation gets nothing", () =>
    run(Effect.gen(function*() {
      const receiver = yield* MemoryWebhookReceiver
      const webhooks = yield* Webhooks
      const { config, principal } = yield* given
      const webhook = yield* hook(config, principal, { inactivity_minutes: 5 })
      yield* inbound(config)
      yield* webhooks.update(principal, webhook.id, { inactivity_minutes: 10 })
      yield* advance(10 * MINUTE - 1_000)
      assert.strictEqual(receiver.requests.length, 0)
      yield* advance(1_000)
      assert.strictEqual(receiver.requests.length, 1)
      assert.deepStrictEqual(json(receiver.requests[0]!).inactivity, { minutes: 10 })
      // The next message, then the conversation ends before its quiet period is over.
      const next = yield* inbound(config)
      yield* (yield* Messaging).endConversation(principal.project.id, next.conversation_id, "manual")
      yield* advance(60 * MINUTE)
      assert.strictEqual(receiver.requests.length, 1)
    })))

  it.effect("paused, inactive or unsubscribed webhooks get nothing", () =>
    run(Effect.gen(function*() {
      const receiver = yield* MemoryWebhookReceiver
      const webhooks = yield* Webhooks
      const { config, principal } = yield* given
      yield* hook(config, principal, { url: "https://hooks.example.com/paused", inactivity_minutes: 5, active: false })
      const later = yield* hook(config, principal, { url: "https://hooks.example.com/later", inactivity_minutes: 5 })
      yield* hook(config, principal, { url: "https://hooks.example.com/other", events: ["msg.message.received"] })
      yield* inbound(config)
      // Paused after its timer was armed: nothing when it fires.
      yield* webhooks.update(principal, later.id, { active: false })
      yield* advance(24 * 60 * MINUTE)
      assert.deepStrictEqual(
        receiver.requests.map((r) => [r.url, r.headers["x-webhook-event"]]),
        [["https://hooks.example.com/other", "msg.message.received"]]
      )
      const log = (yield* (yield* WebhookDeliveries).list(principal, {}, { mode: "cursor", limit: 10 })).items
      assert.deepStrictEqual(log.map((d) => d.event), ["msg.message.received"])
    })))
})
