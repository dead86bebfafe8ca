/**
 * Messaging on memory ports with the network simulator in process and the
 * job queue on the TestClock: the status rank rules, the content rendition,
 * ingestion from the simulator's signed webhooks to stored messages and
 * domain events, sends recorded before the network answers, statuses that
 * overtake the send or arrive out of order, and the 24-hour conversation end.
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Effect, Exit, Layer, Option, Redacted } from "effect"
import { TestClock } from "effect/testing"
import {
  MSG_CONVERSATION_CREATED,
  MSG_CONVERSATION_ENDED,
  MSG_MESSAGE_RECEIVED,
  MESSAGING_DOMAIN_EVENTS,
  msgMessageStatusEvent,
  UPSTREAM_PAYLOAD
} from "../src/messaging/DomainEvents.ts"
import { renderInbound, replyFacts } from "../src/messaging/Content.ts"
import { UpstreamIngestion } from "../src/messaging/Ingestion.ts"
import { ConversationalSends } from "../src/messaging/ConversationalSends.ts"
import { Messaging } from "../src/messaging/Messaging.ts"
import { nextStatus } from "../src/messaging/Recording.ts"
import { Outbound } from "../src/messaging/Outbound.ts"
import { OptOuts } from "../src/guardrails/OptOuts.ts"
import { layerMessagingWorkers } from "../src/messaging/MessagingJobs.ts"
import { layerMessagingServices } from "../src/Parley.ts"
import { UpstreamSettings } from "../src/messaging/Upstream.ts"
import { hubSignature, type WebhookPayload } from "../src/network/Webhook.ts"
import { MessagingNetwork } from "../src/network/MessagingNetwork.ts"
import { MediaRepo, UpstreamInboxRepo } from "../src/messaging/MessagingRepo.ts"
import { type DomainEvent, Outbox } from "../src/ports/Outbox.ts"
import { Projects } from "../src/projects/Projects.ts"
import { Ids } from "../src/shared/Ids.ts"
import { MessageConfigs } from "../src/messaging/numbers/MessageConfigs.ts"
import { layerMemoryJobQueue, layerMemoryStorage } from "../src/testing/index.ts"
import { SimulatedUpstream, Simulator } from "../src/simulators/index.ts"

const Ports = Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layerSequential)
const Services = Layer.mergeAll(Projects.layer, layerMessagingWorkers).pipe(
  Layer.provideMerge(layerMessagingServices),
  Layer.provideMerge(SimulatedUpstream.layerSimulatorConfig),
  Layer.provideMerge(Ports)
)

// Let the fibers woken by the clock (job attempts, simulator reports) run before the test looks.
const settle = Effect.yieldNow.pipe(Effect.repeat({ times: 100 }))
const advance = (ms: number) => Effect.andThen(TestClock.adjust(ms), settle)

const encoder = new TextEncoder()
const HOUR = 3_600_000

/** A project with the simulated number connected, and what the tests reach through. */
const given = Effect.gen(function*() {
  const projects = yield* Projects
  const project = yield* projects.create("Acme")
  const config = Option.getOrThrow(yield* (yield* MessageConfigs).bootstrap(project.id))
  const settings = yield* UpstreamSettings
  const simulator = yield* Simulator.running
  const appSecret = Redacted.value(Option.getOrThrow(settings.appSecret))
  /** Posts a payload as the network does: signed raw bytes into ingestion. */
  const deliver = (payload: WebhookPayload | Uint8Array) =>
    Effect.gen(function*() {
      const raw = payload instanceof Uint8Array ? payload : encoder.encode(JSON.stringify(payload))
      yield* (yield* UpstreamIngestion).receive(raw, hubSignature(raw, appSecret))
      yield* settle
    })
  return { project, config, simulator, appSecret, deliver }
})

/** Every domain event messaging wrote, in order (taking them empties the outbox). */
const written = Effect.gen(function*() {
  return yield* (yield* Outbox).take(MESSAGING_DOMAIN_EVENTS, 1000)
})
const types = (events: ReadonlyArray<DomainEvent>) => events.map((e) => e.type)

/** One `messages` change carrying one status report, or several (the network batches them). */
const statusChange = (
  pnid: string,
  waba: string,
  status: Record<string, unknown> | ReadonlyArray<Record<string, unknown>>
): WebhookPayload => ({
  object: "whatsapp_business_account",
  entry: [{
    id: waba,
    changes: [{
      field: "messages",
      value: {
        messaging_product: "whatsapp",
        metadata: { display_phone_number: "15550100001", phone_number_id: pnid },
        statuses: Array.isArray(status) ? status : [status]
      }
    }]
  }]
})

