/**
 * The behaviour every `MessagingNetwork` adapter owes its callers, written
 * once and run against the network simulator: in process
 * (`Simulator.layerMessagingNetwork`) and over HTTP (the Cloud API adapter
 * talking to the simulator's HTTP face). The assertions are the same, so the
 * HTTP path must carry envelopes, answers, error objects and media bytes
 * exactly as the in-process one does.
 *
 * Each test gets a fresh layer, built on the `TestClock`: the simulator reads
 * the clock it was built with, so `TestClock.adjust` moves windows, rate
 * limits, template review and status reports. The layer must build the
 * simulator with `simulatorOptions` (the suite checks signatures with its app
 * secret and counts on its delays).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, type Layer, Option, Queue, Redacted, Result, Schema } from "effect"
import { TestClock } from "effect/testing"
import { createHash } from "node:crypto"
import {
  type MessageAccepted,
  MessagingProduct,
  type NetworkErrorDetail,
  WebhookObjectName
} from "../../network/NetworkObjects.ts"
import type { NetworkSimulatorOptions } from "../../simulators/network/Simulator.ts"
import { NetworkSimulator, SIMULATOR_APP_ID } from "../../simulators/network/Simulator.ts"
import {
  MessagesChangeValue,
  QualityChangeValue,
  TemplateStatusChangeValue,
  verifyHubSignature,
  WebhookPayload
} from "../../network/Webhook.ts"
import {
  MessagingNetwork,
  type NetworkAccess,
  type NetworkAnswer,
  type NetworkError,
  NetworkRefused,
  rawAnswer
} from "../../network/MessagingNetwork.ts"
import * as Simulator from "../../simulators/network/index.ts"

/** The simulator the suite expects behind the adapter. */
export const simulatorOptions = {
  appSecret: "conformance-app-secret",
  templateReviewMs: 5_000,
  nameReviewMs: 5_000,
  statusDelays: { sent: 200, delivered: 1_000, read: 3_000 }
} as const satisfies NetworkSimulatorOptions

export interface MessagingNetworkConformanceOptions<E> {
  /** A fresh port and the simulator it reaches, both built on the test's clock. */
  readonly layer: Layer.Layer<MessagingNetwork | NetworkSimulator, E>
  /** Per-test timeout in milliseconds (vitest's). */
  readonly timeout?: number | undefined
}

const PNID = "100000000000001"
const WABA = "200000000000001"
const DISPLAY = "+1 555-010-0001"
const TOKEN = "conformance-access-token"
const OTHER_PNID = "100000000000777"
const OTHER_TOKEN = "conformance-other-token"
const access: NetworkAccess = { accessToken: Redacted.make(TOKEN) }

const CONTACT = "15550109999"
const REVIEW_MS = simulatorOptions.templateReviewMs
const HOUR = 60 * 60 * 1000

const encoder = new TextEncoder()
const decoder = new TextDecoder()
const text = (bytes: Uint8Array) => decoder.decode(bytes)
const json = (bytes: Uint8Array): any => JSON.parse(text(bytes))

interface Delivery {
  readonly raw: Uint8Array
  readonly signature: string
}

const setup = Effect.gen(function*() {
  const simulator = yield* NetworkSimulator
  const network = yield* MessagingNetwork
  yield* simulator.registerNumber({
    phoneNumberId: PNID,
    businessAccountId: WABA,
    accessToken: TOKEN,
    displayPhoneNumber: DISPLAY,
    verifiedName: "Conformance Shop"
  })
  yield* simulator.registerNumber({
    phoneNumberId: OTHER_PNID,
    businessAccountId: "200000000000777",
    accessToken: OTHER_TOKEN,
    displayPhoneNumber: "+44 7700 900777",
    verifiedName: "Someone Else"
  })
  const deliveries = yield* Queue.unbounded<Delivery>()
  yield* simulator.setSink((raw, signature) => Queue.offer(deliveries, { raw, signature }))

  /** The next webhook: its signature must verify; decoded as the network's envelope. */
  const nextWebhook = Effect.gen(function*() {
    const delivery = yield* TestClock.withLive(
      Queue.take(deliveries).pipe(
        Effect.timeoutOrElse({
          duration: "3 seconds",
          orElse: () => Effect.die(new Error("no webhook was delivered"))
        })
      )
    )
    assert.isTrue(
      verifyHubSignature(delivery.raw, delivery.signature, simulatorOptions.appSecret),
      "X-Hub-Signature-256 is the HMAC of the raw body"
    )
    assert.match(delivery.signature, /^sha256=[0-9a-f]{64}$/)
    const payload = Schema.decodeUnknownSync(WebhookPayload)(json(delivery.raw))
    assert.strictEqual(payload.object, WebhookObjectName)
    assert.strictEqual(payload.entry.length, 1)
    assert.strictEqual(payload.entry[0]!.changes.length, 1)
    return { payload, entry: payload.entry[0]!, change: payload.entry[0]!.changes[0]!, raw: delivery.raw }
  })

  /** The next webhook must be a `messages` change of the test number. */
  const nextMessagesChange = Effect.map(nextWebhook, ({ change, entry }) => {
    assert.strictEqual(entry.id, WABA)
    assert.strictEqual(change.field, "messages")
    const value = Schema.decodeUnknownSync(MessagesChangeValue)(change.value)
    assert.strictEqual(value.messaging_product, MessagingProduct)
    assert.deepStrictEqual(value.metadata, { display_phone_number: "15550100001", phone_number_id: PNID })
    return value
  })

  /** Nothing else was delivered (after letting woken fibers run). */
  const noMoreWebhooks = Effect.gen(function*() {
    yield* Effect.yieldNow.pipe(Effect.repeat({ times: 50 }))
    const next = yield* Queue.poll(deliveries)
    assert.isTrue(Option.isNone(next), Option.isSome(next) ? `unexpected webhook ${text(next.value.raw)}` : "")
  })

  const writeIn = (from: string, body = "hi") =>
    simulator.inbound(PNID, { from, profile_name: "Kerry", message: { type: "text", text: { body } } })

  return { simulator, network, deliveries, nextWebhook, nextMessagesChange, noMoreWebhooks, writeIn }
})

