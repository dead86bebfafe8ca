/**
 * The simulator's network rules beyond the port's conformance suite: template
 * parameter formats, paused and disabled templates, number states, message
 * validation details, media lifetimes, paging, edit limits, webhook retries
 * and the host bootstrap. Through the port, in process, on the TestClock.
 */
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer, Option, Queue, Redacted, Result, Schema } from "effect"
import { TestClock } from "effect/testing"
import {
  MessagingNetwork,
  type NetworkAnswer,
  type NetworkError,
  type NetworkObjects,
  NetworkRefused,
  UpstreamWebhook
} from "../src/index.ts"
import { NumberOutbox, type OutboundRecord } from "../src/simulators/network/Model.ts"
import { Ids } from "../src/shared/Ids.ts"
import { Simulator } from "../src/simulators/index.ts"

const PNID = "100000000000001"
const WABA = "200000000000001"
const TOKEN = "rules-token"
const CONTACT = "15550109999"
const access = { accessToken: Redacted.make(TOKEN) }
const DAY = 24 * 60 * 60 * 1000
const SECRET = "rules-secret"

const layer = Simulator.layerMessagingNetwork.pipe(
  Layer.provideMerge(Simulator.NetworkSimulator.layer({ appSecret: SECRET, templateReviewMs: 1_000 })),
  Layer.provide(Ids.layerSequential)
)

const decoder = new TextDecoder()
const json = (bytes: Uint8Array): any => JSON.parse(decoder.decode(bytes))

const setup = Effect.gen(function*() {
  const simulator = yield* Simulator.NetworkSimulator
  const network = yield* MessagingNetwork
  yield* simulator.registerNumber({
    phoneNumberId: PNID,
    businessAccountId: WABA,
    accessToken: TOKEN,
    displayPhoneNumber: "+1 555-010-0001",
    verifiedName: "Rules Shop"
  })
  const deliveries = yield* Queue.unbounded<{ readonly raw: Uint8Array; readonly signature: string }>()
  yield* simulator.setSink((raw, signature) => Queue.offer(deliveries, { raw, signature }))
  const writeIn = (from = CONTACT) => simulator.inbound(PNID, { from, message: { type: "text", text: { body: "hi" } } })
  const drain = Effect.map(Queue.takeAll(deliveries), (all) => all.map((d) => json(d.raw)))
  return { simulator, network, deliveries, writeIn, drain }
})

const code = <A>(call: Effect.Effect<NetworkAnswer<A>, NetworkError>) =>
  Effect.map(Effect.result(call), (result) => {
    if (Result.isSuccess(result)) return assert.fail(`accepted: ${decoder.decode(result.success.body)}`)
    if (!(result.failure instanceof NetworkRefused)) return assert.fail(`not refused: ${result.failure.message}`)
    return { status: result.failure.status, code: result.failure.code, body: json(result.failure.body) }
  })

const template = (
  name: string,
  body: string,
  more: Record<string, unknown> = {},
  components: ReadonlyArray<object> = []
) => ({
  name,
  category: "UTILITY",
  language: "en_US",
  components: [{ type: "BODY", text: body, ...more }, ...components]
})

const sendTemplate = (name: string, parameters: ReadonlyArray<Record<string, unknown>>, to = CONTACT) => ({
  messaging_product: "whatsapp",
  to,
  type: "template",
  template: { name, language: { code: "en_US" }, components: [{ type: "body", parameters }] }
})

const approve = (definition: object) =>
  Effect.gen(function*() {
    const network = yield* MessagingNetwork
    const created = yield* network.createTemplate(access, WABA, definition)
    yield* TestClock.adjust(1_000)
    return created.value.id
  })

const messageOf = (answer: NetworkAnswer<unknown>) => answer.value as NetworkObjects.MessageAccepted