describe("status rank (decisions 3.5)", () => {
  it("raises the rank only, never downgrades delivered or read, and lets failed move on", () => {
    assert.strictEqual(nextStatus("pending", "sent"), "sent")
    assert.strictEqual(nextStatus("sent", "read"), "read", "a read may come without delivered")
    assert.strictEqual(nextStatus("read", "delivered"), undefined)
    assert.strictEqual(nextStatus("delivered", "sent"), undefined)
    assert.strictEqual(nextStatus("sent", "failed"), "failed")
    assert.strictEqual(nextStatus("pending", "failed"), "failed")
    assert.strictEqual(nextStatus("delivered", "failed"), undefined)
    assert.strictEqual(nextStatus("read", "failed"), undefined)
    assert.strictEqual(nextStatus("failed", "sent"), "sent")
    assert.strictEqual(nextStatus("failed", "delivered"), "delivered")
    assert.strictEqual(nextStatus("failed", "failed"), undefined)
    assert.strictEqual(nextStatus("delivered", "played"), "read", "played counts as read")
    assert.strictEqual(nextStatus("sent", "deleted"), undefined, "unknown reports change nothing")
  })
})

describe("content rendition (decisions 2.10)", () => {
  const media = { filename: "photo.jpg", content_type: "image/jpeg", byte_size: 2048, url: "https://p/m/1/content" }
  const cases: Array<[string, Record<string, unknown>, string]> = [
    ["text", { type: "text", text: { body: "hi" } }, "hi"],
    ["image", { type: "image", image: { id: "1", caption: "look" } }, "look\nImage attached (photo.jpg) [Size: 2 KB, Type: image/jpeg] URL: https://p/m/1/content"],
    ["button reply", { type: "interactive", interactive: { type: "button_reply", button_reply: { id: "y", title: "Yes" } } }, "Yes"],
    ["list reply", { type: "interactive", interactive: { type: "list_reply", list_reply: { id: "r", title: "Red" } } }, "Red"],
    ["reaction", { type: "reaction", reaction: { message_id: "wamid.1", emoji: "👍" } }, "Reacted 👍"],
    ["location", { type: "location", location: { latitude: 1.5, longitude: 2, name: "Cafe" } }, "Location: Cafe (1.5, 2)"],
    ["contacts", { type: "contacts", contacts: [{ name: { formatted_name: "Bo" }, phones: [{ phone: "+1 555" }] }] }, "Contact: Bo +1 555"],
    ["button", { type: "button", button: { text: "Stop", payload: "STOP" } }, "Stop"],
    ["system", { type: "system", system: { body: "User changed number" } }, "User changed number"],
    ["unsupported", { type: "unsupported", errors: [{ code: 131051, title: "Message type unknown" }] }, "Message type unknown"]
  ]
  for (const [name, message, content] of cases) {
    it(`renders ${name}`, () => {
      assert.strictEqual(renderInbound(message, message["type"] === "image" ? media : null).content, content)
    })
  }

  it("names the option an interactive reply chose, for functions' msg_context (decisions 10.5.5)", () => {
    assert.deepStrictEqual(replyFacts({ interactive: { type: "button_reply", button_reply: { id: "y", title: "Yes" } } }), {
      reply_option_id: "y",
      reply_option_title: "Yes",
      interactive_type: "button_reply",
      interactive_data: { id: "y", title: "Yes" }
    })
    assert.deepStrictEqual(replyFacts({ interactive: { type: "nfm_reply", nfm_reply: { name: "signup", response_json: "{}" } } }), {
      reply_option_id: null,
      reply_option_title: null,
      interactive_type: "nfm_reply",
      interactive_data: { name: "signup", response_json: "{}" }
    })
    assert.deepStrictEqual(replyFacts({ text: { body: "hi" } }), {
      reply_option_id: null,
      reply_option_title: null,
      interactive_type: null,
      interactive_data: null
    })
  })

  it("keeps orders and form replies beside the text", () => {
    const order = renderInbound({
      type: "order",
      order: { catalog_id: "c1", product_items: [{ product_retailer_id: "sku-1", quantity: 2, item_price: 9.5, currency: "EUR" }] }
    }, null)
    assert.strictEqual(order.content, "Order (1 item)\n2 x sku-1 @ 9.5 EUR")
    assert.strictEqual(order.ext_data["order_text"], order.content)
    const form = renderInbound({
      type: "interactive",
      interactive: { type: "nfm_reply", nfm_reply: { name: "signup", body: "Sent", response_json: "{\"flow_token\":\"t1\",\"age\":30}" } }
    }, null)
    assert.deepStrictEqual(form.ext_data, { flow_response: { flow_token: "t1", age: 30 }, flow_token: "t1", flow_name: "signup" })
  })
})

/** Each test on fresh services, built on its TestClock. */
const scenario = <A, E>(name: string, body: () => Effect.Effect<A, E, Layer.Success<typeof Services>>) =>
  it.effect(name, () => Effect.provide(body(), Services))