/** The call must be refused with the network's error object: this status and code, the §7.3 shape, the bytes intact. */
const refused = <A>(call: Effect.Effect<NetworkAnswer<A>, NetworkError>, status: number, code: number) =>
  Effect.gen(function*() {
    const result = yield* Effect.result(call)
    if (Result.isSuccess(result)) {
      return assert.fail(`expected a ${code} refusal, got HTTP ${result.success.status} ${text(result.success.body)}`)
    }
    const error = result.failure
    if (!(error instanceof NetworkRefused)) return assert.fail(`expected NetworkRefused, got ${error._tag}: ${error.message}`)
    assert.strictEqual(error.status, status, text(error.body))
    assert.strictEqual(error.code, code, text(error.body))
    const detail: NetworkErrorDetail = error.error
    assert.match(detail.message, new RegExp(`^\\(#${code}\\) \\S`))
    assert.isString(detail.type)
    assert.strictEqual(detail.error_data?.messaging_product, MessagingProduct)
    assert.isString(detail.error_data?.details)
    assert.isString(detail.fbtrace_id)
    const body = json(error.body)
    assert.strictEqual(body.error.code, code)
    assert.strictEqual(body.error.message, detail.message)
    assert.include(error.contentType, "application/json")
    return error
  })

const accepted = (answer: NetworkAnswer<unknown>): MessageAccepted => {
  assert.strictEqual(answer.status, 200, text(answer.body))
  const value = answer.value as MessageAccepted
  assert.isArray(value.messages, text(answer.body))
  assert.strictEqual(value.messaging_product, MessagingProduct)
  assert.strictEqual(value.messages.length, 1)
  assert.match(value.messages[0]!.id, /^wamid\.[A-Za-z0-9+/=]+$/)
  return value
}

const textTo = (to: string, body = "hello") => ({ messaging_product: MessagingProduct, to, type: "text", text: { body } })

const templateTo = (to: string, name: string, parameters: ReadonlyArray<string>, language = "en_US") => ({
  messaging_product: MessagingProduct,
  to,
  type: "template",
  template: {
    name,
    language: { code: language },
    components: parameters.length === 0
      ? []
      : [{ type: "body", parameters: parameters.map((p) => ({ type: "text", text: p })) }]
  }
})

const orderUpdate = {
  name: "order_update",
  category: "UTILITY",
  language: "en_US",
  components: [{
    type: "BODY",
    text: "Your order {{1}} has shipped and arrives on {{2}}.",
    example: { body_text: [["#1234", "Monday"]] }
  }]
}