describe("NetworkSimulator rules", () => {
  it.effect("checks named and positional parameters (132012) and the hydrated length (132005)", () =>
    Effect.gen(function*() {
      const { network } = yield* setup
      yield* approve(
        template("named_greeting", "Hello {{first_name}}, your code is ready.", {
          example: { body_text_named_params: [{ param_name: "first_name", example: "Ana" }] }
        }, [])
      ).pipe(Effect.provideService(MessagingNetwork, network))
      const named = yield* network.createTemplate(access, WABA, {
        ...template("named_greeting_two", "Hello {{first_name}}, your code is ready.", {
          example: { body_text_named_params: [{ param_name: "first_name", example: "Ana" }] }
        }),
        parameter_format: "NAMED"
      })
      yield* TestClock.adjust(1_000)
      assert.strictEqual((yield* network.getTemplate(access, named.value.id)).value.status, "APPROVED")
      // The first one was created positional with a named variable: review rejects it.
      const listed = yield* network.listTemplates(access, WABA, { name: "named_greeting" })
      assert.deepStrictEqual(listed.value.data.map((t) => [t.name, t.status]).sort(), [
        ["named_greeting", "REJECTED"],
        ["named_greeting_two", "APPROVED"]
      ])

      const ok = yield* network.send(
        access,
        PNID,
        sendTemplate("named_greeting_two", [{ type: "text", parameter_name: "first_name", text: "Ana" }])
      )
      assert.match(messageOf(ok).messages[0]!.id, /^wamid\./)
      assert.strictEqual(
        (yield* code(network.send(access, PNID, sendTemplate("named_greeting_two", [{ type: "text", text: "Ana" }])))).code,
        132012
      )
      assert.strictEqual(
        (yield* code(
          network.send(access, PNID, sendTemplate("named_greeting_two", [{ type: "text", parameter_name: "last", text: "A" }]))
        )).code,
        132012
      )

      yield* approve(template("positional", "Dear customer, {{1}} is ready.", { example: { body_text: [["x"]] } }))
      assert.strictEqual(
        (yield* code(
          network.send(access, PNID, sendTemplate("positional", [{ type: "text", parameter_name: "a", text: "x" }]))
        )).code,
        132012
      )
      const long = yield* code(network.send(access, PNID, sendTemplate("positional", [{ type: "text", text: "x".repeat(1100) }])))
      assert.strictEqual(long.code, 132005)
      assert.strictEqual((yield* code(network.send(access, PNID, sendTemplate("positional", [{ type: "image" }])))).code, 131009)
    }).pipe(Effect.provide(layer)))

  it.effect("refuses paused (132015) and disabled (132016) templates and reports their changes", () =>
    Effect.gen(function*() {
      const { drain, network, simulator } = yield* setup
      const id = yield* approve(template("promo", "Big sale today.", {}, []))
      yield* drain
      yield* simulator.setTemplateStatus(id, "PAUSED")
      assert.strictEqual((yield* code(network.send(access, PNID, sendTemplate("promo", [])))).code, 132015)
      yield* simulator.setTemplateStatus(id, "APPROVED")
      assert.isString(messageOf(yield* network.send(access, PNID, sendTemplate("promo", []))).messages[0]!.id)
      yield* simulator.setTemplateStatus(id, "DISABLED")
      const disabled = yield* code(network.send(access, PNID, sendTemplate("promo", [])))
      assert.strictEqual(disabled.code, 132016)
      assert.strictEqual(disabled.status, 400)
      const events = (yield* drain).map((payload) => payload.entry[0].changes[0].value.event)
      assert.deepStrictEqual(events, ["PAUSED", "REINSTATED", "DISABLED"])
    }).pipe(Effect.provide(layer)))

  it.effect("answers 133010 for a number that is not connected, 131031 for a restricted one", () =>
    Effect.gen(function*() {
      const { network, simulator, writeIn } = yield* setup
      yield* writeIn()
      const textTo = { messaging_product: "whatsapp", to: CONTACT, type: "text", text: { body: "x" } }
      yield* simulator.updateNumber(PNID, { status: "DISCONNECTED" })
      assert.strictEqual((yield* code(network.send(access, PNID, textTo))).code, 133010)
      const health = (yield* network.getHealthStatus(access, PNID)).value.health_status
      assert.strictEqual(health.can_send_message, "BLOCKED")
      yield* simulator.updateNumber(PNID, { status: "RESTRICTED" })
      const restricted = yield* code(network.send(access, PNID, textTo))
      assert.strictEqual(restricted.code, 131031)
      assert.strictEqual(restricted.status, 403)
      yield* simulator.updateNumber(PNID, { status: "CONNECTED" })
      assert.isString(messageOf(yield* network.send(access, PNID, textTo)).messages[0]!.id)
    }).pipe(Effect.provide(layer)))

  it.effect("validates interactive, location, reaction and media envelopes", () =>
    Effect.gen(function*() {
      const { network, writeIn } = yield* setup
      yield* writeIn()
      const send = (body: object) => code(network.send(access, PNID, { messaging_product: "whatsapp", to: CONTACT, ...body }))
      const buttons = (titles: ReadonlyArray<string>) => ({
        type: "interactive",
        interactive: {
          type: "button",
          body: { text: "Choose" },
          action: { buttons: titles.map((title, i) => ({ type: "reply", reply: { id: `b${i}`, title } })) }
        }
      })
      assert.strictEqual((yield* send(buttons(["a".repeat(21)]))).code, 131009)
      assert.strictEqual((yield* send(buttons(["a", "b", "c", "d"]))).code, 131009)
      assert.strictEqual((yield* send({ type: "interactive", interactive: { type: "button", action: {} } })).code, 131008)
      assert.strictEqual((yield* send({ type: "interactive", interactive: { type: "wizard" } })).code, 131009)
      const rows = Array.from({ length: 11 }, (_, i) => ({ id: `r${i}`, title: `Row ${i}` }))
      const list = {
        type: "interactive",
        interactive: { type: "list", body: { text: "Pick" }, action: { button: "Open", sections: [{ title: "All", rows }] } }
      }
      assert.strictEqual((yield* send(list)).code, 131009)
      assert.strictEqual((yield* send({ type: "location", location: { latitude: 91, longitude: 0 } })).code, 131009)
      assert.strictEqual((yield* send({ type: "location", location: { latitude: 1 } })).code, 131008)
      assert.strictEqual((yield* send({ type: "reaction", reaction: { emoji: "👍" } })).code, 131008)
      assert.strictEqual((yield* send({ type: "image", image: {} })).code, 131008)
      assert.strictEqual((yield* send({ type: "image", image: { link: "ftp://x" } })).code, 131009)
      assert.strictEqual((yield* send({ type: "audio", audio: { link: "https://x.test/a.ogg", caption: "no" } })).code, 131009)
      assert.strictEqual((yield* send({ recipient_type: "group", type: "text", text: { body: "x" } })).code, 131009)

      const okList = yield* network.send(access, PNID, {
        messaging_product: "whatsapp",
        to: CONTACT,
        ...list,
        interactive: { ...list.interactive, action: { button: "Open", sections: [{ title: "All", rows: rows.slice(0, 10) }] } }
      })
      assert.strictEqual(okList.status, 200)
      const both = yield* network.send(access, PNID, {
        messaging_product: "whatsapp",
        to: CONTACT,
        recipient: "US.13491208655302741918",
        type: "text",
        text: { body: "to wins" }
      })
      assert.deepStrictEqual(messageOf(both).contacts, [{ input: CONTACT, wa_id: CONTACT }])
    }).pipe(Effect.provide(layer)))

  it.effect("marks paced marketing sends accepted", () =>
    Effect.gen(function*() {
      const { network } = yield* setup
      yield* approve({ ...template("weekly_deals", "Deals of the week are in."), category: "MARKETING" })
      const answer = messageOf(yield* network.send(access, PNID, sendTemplate("weekly_deals", [])))
      assert.strictEqual(answer.messages[0]!.message_status, "accepted")
      yield* approve(template("receipt", "Thanks for your order."))
      assert.isUndefined(messageOf(yield* network.send(access, PNID, sendTemplate("receipt", []))).messages[0]!.message_status)
    }).pipe(Effect.provide(layer)))

  it.effect("counts inbound messages in the number's throughput", () =>
    Effect.gen(function*() {
      const { network, simulator } = yield* setup
      yield* approve(template("receipt", "Thanks for your order."))
      for (let i = 0; i < 79; i++) {
        yield* simulator.inbound(PNID, { from: `1555030${String(i).padStart(4, "0")}`, message: { type: "text", text: { body: "x" } } })
      }
      assert.strictEqual(messageOf(yield* network.send(access, PNID, sendTemplate("receipt", []))).messages.length, 1)
      assert.strictEqual((yield* code(network.send(access, PNID, sendTemplate("receipt", [], "15550401234")))).code, 130429)
    }).pipe(Effect.provide(layer)))

  it.effect("expires media addresses after 5 minutes and uploads after 30 days; keeps contacts' media", () =>
    Effect.gen(function*() {
      const { drain, network, simulator } = yield* setup
      const bytes = new TextEncoder().encode("%PDF-1.7 simulated")
      const id = (yield* network.uploadMedia(access, PNID, { bytes, mimeType: "application/pdf", filename: "a.pdf" })).value.id
      const url = (yield* network.getMedia(access, id)).value.url
      yield* TestClock.adjust(5 * 60 * 1000)
      assert.strictEqual((yield* code(network.downloadMedia(access, url))).status, 404)
      const fresh = (yield* network.getMedia(access, id)).value.url
      assert.deepStrictEqual((yield* network.downloadMedia(access, fresh)).value, bytes)
      yield* TestClock.adjust(30 * DAY)
      assert.strictEqual((yield* code(network.getMedia(access, id))).code, 100)

      const photo = new Uint8Array([0xff, 0xd8, 0xff, 0xe0, 1, 2, 3])
      const sent = yield* simulator.inbound(PNID, {
        from: CONTACT,
        message: { type: "image", image: { caption: "my receipt" } },
        media: { bytes: photo, mimeType: "image/jpeg" }
      })
      const [payload] = yield* drain
      const image = payload.entry[0].changes[0].value.messages[0].image
      assert.strictEqual(image.caption, "my receipt")
      assert.strictEqual(image.mime_type, "image/jpeg")
      assert.isString(sent.id)
      const info = (yield* network.getMedia(access, image.id)).value
      assert.strictEqual(info.sha256, image.sha256)
      assert.deepStrictEqual((yield* network.downloadMedia(access, info.url)).value, photo)
      yield* TestClock.adjust(7 * DAY)
      assert.strictEqual((yield* code(network.getMedia(access, image.id))).code, 100)

      const animated = new Uint8Array(300 * 1024)
      animated.set(new TextEncoder().encode("RIFF\0\0\0\0WEBPVP8X\0\0\0\0ANIM"), 0)
      const sticker = yield* network.uploadMedia(access, PNID, { bytes: animated, mimeType: "image/webp", filename: "s.webp" })
      assert.isString(sticker.value.id)
    }).pipe(Effect.provide(layer)))

  it.effect("pages template lists with the network's cursors", () =>
    Effect.gen(function*() {
      const { network } = yield* setup
      for (const name of ["a_one", "a_two", "a_three"]) {
        yield* network.createTemplate(access, WABA, template(name, `Text of ${name}.`))
        yield* TestClock.adjust(10)
      }
      const first = (yield* network.listTemplates(access, WABA, { limit: 2 })).value
      assert.deepStrictEqual(first.data.map((t) => t.name), ["a_three", "a_two"])
      assert.isString(first.paging?.next)
      const second = (yield* network.listTemplates(access, WABA, { limit: 2, after: first.paging!.cursors!.after! })).value
      assert.deepStrictEqual(second.data.map((t) => t.name), ["a_one"])
      assert.isUndefined(second.paging?.next)
      assert.isString(second.paging?.previous)
      assert.strictEqual((yield* code(network.listTemplates(access, WABA, { after: "bm9wZQ==" }))).code, 100)
    }).pipe(Effect.provide(layer)))

  it.effect("limits edits of approved templates and keeps deleted names for 30 days", () =>
    Effect.gen(function*() {
      const { network } = yield* setup
      const id = yield* approve(template("notice", "Original notice."))
      assert.strictEqual((yield* code(network.editTemplate(access, id, { category: "MARKETING" }))).code, 100)
      for (let i = 0; i < 10; i++) {
        yield* network.editTemplate(access, id, { components: [{ type: "BODY", text: `Notice version ${i}.` }] })
        const pending = yield* code(network.editTemplate(access, id, { components: [{ type: "BODY", text: "Pending." }] }))
        assert.include(pending.body.error.error_data.details, "status PENDING")
        yield* TestClock.adjust(1_000)
        assert.strictEqual((yield* network.getTemplate(access, id)).value.status, "APPROVED")
        const soon = yield* code(network.editTemplate(access, id, { components: [{ type: "BODY", text: "Too soon." }] }))
        assert.include(soon.body.error.error_data.details, "24 hours")
        yield* TestClock.adjust(DAY)
      }
      const eleventh = yield* code(network.editTemplate(access, id, { components: [{ type: "BODY", text: "Eleventh." }] }))
      assert.strictEqual(eleventh.code, 100)
      assert.include(eleventh.body.error.error_data.details, "10 times")

      const french = yield* network.createTemplate(access, WABA, { ...template("notice", "Avis."), language: "fr" })
      yield* TestClock.adjust(1_000)
      yield* network.deleteTemplate(access, WABA, { name: "notice", hsmId: french.value.id })
      assert.strictEqual((yield* network.getTemplate(access, id)).value.status, "APPROVED", "hsm_id deletes one language")
      yield* network.deleteTemplate(access, WABA, { name: "notice" })
      assert.strictEqual((yield* code(network.getTemplate(access, id))).code, 100)
      assert.strictEqual((yield* code(network.deleteTemplate(access, WABA, { name: "notice" }))).code, 100)
      assert.strictEqual((yield* code(network.createTemplate(access, WABA, template("notice", "Again.")))).code, 100)
      yield* TestClock.adjust(30 * DAY)
      assert.strictEqual((yield* network.createTemplate(access, WABA, template("notice", "Again."))).value.status, "PENDING")
    }).pipe(Effect.provide(layer)))

  it.effect("keeps authentication templates to numbers with a messaging limit of 2,000 or more", () =>
    Effect.gen(function*() {
      const { network, simulator } = yield* setup
      yield* simulator.updateNumber(PNID, { messagingLimitTier: "TIER_1K" })
      const otp = {
        name: "otp",
        category: "AUTHENTICATION",
        language: "en_US",
        components: [{ type: "BUTTONS", buttons: [{ type: "OTP", otp_type: "ZERO_TAP", supported_apps: [{ package_name: "a.b", signature_hash: "h" }] }] }]
      }
      assert.strictEqual((yield* code(network.createTemplate(access, WABA, otp))).code, 100)
      yield* simulator.updateNumber(PNID, { messagingLimitTier: "TIER_2K" })
      assert.strictEqual((yield* network.createTemplate(access, WABA, otp)).value.category, "AUTHENTICATION")
    }).pipe(Effect.provide(layer)))

  it.effect("retries a webhook the sink refused, and reports unsupported inbound types with 131051", () =>
    Effect.gen(function*() {
      const { deliveries, simulator } = yield* setup
      let attempts = 0
      yield* simulator.setSink((raw, signature) =>
        ++attempts < 3 ? Effect.fail("ingestion down") : Queue.offer(deliveries, { raw, signature })
      )
      const result = yield* simulator.inbound(PNID, { from: CONTACT, message: { type: "unsupported" } })
      assert.isFalse(result.delivered)
      yield* TestClock.adjust(1_000)
      assert.isTrue(Option.isNone(yield* Queue.poll(deliveries)))
      yield* TestClock.adjust(2_000)
      const delivery = yield* Queue.take(deliveries)
      assert.strictEqual(attempts, 3)
      assert.isTrue(UpstreamWebhook.verifyHubSignature(delivery.raw, delivery.signature, SECRET))
      const payload = Schema.decodeUnknownSync(UpstreamWebhook.WebhookPayload)(json(delivery.raw))
      const value = Schema.decodeUnknownSync(UpstreamWebhook.MessagesChangeValue)(payload.entry[0]!.changes[0]!.value)
      assert.strictEqual(value.messages?.[0]?.id, result.id)
      assert.strictEqual(value.messages?.[0]?.errors?.[0]?.code, 131051)
      assert.isFalse(UpstreamWebhook.verifyHubSignature(delivery.raw, delivery.signature, "other-secret"))

      yield* simulator.setSink(undefined)
      assert.isFalse((yield* simulator.inbound(PNID, { from: CONTACT, message: { type: "text", text: { body: "x" } } })).delivered)
    }).pipe(Effect.provide(layer)))

  it.effect("gathers a number's status reports due within the batch window into one webhook", () =>
    Effect.gen(function*() {
      const { deliveries, drain, network, writeIn } = yield* setup
      for (const from of ["15550101001", "15550101002", "15550101003"]) yield* writeIn(from)
      const text = (to: string) => ({ messaging_product: "whatsapp", to, type: "text", text: { body: "hi" } })
      yield* network.send(access, PNID, text("15550101001"))
      yield* network.send(access, PNID, text("15550101002"))
      yield* TestClock.adjust(50)
      yield* network.send(access, PNID, text("15550101003"))
      yield* drain
      // `sent` falls due at 200, 200 and 250 ms: one webhook when the window (100 ms) after the first closes.
      yield* TestClock.adjust(200)
      assert.strictEqual(yield* Queue.size(deliveries), 0)
      yield* TestClock.adjust(50)
      const [webhook, ...others] = yield* drain
      assert.strictEqual(others.length, 0)
      const value = webhook.entry[0].changes[0].value
      assert.deepStrictEqual(value.statuses.map((s: any) => [s.status, s.recipient_id]), [
        ["sent", "15550101001"],
        ["sent", "15550101002"],
        ["sent", "15550101003"]
      ])
      assert.deepStrictEqual(value.contacts.map((c: any) => c.wa_id), ["15550101001", "15550101002", "15550101003"])
      // `delivered` (1,000, 1,000 and 1,050 ms) likewise.
      yield* TestClock.adjust(1_000)
      assert.deepStrictEqual((yield* drain).map((w) => w.entry[0].changes[0].value.statuses.length), [3])
    }).pipe(Effect.provide(Simulator.layerMessagingNetwork.pipe(
      Layer.provideMerge(Simulator.NetworkSimulator.layer({ appSecret: SECRET, statusBatchMs: 100 })),
      Layer.provide(Ids.layerSequential)
    ))))

  it.effect("bootstraps the configured simulated number", () =>
    Effect.gen(function*() {
      const network = yield* MessagingNetwork
      const number = yield* Simulator.registerSimulatedNumber
      assert.strictEqual(number.phoneNumberId, "100000000000001")
      assert.strictEqual(number.businessAccountId, "200000000000001")
      const facts = (yield* network.getPhoneNumber({ accessToken: number.accessToken }, number.phoneNumberId)).value
      assert.strictEqual(facts.quality_rating, "GREEN")
      assert.strictEqual(facts.messaging_limit_tier, "TIER_10K")
      assert.strictEqual(facts.status, "CONNECTED")
      assert.strictEqual(facts.verified_name, "Parley Sandbox")

      const custom = yield* Simulator.registerSimulatedNumber.pipe(
        Effect.provide(ConfigProvider.layer(ConfigProvider.fromUnknown({
          PARLEY_SIM_PHONE_NUMBER_ID: "100000000000042",
          PARLEY_SIM_ACCESS_TOKEN: "custom-token"
        })))
      )
      assert.strictEqual(custom.phoneNumberId, "100000000000042")
      assert.strictEqual(Redacted.value(custom.accessToken), "custom-token")
      const other = (yield* network.getPhoneNumber({ accessToken: custom.accessToken }, "100000000000042")).value
      assert.strictEqual(other.id, "100000000000042")

      const mode = (env: Record<string, string>) =>
        Effect.provide(
          Effect.gen(function*() {
            return yield* Simulator.UpstreamMode
          }),
          ConfigProvider.layer(ConfigProvider.fromUnknown(env))
        )
      assert.strictEqual(yield* mode({}), "simulator")
      assert.strictEqual(yield* mode({ PARLEY_UPSTREAM: "cloud" }), "cloud")
      assert.isTrue(Result.isFailure(yield* Effect.result(mode({ PARLEY_UPSTREAM: "real" }))))
    }).pipe(Effect.provide(layer)))
})

describe("simulator outbox", () => {
  const record = (id: string) => ({ id }) as OutboundRecord

  it("keeps the newest `limit` messages in order and names each one it forgets", () => {
    const outbox = new NumberOutbox(3)
    const forgotten: Array<string | undefined> = []
    for (let i = 1; i <= 10; i++) forgotten.push(outbox.push(record(`m${i}`))?.id)
    assert.deepStrictEqual(forgotten, [undefined, undefined, undefined, "m1", "m2", "m3", "m4", "m5", "m6", "m7"])
    assert.deepStrictEqual(outbox.toArray().map((r) => r.id), ["m8", "m9", "m10"])
    outbox.push(record("m11"))
    assert.deepStrictEqual(outbox.toArray().map((r) => r.id), ["m9", "m10", "m11"])
  })
})