describe("ingestion and stored messages", () => {
  scenario("records an inbound message once, opening a conversation, with its domain events", () =>
    Effect.gen(function*() {
      const { config, deliver, project, simulator } = yield* given
      const messaging = yield* Messaging
      const sent = yield* simulator.inbound(config.phone_number_id, {
        from: "+49 151 1234 5678",
        profile_name: "Ada",
        message: { type: "text", text: { body: "hi ☕" }, referral: { source_type: "ad", source_id: "42" } }
      })
      yield* settle
      const message = yield* messaging.getMessage(project.id, config.phone_number_id, sent.id)
      assert.strictEqual(message.direction, "inbound")
      assert.strictEqual(message.status, "delivered")
      // Nothing routes it here (no execution workers): it stays pending until routing settles it.
      assert.strictEqual(message.processing_status, "pending")
      assert.strictEqual(message.content, "hi ☕")
      assert.strictEqual(message.phone_number, "4915112345678")
      assert.strictEqual(message.contact_name, "Ada")
      assert.deepStrictEqual(message.fields["referral"], { source_type: "ad", source_id: "42" }, "referral data kept")
      const conversation = yield* messaging.getConversation(project.id, message.conversation_id)
      assert.strictEqual(conversation.status, "active")
      assert.strictEqual(conversation.messages_count, 1)
      assert.strictEqual(conversation.last_message_id, sent.id)
      assert.strictEqual(conversation.last_message_text, "hi ☕")
      assert.isNotNull(conversation.last_inbound_at)

      const events = yield* written
      assert.deepStrictEqual(types(events), [UPSTREAM_PAYLOAD, MSG_CONVERSATION_CREATED, MSG_MESSAGE_RECEIVED])
      const upstream = events[0]!.payload as { phone_number_ids: Array<string>; body_base64: string }
      assert.deepStrictEqual(upstream.phone_number_ids, [config.phone_number_id])
      assert.deepStrictEqual(JSON.parse(Buffer.from(upstream.body_base64, "base64").toString("utf8")), sent.payload)
      const received = events[2]!.payload as any
      assert.deepStrictEqual(received.msg_config, {
        id: config.id,
        phone_number_id: config.phone_number_id,
        display_phone_number: config.display_phone_number,
        name: config.name
      })
      assert.strictEqual(received.conversation_phone_number, "4915112345678")
      assert.strictEqual(received.data.is_new_conversation, true)
      assert.strictEqual(received.data.phone_number_id, config.phone_number_id)
      assert.strictEqual(received.data.message.id, sent.id)
      assert.strictEqual(received.data.message.ext.msg_conversation_id, conversation.id)
      assert.strictEqual(received.data.conversation.id, conversation.id)

      // The network delivers the same payload again: nothing new.
      yield* deliver(sent.payload)
      const again = yield* messaging.listMessages(project.id, {}, { mode: "cursor", limit: 10 })
      assert.strictEqual(again.items.length, 1)
      assert.deepStrictEqual(types(yield* written), [UPSTREAM_PAYLOAD])
    }))

  scenario("keeps inbound media byte for byte and renders it with its address", () =>
    Effect.gen(function*() {
      const { config, project, simulator } = yield* given
      const bytes = new Uint8Array(5000).map((_, i) => (i * 7) % 256)
      bytes.set([0xff, 0xd8, 0xff], 0)
      const sent = yield* simulator.inbound(config.phone_number_id, {
        from: "15550001111",
        message: { type: "image", image: { caption: "receipt" } },
        media: { bytes, mimeType: "image/jpeg" }
      })
      yield* settle
      const message = yield* (yield* Messaging).getMessage(project.id, config.phone_number_id, sent.id)
      assert.isTrue(message.has_media)
      const media = message.media!
      assert.strictEqual(media.byte_size, 5000)
      const kept = Option.getOrThrow(yield* (yield* MediaRepo).find(project.id, media.id))
      assert.isTrue(Buffer.from(kept.bytes).equals(Buffer.from(bytes)))
      assert.match(message.content!, /^receipt\nImage attached \(image-\d+\.jpg\) \[Size: 5 KB, Type: image\/jpeg\] URL: http:\/\/127\.0\.0\.1:4000\/platform\/v1\/msg\/media\/[0-9a-f-]+\/content$/)
    }))

  scenario("works for contacts known only by a business-scoped id", () =>
    Effect.gen(function*() {
      const { config, project, simulator } = yield* given
      const sent = yield* simulator.inbound(config.phone_number_id, {
        user_id: "US.13491208655302741918",
        profile_name: "Anon",
        message: { type: "text", text: { body: "no number" } }
      })
      yield* settle
      const messaging = yield* Messaging
      const message = yield* messaging.getMessage(project.id, config.phone_number_id, sent.id)
      assert.isNull(message.phone_number)
      assert.isUndefined(message.fields["from"])
      assert.strictEqual(message.fields["business_scoped_user_id"], "US.13491208655302741918")
      const conversation = yield* messaging.getConversation(project.id, message.conversation_id)
      assert.isNull(conversation.phone_number)
      assert.strictEqual(conversation.business_scoped_user_id, "US.13491208655302741918")
      const contact = yield* messaging.getContact(project.id, "US.13491208655302741918")
      assert.isNull(contact.wa_id)
    }))

  scenario("records a send before the network answers, applying a status that came first, then moving to read", () =>
    Effect.gen(function*() {
      const { config, project, simulator } = yield* given
      const messaging = yield* Messaging
      const network = yield* MessagingNetwork
      // The contact writes first: the 24-hour window opens.
      yield* simulator.inbound(config.phone_number_id, { from: "15550002222", message: { type: "text", text: { body: "hello" } } })
      yield* settle
      yield* written
      const envelope = { messaging_product: "whatsapp", to: "+1 555 000 2222", type: "text", text: { body: "Hi back" } }
      const { message: recorded } = yield* messaging.recordOutbound(config, { envelope })
      assert.strictEqual(recorded.status, "pending")
      assert.strictEqual(recorded.origin, "api")
      const answer = yield* network.send({ accessToken: config.access_token }, config.phone_number_id, envelope)
      const networkId = "messages" in answer.value ? answer.value.messages[0]!.id : ""
      // `sent` is reported at 200 ms (posted once the host simulator's 50 ms batch window closes), before the id is
      // stored: kept, applied on assignment.
      yield* advance(250)
      const assigned = yield* messaging.assignNetworkId(config, recorded, networkId)
      assert.strictEqual(assigned.status, "sent")
      yield* advance(800)
      yield* advance(2000)
      const read = yield* messaging.getMessage(project.id, config.phone_number_id, networkId)
      assert.strictEqual(read.status, "read")
      assert.deepStrictEqual(read.statuses.map((s: any) => s.status), ["sent", "delivered", "read"])
      const events = (yield* written).filter((e) => e.type !== UPSTREAM_PAYLOAD)
      assert.deepStrictEqual(types(events), ["sent", "delivered", "read"].map((s) => msgMessageStatusEvent(s as "sent")))
      const conversation = yield* messaging.getConversation(project.id, read.conversation_id)
      assert.strictEqual(conversation.messages_count, 2)
      assert.strictEqual(conversation.last_message_id, networkId)
      assert.isNotNull(conversation.last_outbound_at)
    }))

  scenario("records concurrent sends together and applies the statuses of one webhook in one go", () =>
    Effect.gen(function*() {
      const { config, deliver, project } = yield* given
      const messaging = yield* Messaging
      const pnid = config.phone_number_id
      const envelope = (to: string) => ({ messaging_product: "whatsapp", to, type: "text", text: { body: "x" } })
      // One contact twice among three recipients, recorded concurrently.
      const recipients = ["15550004001", "15550004002", "15550004003", "15550004001"]
      const recorded = yield* Effect.forEach(
        recipients,
        (to, i) => messaging.recordOutbound(config, { envelope: envelope(to), network_id: `wamid.C${i}` }),
        { concurrency: "unbounded" }
      )
      assert.deepStrictEqual(recorded.map((r) => r.message.status), ["pending", "pending", "pending", "pending"])
      assert.strictEqual(recorded[0]!.conversation.id, recorded[3]!.conversation.id, "one conversation per contact")
      assert.strictEqual(new Set(recorded.map((r) => r.conversation.id)).size, 3)
      assert.strictEqual((yield* messaging.getConversation(project.id, recorded[0]!.conversation.id)).messages_count, 2)
      const again = yield* Effect.flip(messaging.recordOutbound(config, { envelope: envelope("15550004002"), network_id: "wamid.C1" }))
      assert.strictEqual(again._tag, "Unprocessable", "a network id is recorded once")
      // A new contact's conversation goes in with its messages counted; a message refused as recorded is counted out.
      const [refused, fresh] = yield* Effect.forEach(
        [["15550004009", "wamid.C0"], ["15550004010", "wamid.C9"]] as const,
        ([to, id]) => Effect.exit(messaging.recordOutbound(config, { envelope: envelope(to), network_id: id })),
        { concurrency: "unbounded" }
      )
      assert.isTrue(Exit.isFailure(refused!) && Exit.isSuccess(fresh!))
      const countOf = (phone: string) =>
        Effect.map(messaging.listConversations(project.id, { phone_number: phone }, { mode: "page", page: 1, perPage: 10 }), (slice) =>
          slice.items.map((c) => c.messages_count))
      assert.deepStrictEqual(yield* countOf("15550004009"), [0])
      assert.deepStrictEqual(yield* countOf("15550004010"), [1])
      // Sends recorded before the network answered get their ids together; a report that came first applies.
      const pending = yield* Effect.forEach(
        ["15550004002", "15550004003"],
        (to) => messaging.recordOutbound(config, { envelope: envelope(to) }),
        { concurrency: "unbounded" }
      )
      yield* deliver(statusChange(pnid, config.business_account_id, { id: "wamid.P1", status: "sent", timestamp: "1" }))
      const assigned = yield* Effect.forEach(
        pending,
        (r, i) => messaging.assignNetworkId(config, r.message, `wamid.P${i}`),
        { concurrency: "unbounded" }
      )
      assert.deepStrictEqual(assigned.map((m) => [m.network_id, m.status]), [["wamid.P0", "pending"], ["wamid.P1", "sent"]])
      const latest = yield* messaging.getConversation(project.id, pending[1]!.conversation.id)
      assert.strictEqual(latest.last_message_id, "wamid.P1", "the conversation's latest message takes its id")
      yield* written

      // Out of order, a duplicate, a failure a delivery follows, and a report of a send not recorded yet.
      const s = (id: string, status: string, ts: string, extra: Record<string, unknown> = {}) => ({
        id,
        status,
        timestamp: ts,
        recipient_id: "15550004001",
        ...extra
      })
      yield* deliver(statusChange(pnid, config.business_account_id, [
        s("wamid.C0", "read", "3"),
        s("wamid.C0", "delivered", "2"),
        s("wamid.C1", "sent", "1"),
        s("wamid.C0", "read", "3"),
        s("wamid.LATER", "sent", "5"),
        s("wamid.C2", "failed", "4", { errors: [{ code: 131026, title: "Message undeliverable" }] }),
        s("wamid.C2", "delivered", "6")
      ]))
      const get = (id: string) => messaging.getMessage(project.id, pnid, id)
      assert.strictEqual((yield* get("wamid.C0")).status, "read")
      assert.deepStrictEqual((yield* get("wamid.C0")).statuses.map((x: any) => x.status), ["read", "delivered"])
      assert.strictEqual((yield* get("wamid.C1")).status, "sent")
      assert.strictEqual((yield* get("wamid.C2")).status, "delivered")
      assert.strictEqual((yield* get("wamid.C3")).status, "pending")
      assert.deepStrictEqual(types(yield* written).filter((t) => t !== UPSTREAM_PAYLOAD), [
        msgMessageStatusEvent("read"),
        msgMessageStatusEvent("sent"),
        msgMessageStatusEvent("failed"),
        msgMessageStatusEvent("delivered")
      ])
      const later = yield* messaging.recordOutbound(config, { envelope: envelope("15550004003"), network_id: "wamid.LATER" })
      assert.strictEqual(later.message.status, "sent", "the report that overtook the send applies when it is recorded")
    }))

  scenario("deduplicates statuses and never downgrades; failed moves on when a delivery follows", () =>
    Effect.gen(function*() {
      const { config, deliver, project } = yield* given
      const messaging = yield* Messaging
      const waba = config.business_account_id
      const pnid = config.phone_number_id
      const send = (to: string, id: string) =>
        messaging.recordOutbound(config, {
          envelope: { messaging_product: "whatsapp", to, type: "text", text: { body: "x" } },
          network_id: id
        })
      yield* send("15550003333", "wamid.A")
      const status = (id: string, s: string, ts: string, extra: Record<string, unknown> = {}) =>
        deliver(statusChange(pnid, waba, { id, status: s, timestamp: ts, recipient_id: "15550003333", ...extra }))
      yield* status("wamid.A", "read", "103")
      yield* status("wamid.A", "delivered", "102")
      yield* status("wamid.A", "sent", "101")
      yield* status("wamid.A", "read", "103")
      const a = yield* messaging.getMessage(project.id, pnid, "wamid.A")
      assert.strictEqual(a.status, "read")
      assert.deepStrictEqual(a.statuses.map((s: any) => s.status), ["read", "delivered", "sent"], "duplicates kept once")

      yield* send("15550003333", "wamid.B")
      yield* status("wamid.B", "sent", "201")
      yield* status("wamid.B", "failed", "202", { errors: [{ code: 131026, title: "Message undeliverable" }] })
      assert.strictEqual((yield* messaging.getMessage(project.id, pnid, "wamid.B")).status, "failed")
      yield* status("wamid.B", "delivered", "203")
      const b = yield* messaging.getMessage(project.id, pnid, "wamid.B")
      assert.strictEqual(b.status, "delivered")
      const events = (yield* written).filter((e) => e.type.startsWith("msg.message."))
      assert.deepStrictEqual(types(events), [
        msgMessageStatusEvent("read"),
        msgMessageStatusEvent("sent"),
        msgMessageStatusEvent("failed"),
        msgMessageStatusEvent("delivered")
      ])
      const failed = events[2]!.payload as any
      assert.deepStrictEqual(failed.data.message.ext.statuses.at(-1).errors, [{ code: 131026, title: "Message undeliverable" }])
    }))

  scenario("ends a conversation after 24 hours without messages; the next message opens a new one", () =>
    Effect.gen(function*() {
      const { config, project, simulator } = yield* given
      const messaging = yield* Messaging
      const first = yield* simulator.inbound(config.phone_number_id, { from: "15550004444", message: { type: "text", text: { body: "1" } } })
      yield* settle
      yield* advance(20 * HOUR)
      yield* simulator.inbound(config.phone_number_id, { from: "15550004444", message: { type: "text", text: { body: "2" } } })
      yield* settle
      const conversationId = (yield* messaging.getMessage(project.id, config.phone_number_id, first.id)).conversation_id
      yield* written
      yield* advance(5 * HOUR)
      assert.strictEqual((yield* messaging.getConversation(project.id, conversationId)).status, "active", "re-armed by the second message")
      yield* advance(20 * HOUR)
      const ended = yield* messaging.getConversation(project.id, conversationId)
      assert.strictEqual(ended.status, "ended")
      assert.strictEqual(ended.end_reason, "inactivity")
      const events = (yield* written).filter((e) => e.type === MSG_CONVERSATION_ENDED)
      assert.strictEqual(events.length, 1)
      assert.strictEqual((events[0]!.payload as any).data.reason, "inactivity")
      const third = yield* simulator.inbound(config.phone_number_id, { from: "15550004444", message: { type: "text", text: { body: "3" } } })
      yield* settle
      const next = yield* messaging.getMessage(project.id, config.phone_number_id, third.id)
      assert.notStrictEqual(next.conversation_id, conversationId)
    }))

  scenario("a message 24 hours after the last one opens a new conversation before the sweep ends the old one", () =>
    Effect.gen(function*() {
      const { config, project, simulator } = yield* given
      const messaging = yield* Messaging
      const first = yield* simulator.inbound(config.phone_number_id, { from: "15550004646", message: { type: "text", text: { body: "1" } } })
      yield* settle
      const old = (yield* messaging.getMessage(project.id, config.phone_number_id, first.id)).conversation_id
      yield* written
      // To the millisecond: the sweeps so far found nothing silent for longer than 24 hours.
      const since = Date.parse((yield* messaging.getConversation(project.id, old)).last_active_at)
      yield* advance(since + 24 * HOUR - (yield* Clock.currentTimeMillis))
      assert.strictEqual((yield* messaging.getConversation(project.id, old)).status, "active", "the sweep has not ended it")
      const second = yield* simulator.inbound(config.phone_number_id, { from: "15550004646", message: { type: "text", text: { body: "2" } } })
      yield* settle
      const next = (yield* messaging.getMessage(project.id, config.phone_number_id, second.id)).conversation_id
      assert.notStrictEqual(next, old)
      const ended = yield* messaging.getConversation(project.id, old)
      assert.strictEqual(ended.status, "ended")
      assert.strictEqual(ended.end_reason, "inactivity")
      assert.strictEqual(ended.messages_count, 1)
      const kinds = (yield* written).filter((e) => e.type === MSG_CONVERSATION_ENDED || e.type === MSG_CONVERSATION_CREATED)
      assert.deepStrictEqual(kinds.map((e) => [e.type, (e.payload as any).data.conversation.id]), [
        [MSG_CONVERSATION_ENDED, old],
        [MSG_CONVERSATION_CREATED, next]
      ])
    }))

  scenario("a send recorded 24 hours after the last message opens a new conversation too", () =>
    Effect.gen(function*() {
      const { config, project } = yield* given
      const messaging = yield* Messaging
      const envelope = (body: string) => ({ messaging_product: "whatsapp", to: "15550004747", type: "text", text: { body } })
      const { conversation: old } = yield* messaging.recordOutbound(config, { envelope: envelope("1") })
      yield* written
      yield* advance(Date.parse(old.last_active_at) + 24 * HOUR - (yield* Clock.currentTimeMillis))
      assert.strictEqual((yield* messaging.getConversation(project.id, old.id)).status, "active", "the sweep has not ended it")
      const { conversation: next } = yield* messaging.recordOutbound(config, { envelope: envelope("2") })
      assert.notStrictEqual(next.id, old.id)
      assert.strictEqual((yield* messaging.getConversation(project.id, old.id)).end_reason, "inactivity")
      const kinds = (yield* written).filter((e) => e.type === MSG_CONVERSATION_ENDED || e.type === MSG_CONVERSATION_CREATED)
      assert.deepStrictEqual(kinds.map((e) => e.type), [MSG_CONVERSATION_ENDED, MSG_CONVERSATION_CREATED])
    }))

  scenario("a manual end writes msg.conversation.ended with reason manual; reopening re-arms the 24-hour end", () =>
    Effect.gen(function*() {
      const { config, project, simulator } = yield* given
      const messaging = yield* Messaging
      const first = yield* simulator.inbound(config.phone_number_id, { from: "15550004545", message: { type: "text", text: { body: "1" } } })
      yield* settle
      const conversationId = (yield* messaging.getMessage(project.id, config.phone_number_id, first.id)).conversation_id
      yield* written
      yield* advance(HOUR)
      const ended = yield* messaging.updateConversation(project.id, conversationId, { status: "ended" })
      assert.strictEqual(ended.status, "ended")
      assert.strictEqual(ended.end_reason, "manual")
      const events = (yield* written).filter((e) => e.type === MSG_CONVERSATION_ENDED)
      assert.strictEqual(events.length, 1)
      assert.strictEqual((events[0]!.payload as any).data.reason, "manual")
      assert.strictEqual((events[0]!.payload as any).data.conversation.id, conversationId)
      // Ending an ended conversation writes nothing.
      yield* messaging.updateConversation(project.id, conversationId, { status: "ended" })
      assert.deepStrictEqual(types(yield* written), [])

      yield* advance(30 * HOUR)
      const reopened = yield* messaging.updateConversation(project.id, conversationId, { status: "active" })
      assert.strictEqual(reopened.status, "active")
      assert.strictEqual(reopened.end_reason, null)
      yield* advance(23 * HOUR)
      assert.strictEqual((yield* messaging.getConversation(project.id, conversationId)).status, "active", "silence counts from the reopening")
      yield* advance(2 * HOUR)
      const idle = yield* messaging.getConversation(project.id, conversationId)
      assert.strictEqual(idle.status, "ended")
      assert.strictEqual(idle.end_reason, "inactivity")
      const later = (yield* written).filter((e) => e.type === MSG_CONVERSATION_ENDED)
      assert.deepStrictEqual(later.map((e) => (e.payload as any).data.reason), ["inactivity"])
    }))

  scenario("processes a 1,000-update payload: every message once, one conversation per contact", () =>
    Effect.gen(function*() {
      const { config, deliver, project } = yield* given
      const contacts = 40
      const messages = Array.from({ length: 1000 }, (_, i) => ({
        from: `1555100${String(i % contacts).padStart(4, "0")}`,
        id: `wamid.bulk.${i}`,
        timestamp: String(1772600000 + i),
        type: "text",
        text: { body: `bulk ${i}` }
      }))
      const payload: WebhookPayload = {
        object: "whatsapp_business_account",
        entry: [{
          id: config.business_account_id,
          changes: [{
            field: "messages",
            value: {
              messaging_product: "whatsapp",
              metadata: { display_phone_number: "15550100001", phone_number_id: config.phone_number_id },
              contacts: Array.from({ length: contacts }, (_, c) => ({ wa_id: `1555100${String(c).padStart(4, "0")}`, profile: { name: `C${c}` } })),
              messages
            }
          }]
        }]
      }
      yield* deliver(payload)
      yield* settle
      const messaging = yield* Messaging
      const stored = yield* messaging.listMessages(project.id, {}, { mode: "page", page: 1, perPage: 1 })
      assert.strictEqual(stored.total, 1000)
      const conversations = yield* messaging.listConversations(project.id, {}, { mode: "page", page: 1, perPage: 100 })
      assert.strictEqual(conversations.total, contacts)
      assert.deepStrictEqual(new Set(conversations.items.map((c) => c.messages_count)), new Set([25]))
      // Within one contact the order holds: the last message is the newest.
      const first = conversations.items.find((c) => c.phone_number === "15551000000")!
      assert.strictEqual(first.last_message_id, "wamid.bulk.960")
      assert.strictEqual(first.contact_name, "C0")
    }))

  scenario("records template status reports and refreshes a number on a quality update", () =>
    Effect.gen(function*() {
      const { config, project, simulator } = yield* given
      const network = yield* MessagingNetwork
      const created = yield* network.createTemplate({ accessToken: config.access_token }, config.business_account_id, {
        name: "order_update",
        category: "UTILITY",
        language: "en_US",
        components: [{ type: "BODY", text: "Your order {{1}} shipped.", example: { body_text: [["42"]] } }]
      })
      yield* advance(5_000)
      const reports = yield* (yield* UpstreamInboxRepo).listTemplateStatus(config.business_account_id)
      assert.deepStrictEqual(
        reports.map((r) => [r.template_id, r.template_name, r.event]),
        [[created.value.id, "order_update", "APPROVED"]]
      )
      yield* simulator.updateNumber(config.phone_number_id, { qualityRating: "YELLOW", messagingLimitTier: "TIER_1K" })
      yield* settle
      const refreshed = yield* (yield* MessageConfigs).get({ project, apiKey: { id: "k", name: "k" } }, config.phone_number_id)
      assert.strictEqual(refreshed.facts.throughput_tier, "TIER_1K")
      assert.strictEqual(refreshed.facts.quality_rating, "YELLOW")
    }))

  scenario("fails a refused send with its error, and marks a thread's inbound messages read", () =>
    Effect.gen(function*() {
      const { config, project, simulator } = yield* given
      const messaging = yield* Messaging
      const one = yield* simulator.inbound(config.phone_number_id, { from: "15550005555", message: { type: "text", text: { body: "1" } } })
      yield* advance(1_000)
      const two = yield* simulator.inbound(config.phone_number_id, { from: "15550005555", message: { type: "text", text: { body: "2" } } })
      yield* advance(1_000)
      const three = yield* simulator.inbound(config.phone_number_id, { from: "15550005555", message: { type: "text", text: { body: "3" } } })
      yield* settle
      const answer = yield* messaging.markRead(config, { accessToken: config.access_token }, { messageId: two.id })
      assert.strictEqual(answer.status, 200)
      const status = (id: string) => Effect.map(messaging.getMessage(project.id, config.phone_number_id, id), (m) => m.status)
      assert.deepStrictEqual([yield* status(one.id), yield* status(two.id), yield* status(three.id)], ["read", "read", "delivered"])
      yield* written
      const { message } = yield* messaging.recordOutbound(config, {
        envelope: { messaging_product: "whatsapp", to: "15550005555", type: "text", text: { body: "x" } }
      })
      const failed = yield* messaging.failOutbound(project.id, message.id, { code: 131047, title: "Re-engagement message" })
      assert.strictEqual(failed.status, "failed")
      assert.deepStrictEqual((failed.statuses[0] as any).errors, [{ code: 131047, title: "Re-engagement message" }])
      assert.deepStrictEqual(types(yield* written), [msgMessageStatusEvent("failed")])
    }))

  scenario("counts a contact's message as conversational work from its acknowledgement (broadcasts yield to its reply); a status report not", () =>
    Effect.gen(function*() {
      const { config, deliver, simulator } = yield* given
      const conversational = yield* ConversationalSends
      yield* deliver(statusChange(config.phone_number_id, config.business_account_id, { id: "wamid.S", status: "sent", timestamp: "1" }))
      assert.deepStrictEqual(yield* conversational.current, { inFlight: 0, lastSeenMs: undefined })
      yield* TestClock.adjust("2 seconds")
      yield* simulator.inbound(config.phone_number_id, { from: "15550007777", message: { type: "text", text: { body: "hi" } } })
      yield* settle
      assert.deepStrictEqual(yield* conversational.current, { inFlight: 0, lastSeenMs: yield* Clock.currentTimeMillis })
    }))

  scenario("drops changes for numbers nobody connected, and refuses unsigned payloads", () =>
    Effect.gen(function*() {
      const { appSecret, config, deliver } = yield* given
      yield* deliver(statusChange("999999", config.business_account_id, { id: "wamid.Z", status: "sent", timestamp: "1" }))
      assert.deepStrictEqual(yield* written, [], "no domain event for an unknown number")
      const raw = encoder.encode(JSON.stringify(statusChange(config.phone_number_id, "x", { id: "wamid.Z", status: "sent", timestamp: "1" })))
      const ingestion = yield* UpstreamIngestion
      const refused = yield* Effect.flip(ingestion.receive(raw, hubSignature(raw, `${appSecret}x`)))
      assert.strictEqual(refused._tag, "Unauthorized")
      assert.strictEqual((yield* Effect.flip(ingestion.receive(raw, undefined)))._tag, "Unauthorized")
    }))
})