export const messagingNetworkConformance = <E>(name: string, options: MessagingNetworkConformanceOptions<E>): void => {
  const test = (title: string, body: Effect.Effect<void, unknown, MessagingNetwork | NetworkSimulator>) =>
    it.effect(title, () => body.pipe(Effect.provide(options.layer)), options.timeout ?? 20_000)

  /** Creates `orderUpdate` (or `definition`) and lets review approve it. */
  const approvedTemplate = (definition: object = orderUpdate) =>
    Effect.gen(function*() {
      const network = yield* MessagingNetwork
      const created = yield* network.createTemplate(access, WABA, definition)
      yield* TestClock.adjust(REVIEW_MS)
      return created.value.id
    })

  describe(name, () => {
    test(
      "accepts a text inside the window and answers a message id and the contact",
      Effect.gen(function*() {
        const { network, simulator, writeIn } = yield* setup
        yield* writeIn(CONTACT)
        const answer = yield* network.send(access, PNID, textTo("+1 (555) 010-9999"))
        const value = accepted(answer)
        assert.deepStrictEqual(value.contacts, [{ input: "+1 (555) 010-9999", wa_id: CONTACT }])
        assert.include(answer.contentType, "application/json")
        assert.deepStrictEqual(json(answer.body), value, "the typed view is the answer's bytes")

        const outbox = yield* simulator.outbox(PNID)
        assert.strictEqual(outbox.length, 1)
        assert.strictEqual(outbox[0]!.id, value.messages[0]!.id)
        assert.strictEqual(outbox[0]!.to, CONTACT)
        assert.strictEqual(outbox[0]!.type, "text")
        assert.strictEqual(outbox[0]!.status, "accepted")

        const second = accepted(yield* network.send(access, PNID, textTo(CONTACT, "again")))
        assert.notStrictEqual(second.messages[0]!.id, value.messages[0]!.id, "every message gets its own id")
      })
    )

    test(
      "forwards the envelope byte for byte, on the version segment given",
      Effect.gen(function*() {
        const { network, simulator, writeIn } = yield* setup
        yield* writeIn(CONTACT)
        const raw = encoder.encode(
          `{ "type":"text",\n  "to" : "${CONTACT}", "messaging_product":"whatsapp",\t"text":{"body":"h\\u00e9llo 👋","preview_url":false} }`
        )
        const answer = yield* network.send({ ...access, version: "v21.0" }, PNID, raw)
        accepted(answer)
        const [entry] = yield* simulator.outbox(PNID)
        assert.deepStrictEqual(entry!.raw, raw)
        assert.strictEqual(entry!.version, "v21.0")
        assert.deepStrictEqual(entry!.envelope, JSON.parse(text(raw)))
      })
    )

    test(
      "refuses malformed envelopes with the network's error objects",
      Effect.gen(function*() {
        const { network, simulator, writeIn } = yield* setup
        yield* writeIn(CONTACT)
        const cases: ReadonlyArray<readonly [string, unknown, number, number]> = [
          ["no messaging_product", { to: CONTACT, type: "text", text: { body: "x" } }, 400, 100],
          ["not JSON", encoder.encode("{\"messaging_product\":"), 400, 100],
          ["no recipient", { messaging_product: MessagingProduct, type: "text", text: { body: "x" } }, 400, 131008],
          ["no text body", { messaging_product: MessagingProduct, to: CONTACT, type: "text", text: {} }, 400, 131008],
          ["unknown type", { messaging_product: MessagingProduct, to: CONTACT, type: "carrier_pigeon" }, 400, 131009],
          ["bad phone number", textTo("not-a-number"), 400, 131009],
          ["text too long", textTo(CONTACT, "x".repeat(4097)), 400, 131009],
          ["unknown media id", { messaging_product: MessagingProduct, to: CONTACT, type: "image", image: { id: "123" } }, 400, 131009],
          ["unknown template", templateTo(CONTACT, "nope", []), 404, 132001],
          ["to itself", textTo("15550100001"), 400, 131021]
        ]
        for (const [label, envelope, status, code] of cases) {
          const error = yield* refused(network.send(access, PNID, envelope as object), status, code).pipe(
            Effect.mapError((e) => new Error(`${label}: ${String(e)}`))
          )
          const raw = yield* rawAnswer(network.send(access, PNID, envelope as object))
          assert.strictEqual(raw.status, status, label)
          assert.strictEqual(json(raw.body).error.code, error.code, label)
        }
        assert.strictEqual((yield* simulator.outbox(PNID)).length, 0, "nothing refused reached a contact")
      })
    )

    test(
      "checks the bearer token: unknown, expired, or another account's",
      Effect.gen(function*() {
        const { network, simulator, writeIn } = yield* setup
        yield* writeIn(CONTACT)
        yield* refused(network.send({ accessToken: Redacted.make("nope") }, PNID, textTo(CONTACT)), 401, 190)
        yield* refused(network.send({ accessToken: Redacted.make(OTHER_TOKEN) }, PNID, textTo(CONTACT)), 400, 100)
        yield* refused(network.getPhoneNumber({ accessToken: Redacted.make(OTHER_TOKEN) }, PNID), 400, 100)
        yield* simulator.expireToken(TOKEN)
        const expired = yield* refused(network.send(access, PNID, textTo(CONTACT)), 401, 190)
        assert.strictEqual(expired.error.error_subcode, 463)
      })
    )

    test(
      "keeps a template pending, approves it after review, and runs its lifecycle",
      Effect.gen(function*() {
        const { network, nextWebhook, writeIn } = yield* setup
        const created = yield* network.createTemplate(access, WABA, orderUpdate)
        assert.strictEqual(created.value.status, "PENDING")
        assert.strictEqual(created.value.category, "UTILITY")
        const id = created.value.id
        assert.match(id, /^\d+$/)
        yield* refused(network.createTemplate(access, WABA, orderUpdate), 400, 100)

        assert.strictEqual((yield* network.getTemplate(access, id)).value.status, "PENDING")
        yield* refused(network.send(access, PNID, templateTo(CONTACT, "order_update", ["#1", "Monday"])), 404, 132001)

        yield* TestClock.adjust(REVIEW_MS - 1)
        assert.strictEqual((yield* network.getTemplate(access, id)).value.status, "PENDING")
        yield* TestClock.adjust(1)
        const approved = (yield* network.getTemplate(access, id)).value
        assert.strictEqual(approved.status, "APPROVED")
        assert.strictEqual(approved.name, "order_update")
        assert.strictEqual(approved.language, "en_US")
        assert.strictEqual(approved.components[0]!.type, "BODY")

        const review = yield* nextWebhook
        assert.strictEqual(review.change.field, "message_template_status_update")
        const event = Schema.decodeUnknownSync(TemplateStatusChangeValue)(review.change.value)
        assert.strictEqual(event.event, "APPROVED")
        assert.strictEqual(String(event.message_template_id), id)
        assert.strictEqual(event.message_template_name, "order_update")

        accepted(yield* network.send(access, PNID, templateTo(CONTACT, "order_update", ["#1", "Monday"])))
        yield* refused(network.send(access, PNID, templateTo(CONTACT, "order_update", ["#1"])), 400, 132000)
        yield* refused(network.send(access, PNID, templateTo(CONTACT, "order_update", ["#1", "Monday"], "fr")), 404, 132001)

        const listed = yield* network.listTemplates(access, WABA, { name: "order", status: "APPROVED" })
        assert.deepStrictEqual(listed.value.data.map((t) => t.id), [id])
        assert.strictEqual((yield* network.listTemplates(access, WABA, { status: "REJECTED" })).value.data.length, 0)

        const edited = yield* network.editTemplate(access, id, {
          components: [{ type: "BODY", text: "Order {{1}} ships on {{2}}.", example: { body_text: [["#1", "Monday"]] } }]
        })
        assert.deepStrictEqual(edited.value, { success: true })
        assert.strictEqual((yield* network.getTemplate(access, id)).value.status, "PENDING")
        yield* TestClock.adjust(REVIEW_MS)
        const reviewed = (yield* network.getTemplate(access, id)).value
        assert.strictEqual(reviewed.status, "APPROVED")
        assert.strictEqual(reviewed.components[0]!.text, "Order {{1}} ships on {{2}}.")
        yield* refused(
          network.editTemplate(access, id, { components: [{ type: "BODY", text: "Changed again {{1}} now." }] }),
          400,
          100
        )

        yield* writeIn(CONTACT)
        const deleted = yield* network.deleteTemplate(access, WABA, { name: "order_update" })
        assert.deepStrictEqual(deleted.value, { success: true })
        yield* refused(network.getTemplate(access, id), 400, 100)
        assert.strictEqual((yield* network.listTemplates(access, WABA)).value.data.length, 0)
        yield* refused(network.createTemplate(access, WABA, orderUpdate), 400, 100)
      })
    )

    test(
      "refuses unreadable templates at once and rejects obviously invalid ones at review",
      Effect.gen(function*() {
        const { network, nextWebhook } = yield* setup
        yield* refused(network.createTemplate(access, WABA, { ...orderUpdate, category: undefined }), 400, 100)
        yield* refused(network.createTemplate(access, WABA, { ...orderUpdate, name: "Order Update" }), 400, 100)
        yield* refused(network.createTemplate(access, WABA, { ...orderUpdate, components: [] }), 400, 100)

        const created = yield* network.createTemplate(access, WABA, {
          name: "starts_with_variable",
          category: "MARKETING",
          language: "en",
          components: [{ type: "BODY", text: "{{1}} is back in stock", example: { body_text: [["Tea"]] } }]
        })
        assert.strictEqual(created.value.status, "PENDING")
        yield* TestClock.adjust(REVIEW_MS)
        const rejected = (yield* network.getTemplate(access, created.value.id)).value
        assert.strictEqual(rejected.status, "REJECTED")
        assert.strictEqual(rejected.rejected_reason, "INVALID_FORMAT")
        const event = Schema.decodeUnknownSync(TemplateStatusChangeValue)((yield* nextWebhook).change.value)
        assert.strictEqual(event.event, "REJECTED")
        assert.strictEqual(event.reason, "INVALID_FORMAT")
        yield* refused(network.send(access, PNID, templateTo(CONTACT, "starts_with_variable", ["Tea"], "en")), 404, 132001)
      })
    )

    test(
      "applies the authentication template rules",
      Effect.gen(function*() {
        const { network } = yield* setup
        const otp = (button: object, more: ReadonlyArray<object> = []) => ({
          name: "login_code",
          category: "AUTHENTICATION",
          language: "en_US",
          components: [
            { type: "BODY", add_security_recommendation: true },
            { type: "FOOTER", code_expiration_minutes: 10 },
            { type: "BUTTONS", buttons: [{ type: "OTP", ...button }] },
            ...more
          ]
        })
        yield* refused(network.createTemplate(access, WABA, otp({ otp_type: "COPY_CODE" }, [{ type: "HEADER", format: "TEXT", text: "Hi" }])), 400, 100)
        yield* refused(network.createTemplate(access, WABA, otp({ otp_type: "ONE_TAP" })), 400, 100)
        yield* refused(
          network.createTemplate(access, WABA, {
            ...otp({ otp_type: "COPY_CODE" }),
            components: [{ type: "BODY" }, { type: "FOOTER", code_expiration_minutes: 91 }, {
              type: "BUTTONS",
              buttons: [{ type: "OTP", otp_type: "COPY_CODE" }]
            }]
          }),
          400,
          100
        )
        const id = yield* approvedTemplate(otp({ otp_type: "COPY_CODE" }))
        const template = (yield* network.getTemplate(access, id)).value
        assert.strictEqual(template.status, "APPROVED")
        assert.strictEqual(template.category, "AUTHENTICATION")
        assert.isFalse(template.components.some((c) => c.type === "HEADER"))

        const code = (components: ReadonlyArray<object>) => ({
          messaging_product: MessagingProduct,
          to: CONTACT,
          type: "template",
          template: { name: "login_code", language: { code: "en_US" }, components }
        })
        const bodyParameter = { type: "body", parameters: [{ type: "text", text: "482913" }] }
        accepted(yield* network.send(access, PNID, code([
          bodyParameter,
          { type: "button", sub_type: "otp", index: "0", parameters: [{ type: "text", text: "482913" }] }
        ])))
        yield* refused(network.send(access, PNID, code([bodyParameter])), 400, 132000)
      })
    )

    test(
      "stores media: upload, metadata, byte-identical download, delete, and the type and size limits",
      Effect.gen(function*() {
        const { network, writeIn } = yield* setup
        const bytes = new Uint8Array(3000).map((_, i) => (i * 7 + 3) % 256)
        const uploaded = yield* network.uploadMedia(access, PNID, { bytes, mimeType: "image/png", filename: "chart.png" })
        const id = uploaded.value.id
        assert.match(id, /^\d+$/)

        const info = (yield* network.getMedia(access, id, { phoneNumberId: PNID })).value
        assert.strictEqual(info.id, id)
        assert.strictEqual(info.mime_type, "image/png")
        assert.strictEqual(info.file_size, 3000)
        assert.strictEqual(info.sha256, createHash("sha256").update(bytes).digest("hex"))

        const downloaded = yield* network.downloadMedia(access, info.url)
        assert.deepStrictEqual(downloaded.value, bytes)
        assert.strictEqual(downloaded.contentType, "image/png")
        yield* refused(network.downloadMedia({ accessToken: Redacted.make("nope") }, info.url), 401, 190)

        yield* writeIn(CONTACT)
        accepted(
          yield* network.send(access, PNID, { messaging_product: MessagingProduct, to: CONTACT, type: "image", image: { id } })
        )

        assert.deepStrictEqual((yield* network.deleteMedia(access, id)).value, { success: true })
        yield* refused(network.getMedia(access, id), 400, 100)
        yield* refused(network.downloadMedia(access, info.url), 404, 100)

        const tooBig = new Uint8Array(5 * 1024 * 1024 + 1)
        yield* refused(network.uploadMedia(access, PNID, { bytes: tooBig, mimeType: "image/jpeg", filename: "big.jpg" }), 400, 131053)
        yield* refused(network.uploadMedia(access, PNID, { bytes, mimeType: "image/gif", filename: "a.gif" }), 400, 131053)
        const sticker = new Uint8Array(100 * 1024 + 1)
        yield* refused(network.uploadMedia(access, PNID, { bytes: sticker, mimeType: "image/webp", filename: "s.webp" }), 400, 131053)
        const pdf = yield* network.uploadMedia(access, PNID, { bytes: tooBig, mimeType: "application/pdf", filename: "big.pdf" })
        assert.strictEqual((yield* network.getMedia(access, pdf.value.id)).value.file_size, tooBig.byteLength)
      })
    )

    test(
      "keeps the 24-hour customer-service window (131047) for everything but templates",
      Effect.gen(function*() {
        const { network, writeIn } = yield* setup
        yield* approvedTemplate()
        yield* refused(network.send(access, PNID, textTo(CONTACT)), 400, 131047)
        yield* writeIn(CONTACT)
        accepted(yield* network.send(access, PNID, textTo(CONTACT)))
        yield* TestClock.adjust(24 * HOUR - 1_000)
        accepted(yield* network.send(access, PNID, textTo(CONTACT)))
        yield* TestClock.adjust(2_000)
        const closed = yield* refused(network.send(access, PNID, textTo(CONTACT)), 400, 131047)
        assert.include(closed.error.error_data?.details ?? "", "24 hours")
        yield* refused(
          network.send(access, PNID, {
            messaging_product: MessagingProduct,
            to: CONTACT,
            type: "reaction",
            reaction: { message_id: "wamid.x", emoji: "👍" }
          }),
          400,
          131047
        )
        accepted(yield* network.send(access, PNID, templateTo(CONTACT, "order_update", ["#1", "Monday"])))
        yield* writeIn(CONTACT)
        accepted(yield* network.send(access, PNID, textTo(CONTACT)))
      })
    )

    test(
      "limits a number to 80 messages per second (130429)",
      Effect.gen(function*() {
        const { network } = yield* setup
        yield* approvedTemplate()
        const to = (i: number) => `1555020${String(i).padStart(4, "0")}`
        for (let i = 0; i < 80; i++) {
          accepted(yield* network.send(access, PNID, templateTo(to(i), "order_update", ["#1", "Monday"])))
        }
        yield* refused(network.send(access, PNID, templateTo(to(80), "order_update", ["#1", "Monday"])), 400, 130429)
        yield* TestClock.adjust(1_000)
        accepted(yield* network.send(access, PNID, templateTo(to(80), "order_update", ["#1", "Monday"])))
      })
    )

    test(
      "limits the pair rate to one contact: a burst of 45, then one per 6 seconds (131056)",
      Effect.gen(function*() {
        const { network } = yield* setup
        yield* approvedTemplate()
        const send = network.send(access, PNID, templateTo(CONTACT, "order_update", ["#1", "Monday"]))
        for (let i = 0; i < 45; i++) {
          accepted(yield* send)
          yield* TestClock.adjust(20)
        }
        yield* refused(send, 400, 131056)
        accepted(yield* network.send(access, PNID, templateTo("15550108888", "order_update", ["#1", "Monday"])))
        yield* TestClock.adjust(6_000)
        accepted(yield* send)
        yield* refused(send, 400, 131056)
      })
    )

    test(
      "reports sent, delivered and read as signed status webhooks, and failures with their errors",
      Effect.gen(function*() {
        const { network, nextMessagesChange, nextWebhook, noMoreWebhooks, simulator, writeIn } = yield* setup
        yield* writeIn(CONTACT)
        yield* nextMessagesChange
        const id = accepted(yield* network.send(access, PNID, textTo(CONTACT))).messages[0]!.id
        const start = (yield* simulator.outbox(PNID))[0]!.acceptedAt

        yield* noMoreWebhooks
        const expect = (status: string, offset: number) =>
          Effect.gen(function*() {
            const value = yield* nextMessagesChange
            assert.strictEqual(value.statuses?.length, 1)
            const update = value.statuses![0]!
            assert.strictEqual(update.id, id)
            assert.strictEqual(update.status, status)
            assert.strictEqual(update.recipient_id, CONTACT)
            assert.isString(update.recipient_user_id)
            assert.strictEqual(update.timestamp, String(Math.floor((start + offset) / 1000)))
            assert.strictEqual(update.pricing?.category, "service")
            assert.isUndefined(update.errors)
          })
        yield* TestClock.adjust(200)
        yield* expect("sent", 200)
        yield* noMoreWebhooks
        yield* TestClock.adjust(800)
        yield* expect("delivered", 1_000)
        assert.strictEqual((yield* simulator.outbox(PNID))[0]!.status, "delivered")
        yield* TestClock.adjust(2_000)
        yield* expect("read", 3_000)
        yield* noMoreWebhooks

        yield* approvedTemplate()
        assert.strictEqual((yield* nextWebhook).change.field, "message_template_status_update")
        yield* simulator.setReachable("+1 555 010 7777", false)
        const lost = accepted(yield* network.send(access, PNID, templateTo("15550107777", "order_update", ["#1", "Monday"])))
        yield* TestClock.adjust(200)
        const failed = yield* nextMessagesChange
        assert.isUndefined(failed.contacts)
        const update = failed.statuses![0]!
        assert.strictEqual(update.id, lost.messages[0]!.id)
        assert.strictEqual(update.status, "failed")
        assert.strictEqual(update.errors?.[0]?.code, 131026)
        assert.isString(update.errors?.[0]?.title)
        yield* TestClock.adjust(5_000)
        yield* noMoreWebhooks
        assert.strictEqual((yield* simulator.outbox(PNID)).at(-1)!.status, "failed")
      })
    )

    test(
      "delivers simulated contacts' messages as signed inbound webhooks, with business-scoped contacts",
      Effect.gen(function*() {
        const { network, nextMessagesChange, simulator } = yield* setup
        const first = yield* simulator.inbound(PNID, {
          from: "+1 555 010 9999",
          profile_name: "Kerry",
          message: { type: "text", text: { body: "hi there" } }
        })
        assert.isTrue(first.delivered)
        const value = yield* nextMessagesChange
        assert.strictEqual(value.contacts?.[0]?.profile?.name, "Kerry")
        assert.strictEqual(value.contacts?.[0]?.wa_id, CONTACT)
        assert.match(value.contacts?.[0]?.user_id ?? "", /^US\.\d+$/)
        const message = value.messages![0]!
        assert.strictEqual(message.id, first.id)
        assert.match(message.id, /^wamid\./)
        assert.strictEqual(message.from, CONTACT)
        assert.strictEqual(message.type, "text")
        assert.deepStrictEqual(message.text, { body: "hi there" })
        assert.match(message.timestamp, /^\d+$/)

        const reply = accepted(yield* network.send(access, PNID, {
          messaging_product: MessagingProduct,
          to: CONTACT,
          type: "interactive",
          interactive: {
            type: "button",
            body: { text: "Pick one" },
            action: { buttons: [{ type: "reply", reply: { id: "yes", title: "Yes" } }] }
          }
        }))
        yield* simulator.inbound(PNID, {
          from: CONTACT,
          message: {
            type: "interactive",
            context: { id: reply.messages[0]!.id },
            interactive: { type: "button_reply", button_reply: { id: "yes", title: "Yes" } }
          }
        })
        const answered = (yield* nextMessagesChange).messages![0]!
        assert.strictEqual(answered.type, "interactive")
        assert.deepStrictEqual(answered.context, { id: reply.messages[0]!.id, from: "15550100001" })

        const kinds: ReadonlyArray<Record<string, unknown>> = [
          { type: "reaction", reaction: { message_id: reply.messages[0]!.id, emoji: "👍" } },
          { type: "location", location: { latitude: 52.52, longitude: 13.405, name: "Office" } },
          { type: "button", button: { text: "Stop", payload: "STOP" } },
          { type: "image", image: { caption: "look" } }
        ]
        for (const message of kinds) {
          yield* simulator.inbound(PNID, { from: CONTACT, message })
          const received = (yield* nextMessagesChange).messages![0]!
          assert.strictEqual(received.type, message["type"])
        }
        const picture = (yield* simulator.outbox(PNID)).length
        assert.strictEqual(picture, 1, "inbound messages are not in the outbox")

        const bsuid = "US.13491208655302741918"
        const hidden = yield* simulator.inbound(PNID, {
          user_id: bsuid,
          profile_name: "Anon",
          username: "anon.user",
          message: { type: "text", text: { body: "no number" } }
        })
        const anonymous = yield* nextMessagesChange
        assert.isUndefined(anonymous.messages![0]!.from)
        assert.strictEqual(anonymous.messages![0]!.from_user_id, bsuid)
        assert.strictEqual(anonymous.messages![0]!.id, hidden.id)
        assert.isUndefined(anonymous.contacts![0]!.wa_id)
        assert.strictEqual(anonymous.contacts![0]!.user_id, bsuid)
        assert.strictEqual(anonymous.contacts![0]!.profile?.username, "anon.user")
        const toUser = accepted(yield* network.send(access, PNID, {
          messaging_product: MessagingProduct,
          recipient: bsuid,
          type: "text",
          text: { body: "hello you" }
        }))
        assert.deepStrictEqual(toUser.contacts, [{ input: bsuid, user_id: bsuid }])

        const bad = yield* Effect.exit(simulator.inbound(PNID, { from: CONTACT, message: { type: "text", text: {} } }))
        assert.isTrue(Exit.isFailure(bad))
        const noSender = yield* Effect.exit(simulator.inbound(PNID, { message: { type: "text", text: { body: "x" } } }))
        assert.isTrue(Exit.isFailure(noSender))
      })
    )

    test(
      "marks inbound messages read, with the typing indicator",
      Effect.gen(function*() {
        const { network, writeIn } = yield* setup
        const inbound = yield* writeIn(CONTACT)
        const read = yield* network.markRead(access, PNID, { messageId: inbound.id, typingIndicator: true })
        assert.deepStrictEqual(read.value, { success: true })
        const viaSend = yield* network.send(access, PNID, {
          messaging_product: MessagingProduct,
          status: "read",
          message_id: inbound.id
        })
        assert.deepStrictEqual(viaSend.value, { success: true })
        yield* refused(network.markRead(access, PNID, { messageId: "wamid.unknown" }), 400, 131009)
        yield* refused(
          network.send(access, PNID, {
            messaging_product: MessagingProduct,
            status: "read",
            message_id: inbound.id,
            typing_indicator: { type: "audio" }
          }),
          400,
          131009
        )
      })
    )

    test(
      "blocks only contacts who wrote in the last 24 hours, lists and unblocks them",
      Effect.gen(function*() {
        const { network, simulator, writeIn } = yield* setup
        yield* writeIn(CONTACT)
        const partial = yield* refused(
          network.blockUsers(access, PNID, {
            messaging_product: MessagingProduct,
            block_users: [{ user: CONTACT }, { user: "15550106666" }]
          }),
          400,
          139100
        )
        const detail = json(partial.body).block_users
        assert.deepStrictEqual(detail.added_users, [{ input: CONTACT, wa_id: CONTACT }])
        assert.strictEqual(detail.failed_users[0].input, "15550106666")

        const listed = yield* network.listBlockedUsers(access, PNID)
        assert.deepStrictEqual(listed.value.data, [{ messaging_product: MessagingProduct, wa_id: CONTACT }])
        const blockedInbound = yield* writeIn(CONTACT, "are you there?")
        assert.isTrue(blockedInbound.blocked)

        const removed = yield* network.unblockUsers(access, PNID, {
          messaging_product: MessagingProduct,
          block_users: [{ user: CONTACT }]
        })
        assert.deepStrictEqual(removed.value.block_users.removed_users, [{ input: CONTACT, wa_id: CONTACT }])
        assert.strictEqual((yield* network.listBlockedUsers(access, PNID)).value.data.length, 0)
        assert.isFalse((yield* simulator.inbound(PNID, { from: CONTACT, message: { type: "text", text: { body: "x" } } })).blocked)
      })
    )

    test(
      "reports the number's facts and the checks health needs",
      Effect.gen(function*() {
        const { network, nextWebhook, simulator, writeIn } = yield* setup
        const facts = (yield* network.getPhoneNumber(access, PNID)).value
        assert.strictEqual(facts.id, PNID)
        assert.strictEqual(facts.verified_name, "Conformance Shop")
        assert.strictEqual(facts.display_phone_number, DISPLAY)
        assert.strictEqual(facts.quality_rating, "GREEN")
        assert.strictEqual(facts.messaging_limit_tier, "TIER_10K")
        assert.strictEqual(facts.status, "CONNECTED")
        assert.strictEqual(facts.name_status, "APPROVED")
        assert.strictEqual(facts.code_verification_status, "VERIFIED")
        assert.strictEqual(facts.throughput?.level, "STANDARD")
        yield* refused(network.getPhoneNumber(access, PNID, { fields: ["no_such_field"] }), 400, 100)

        const numbers = (yield* network.listPhoneNumbers(access, WABA)).value.data
        assert.deepStrictEqual(numbers.map((n) => n.id), [PNID])

        assert.strictEqual((yield* network.getHealthStatus(access, PNID)).value.health_status.can_send_message, "AVAILABLE")
        yield* simulator.updateNumber(PNID, { qualityRating: "RED" })
        const quality = yield* nextWebhook
        assert.strictEqual(quality.change.field, "phone_number_quality_update")
        assert.strictEqual(Schema.decodeUnknownSync(QualityChangeValue)(quality.change.value).event, "DOWNGRADE")
        const health = (yield* network.getHealthStatus(access, PNID)).value.health_status
        assert.strictEqual(health.can_send_message, "LIMITED")
        assert.strictEqual(health.entities.find((e) => e.entity_type === "PHONE_NUMBER")?.can_send_message, "LIMITED")

        assert.strictEqual((yield* network.listSubscribedApps(access, WABA)).value.data.length, 1)
        yield* network.unsubscribeApp(access, WABA)
        assert.strictEqual((yield* network.listSubscribedApps(access, WABA)).value.data.length, 0)
        assert.isFalse((yield* writeIn(CONTACT)).delivered, "no subscribed app, no webhook")
        yield* network.subscribeApp(access, WABA)
        assert.isTrue((yield* writeIn(CONTACT)).delivered)
        yield* refused(network.subscribeApp(access, WABA, { overrideCallbackUri: "https://example.test/hook" }), 400, 100)
        yield* network.subscribeApp(access, WABA, { overrideCallbackUri: "https://example.test/hook", verifyToken: "v" })
        const apps = (yield* network.listSubscribedApps(access, WABA)).value.data
        assert.strictEqual(apps[0]?.override_callback_uri, "https://example.test/hook")
      })
    )

    test(
      "uploads an asset through a resumable session and answers its handle",
      Effect.gen(function*() {
        const { network } = yield* setup
        const bytes = new Uint8Array([0xff, 0xd8, 0xff, 0xe0, 1, 2, 3])
        const uploaded = yield* network.uploadAsset(access, { bytes, mimeType: "image/jpeg", filename: "header.jpg" })
        assert.match(uploaded.value.h, /^4::/)
        yield* refused(network.uploadAsset(access, { bytes, mimeType: "image/gif", filename: "header.gif" }), 400, 131053)
      })
    )

    test(
      "reviews a display name change on the clock, then shows it; refuses a bad one; releases a number",
      Effect.gen(function*() {
        const { network } = yield* setup
        const nameFields = { fields: ["verified_name", "name_status", "new_display_name", "new_name_status"] }
        const state = network.getPhoneNumber(access, PNID, nameFields).pipe(Effect.map((answer) => answer.value))
        assert.strictEqual((yield* state).new_name_status, "NONE")
        yield* refused(network.requestDisplayName(access, PNID, "A"), 400, 100)
        assert.deepStrictEqual((yield* network.requestDisplayName(access, PNID, "Conformance Store")).value, { success: true })
        const pending = yield* state
        assert.strictEqual(pending.new_display_name, "Conformance Store")
        assert.strictEqual(pending.new_name_status, "PENDING_REVIEW")
        assert.strictEqual(pending.verified_name, "Conformance Shop", "the old name shows while the review runs")
        yield* TestClock.adjust(simulatorOptions.nameReviewMs)
        const approved = yield* state
        assert.strictEqual(approved.new_name_status, "APPROVED")
        assert.strictEqual(approved.verified_name, "Conformance Shop")
        yield* TestClock.adjust(simulatorOptions.nameReviewMs)
        const applied = yield* state
        assert.strictEqual(applied.verified_name, "Conformance Store")
        assert.strictEqual(applied.new_name_status, "NONE")
        assert.isUndefined(applied.new_display_name)

        yield* network.requestDisplayName(access, PNID, "WhatsApp Store")
        yield* TestClock.adjust(simulatorOptions.nameReviewMs)
        const declined = yield* state
        assert.strictEqual(declined.new_name_status, "DECLINED")
        assert.strictEqual(declined.verified_name, "Conformance Store")

        assert.deepStrictEqual((yield* network.releaseNumber(access, PNID)).value, { success: true })
        assert.strictEqual((yield* network.getPhoneNumber(access, PNID)).value.status, "DISCONNECTED")
        yield* refused(network.releaseNumber(access, "999999"), 400, 100)
      })
    )

    test(
      "updates interactive form metadata",
      Effect.gen(function*() {
        const { network, simulator } = yield* setup
        const flowId = yield* simulator.createFlow(WABA, { name: "Booking" })
        const updated = yield* network.updateFlowMetadata(access, flowId, {
          name: "Book a visit",
          categories: ["APPOINTMENT_BOOKING"],
          endpoint_uri: "https://parley.test/functions/booking",
          application_id: "123456"
        })
        assert.deepStrictEqual(updated.value, { success: true })
        const flow = yield* simulator.flow(flowId)
        assert.strictEqual(flow?.name, "Book a visit")
        assert.deepStrictEqual(flow?.categories, ["APPOINTMENT_BOOKING"])
        assert.strictEqual(flow?.endpoint_uri, "https://parley.test/functions/booking")
        yield* refused(network.updateFlowMetadata(access, flowId, { categories: ["NOT_A_CATEGORY"] }), 400, 100)
        yield* refused(network.updateFlowMetadata(access, flowId, { categories: [] }), 400, 100)
        yield* refused(network.updateFlowMetadata(access, flowId, { endpoint_uri: "not a uri" }), 400, 100)
        yield* refused(network.updateFlowMetadata(access, "999999", { name: "x" }), 400, 100)
        assert.strictEqual((yield* simulator.flow(flowId))?.name, "Book a visit", "refused updates change nothing")
      })
    )

    test(
      "sets, reads, suggests and deletes the number's username",
      Effect.gen(function*() {
        const { network } = yield* setup
        yield* refused(network.getUsername(access, PNID), 404, 100)
        const suggestions = (yield* network.usernameSuggestions(access, PNID)).value.data[0]!.username_suggestions
        assert.isAbove(suggestions.length, 0)
        assert.include(suggestions, "conformanceshop")
        const set = yield* network.setUsername(access, PNID, { username: "conformance.shop" })
        assert.strictEqual(set.value.status, "approved")
        assert.deepStrictEqual((yield* network.getUsername(access, PNID)).value, { username: "conformance.shop", status: "approved" })
        yield* refused(network.setUsername(access, PNID, { username: "No Spaces" }), 400, 131009)
        yield* refused(network.setUsername(access, PNID, {}), 400, 131008)
        yield* refused(
          network.setUsername({ accessToken: Redacted.make(OTHER_TOKEN) }, OTHER_PNID, { username: "conformance.shop" }),
          400,
          131009
        )
        assert.deepStrictEqual((yield* network.deleteUsername(access, PNID)).value, { success: true })
        yield* refused(network.getUsername(access, PNID), 404, 100)
      })
    )

    test(
      "forwards other edges: the business profile, settings, and the network's error for an edge it does not have",
      Effect.gen(function*() {
        const { network } = yield* setup
        const profile = `${PNID}/whatsapp_business_profile`
        const get = (path: string, query?: string) => network.forward(access, { method: "GET", path, query })
        const post = (path: string, body: object) =>
          network.forward(access, { method: "POST", path, body: encoder.encode(JSON.stringify(body)) })
        const fresh = json((yield* get(profile)).body)
        assert.strictEqual(fresh.data.length, 1)
        assert.strictEqual(fresh.data[0].messaging_product, MessagingProduct)

        const updated = yield* post(profile, {
          messaging_product: MessagingProduct,
          about: "Open 9 to 5",
          email: "hello@shop.test",
          websites: ["https://shop.test", "https://shop.test/help"],
          vertical: "RETAIL"
        })
        assert.strictEqual(updated.status, 200)
        assert.include(updated.contentType, "application/json")
        assert.deepStrictEqual(json(updated.body), { success: true })
        assert.deepStrictEqual(json((yield* get(profile, "fields=about,websites")).body), {
          data: [{ about: "Open 9 to 5", websites: ["https://shop.test", "https://shop.test/help"], messaging_product: MessagingProduct }]
        })
        // Graph also takes form-encoded parameters.
        const form = yield* network.forward(access, {
          method: "POST",
          path: profile,
          body: encoder.encode("messaging_product=whatsapp&address=1+Main+St"),
          contentType: "application/x-www-form-urlencoded"
        })
        assert.deepStrictEqual(json(form.body), { success: true })
        assert.strictEqual(json((yield* get(profile, "fields=address")).body).data[0].address, "1 Main St")

        yield* refused(post(profile, { about: "no product" }), 400, 100)
        yield* refused(post(profile, { messaging_product: MessagingProduct, about: "x".repeat(140) }), 400, 100)
        yield* refused(
          post(profile, { messaging_product: MessagingProduct, websites: ["https://a.test", "https://b.test", "https://c.test"] }),
          400,
          100
        )
        yield* refused(post(profile, { messaging_product: MessagingProduct, vertical: "SPACESHIPS" }), 400, 100)
        yield* refused(get(profile, "fields=not_a_field"), 400, 100)
        assert.strictEqual(json((yield* get(profile, "fields=about")).body).data[0].about, "Open 9 to 5", "refusals change nothing")

        const settings = `${PNID}/settings`
        assert.strictEqual(json((yield* get(settings)).body).calling.status, "DISABLED")
        const enabled = yield* post(settings, { calling: { status: "ENABLED", call_icon_visibility: "DEFAULT" } })
        assert.deepStrictEqual(json(enabled.body), { success: true })
        assert.deepStrictEqual(json((yield* get(settings)).body).calling, {
          status: "ENABLED",
          call_icon_visibility: "DEFAULT",
          callback_permission_status: "DISABLED"
        })
        yield* refused(post(settings, { calling: { status: "MAYBE" } }), 400, 100)
        yield* refused(post(settings, { no_such_setting: true }), 400, 100)

        const unknown = yield* refused(get(`${PNID}/no_such_edge`), 400, 100)
        assert.strictEqual(unknown.error.error_subcode, 33)
        assert.strictEqual(unknown.error.type, "GraphMethodException")
        assert.match(unknown.error.error_data?.details ?? "", /^Unsupported get request\. Object with ID '/)
        yield* refused(network.forward(access, { method: "DELETE", path: profile }), 400, 100)
        yield* refused(get(`${OTHER_PNID}/settings`), 400, 100)
      })
    )

    test(
      "exchanges an embedded-signup code once for a token that acts for the chosen account",
      Effect.gen(function*() {
        const { network, simulator } = yield* setup
        const app = { appId: SIMULATOR_APP_ID, appSecret: Redacted.make(simulatorOptions.appSecret) }
        const business = simulator.signupCatalogue.find((b) => b.outcome === "ok")!
        const number = business.numbers.find((n) => n.verified && !n.coexistence)!
        const granted = yield* simulator.authorizeSignup({ businessAccountId: business.id, phoneNumberId: number.phoneNumberId })
        assert.strictEqual(granted._tag, "Granted")
        if (granted._tag !== "Granted") return
        assert.deepStrictEqual([granted.businessAccountId, granted.phoneNumberId, granted.provisioned], [business.id, number.phoneNumberId, false])

        yield* refused(network.exchangeSignupCode({ ...app, appSecret: Redacted.make("not the secret"), code: granted.code }), 400, 100)
        yield* refused(network.exchangeSignupCode({ ...app, code: "no-such-code" }), 400, 100)
        const exchanged = yield* network.exchangeSignupCode({ ...app, code: granted.code })
        assert.deepStrictEqual(Object.keys(json(exchanged.body)).sort(), ["access_token", "token_type"])
        const token: NetworkAccess = { accessToken: Redacted.make(exchanged.value.access_token) }
        const facts = yield* network.getPhoneNumber(token, number.phoneNumberId)
        assert.strictEqual(facts.value.display_phone_number, number.displayPhoneNumber)
        assert.strictEqual(facts.value.is_on_biz_app, false)
        yield* network.listSubscribedApps(token, business.id)
        yield* refused(network.getPhoneNumber(token, PNID), 400, 100)
        const reused = yield* refused(network.exchangeSignupCode({ ...app, code: granted.code }), 400, 100)
        assert.strictEqual(reused.error.error_subcode, 36009)

        // A code not exchanged within ten minutes expires.
        const late = yield* simulator.authorizeSignup({ businessAccountId: business.id, phoneNumberId: number.phoneNumberId })
        yield* TestClock.adjust(10 * 60 * 1000)
        if (late._tag === "Granted") yield* refused(network.exchangeSignupCode({ ...app, code: late.code }), 400, 100)
      })
    )

    test(
      "refuses signups the way the network does: account limit, unverified number, withdrawn grant; provisions new numbers",
      Effect.gen(function*() {
        const { network, simulator } = yield* setup
        const app = { appId: SIMULATOR_APP_ID, appSecret: Redacted.make(simulatorOptions.appSecret) }
        const byOutcome = (outcome: string) => simulator.signupCatalogue.find((b) => b.outcome === outcome)!
        const full = byOutcome("waba_limit_reached")
        assert.deepStrictEqual(
          yield* simulator.authorizeSignup({ businessAccountId: full.id, phoneNumberId: full.numbers[0]!.phoneNumberId }),
          { _tag: "Refused", reason: "waba_limit_reached" }
        )
        const ok = byOutcome("ok")
        const unverified = ok.numbers.find((n) => !n.verified)!
        assert.deepStrictEqual(
          yield* simulator.authorizeSignup({ businessAccountId: ok.id, phoneNumberId: unverified.phoneNumberId }),
          { _tag: "Refused", reason: "phone_verification_failed" }
        )
        const withdrawn = byOutcome("grant_withdrawn")
        const grant = yield* simulator.authorizeSignup({
          businessAccountId: withdrawn.id,
          phoneNumberId: withdrawn.numbers[0]!.phoneNumberId
        })
        assert.strictEqual(grant._tag, "Granted")
        if (grant._tag === "Granted") yield* refused(network.exchangeSignupCode({ ...app, code: grant.code }), 400, 100)

        const provisioned = yield* simulator.authorizeSignup({ businessAccountId: ok.id, provisionCountry: "MX" })
        assert.strictEqual(provisioned._tag, "Granted")
        if (provisioned._tag !== "Granted") return
        assert.isTrue(provisioned.provisioned)
        const token = yield* network.exchangeSignupCode({ ...app, code: provisioned.code })
        const facts = yield* network.getPhoneNumber({ accessToken: Redacted.make(token.value.access_token) }, provisioned.phoneNumberId)
        assert.match(facts.value.display_phone_number ?? "", /^\+52 /)
        const unknown = yield* Effect.flip(simulator.authorizeSignup({ businessAccountId: "999" }))
        assert.strictEqual(unknown._tag, "SimulatorInputError")
      })
    )
  })
}