describe("one outbound path (Outbound)", () => {
  scenario("records a send under the id its caller chose, with its origin, and gives it the network's id", () =>
    Effect.gen(function*() {
      const { config, project, simulator } = yield* given
      const outbound = yield* Outbound
      yield* simulator.inbound(config.phone_number_id, { from: "15550003333", message: { type: "text", text: { body: "hello" } } })
      yield* settle
      const envelope = { messaging_product: "whatsapp", to: "15550003333", type: "text", text: { body: "Hi back" } }
      const outcome = yield* outbound.send(config, envelope, { origin: "workflow", messageId: "chosen-1" })
      assert.strictEqual(outcome._tag, "Accepted")
      if (outcome._tag !== "Accepted") return
      const message = Option.getOrThrow(outcome.message)
      assert.strictEqual(message.id, "chosen-1")
      assert.strictEqual(message.origin, "workflow")
      assert.isDefined(outcome.networkId)
      assert.strictEqual(message.network_id, outcome.networkId)
      const found = Option.getOrThrow(yield* outbound.findRecorded(project.id, "chosen-1"))
      assert.strictEqual(found.network_id, outcome.networkId)
    }))

  scenario("records nothing outside the 24-hour window", () =>
    Effect.gen(function*() {
      const { config, project } = yield* given
      const outbound = yield* Outbound
      const envelope = { messaging_product: "whatsapp", to: "15550004444", type: "text", text: { body: "Hello?" } }
      const outcome = yield* outbound.send(config, envelope, { origin: "workflow", messageId: "chosen-2" })
      assert.deepStrictEqual(outcome, { _tag: "OutsideWindow" })
      assert.isTrue(Option.isNone(yield* outbound.findRecorded(project.id, "chosen-2")))
      const stored = yield* (yield* Messaging).listMessages(project.id, {}, { mode: "cursor", limit: 10 })
      assert.deepStrictEqual(stored.items, [])
    }))
  scenario("answers an opted-out recipient's send Withheld before the window or the media's account, recording nothing", () =>
    Effect.gen(function*() {
      const { config, project, simulator } = yield* given
      const outbound = yield* Outbound
      const optOuts = yield* OptOuts
      yield* optOuts.add(project.id, { phone_number: "+15550004445", msg_config_id: config.id })
      const text = (to: string) => ({ messaging_product: "whatsapp", to, type: "text", text: { body: "Hello?" } })
      // No window and an opt-out: the guardrails answer (their check runs before the recording's, alone here).
      const closed = yield* outbound.send(config, text("15550004445"), { origin: "api" })
      assert.strictEqual(closed._tag === "Withheld" ? closed.withheld.reason : closed._tag, "opted_out")
      // Inside the window (written before the opt-out): withheld in the recording's transaction.
      yield* simulator.inbound(config.phone_number_id, { from: "15550004446", message: { type: "text", text: { body: "hi" } } })
      yield* settle
      yield* optOuts.add(project.id, { phone_number: "+15550004446", msg_config_id: config.id })
      const open = yield* outbound.send(config, text("15550004446"), { origin: "api", messageId: "chosen-3" })
      assert.strictEqual(open._tag === "Withheld" ? open.withheld.reason : open._tag, "opted_out")
      assert.isTrue(Option.isNone(yield* outbound.findRecorded(project.id, "chosen-3")))
      // Its own confirmation is not checked: it goes out.
      const confirmation = yield* outbound.send(config, text("15550004446"), { origin: "api", confirmsOptOut: true })
      assert.strictEqual(confirmation._tag, "Accepted")
      const sent = yield* (yield* Messaging).listMessages(project.id, { direction: "outbound" }, { mode: "cursor", limit: 10 })
      assert.strictEqual(sent.items.length, 1)
    }))
})
