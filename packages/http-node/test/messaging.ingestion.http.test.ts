/**
 * Upstream webhook ingestion over real HTTP, with the network simulator as the
 * source: its signed webhooks are POSTed to the host's own
 * `/platform/v1/msg/upstream/webhook`. Sandbox inbound to stored message,
 * statuses after the simulator's real delays, re-delivered payloads,
 * out-of-order statuses, business-scoped contacts, media kept byte for byte,
 * signatures, the handshake, the per-config path, forwards to
 * `webhook_destination_url`, and no secret in any answer or log line.
 */
import { NodeHttpServer } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import {
  Ids,
  MediaRepo,
  MessageConfigsRepo,
  Messaging,
  MessagingNetwork,
  UpstreamInboxRepo,
  UpstreamIngestion,
  UpstreamSettings,
  UpstreamWebhook
} from "@parley/core"
import { Simulator } from "@parley/core/simulators"
import { layerMemoryJobQueue, layerMemoryStorage } from "@parley/core/testing"
import { Context, Effect, Exit, Layer, Option, Redacted, Scope } from "effect"
import { FetchHttpClient, HttpRouter, HttpServer, HttpServerResponse } from "effect/http"
import { createServer } from "node:http"
import { afterAll, beforeAll } from "vitest"
import { eventually, type MessagingHost, startMessagingHost, storedMessage as stored } from "./messaging.support.ts"

const VERIFY_TOKEN = "host-verify-token-0123456789"
const PATH = "/platform/v1/msg/upstream/webhook"

let host: MessagingHost
let cloud: MessagingHost
let messaging: Messaging["Service"]
let appSecret: string
let simToken: string
let pnid: string
let waba: string
let configId: string
let recorder: { readonly url: string; readonly requests: Array<{ readonly headers: Record<string, string | undefined>; readonly body: Uint8Array }> }
let close: () => Promise<void>

const run = <A, E>(effect: Effect.Effect<A, E>) => Effect.runPromise(effect)
const encoder = new TextEncoder()

/** A loopback server that records what it receives (the destination URL of forwards). */
const startRecorder = Effect.gen(function*() {
  const requests: Array<{ readonly headers: Record<string, string | undefined>; readonly body: Uint8Array }> = []
  const route = HttpRouter.add("POST", "/*", (request) =>
    Effect.map(request.arrayBuffer, (buffer) => {
      requests.push({ headers: request.headers, body: new Uint8Array(buffer) })
      return HttpServerResponse.empty({ status: 204 })
    }).pipe(Effect.orDie))
  const context = yield* Layer.build(
    HttpRouter.serve(route, { disableLogger: true, disableListenLog: true }).pipe(
      Layer.provideMerge(NodeHttpServer.layer(createServer, { port: 0, host: "127.0.0.1" }))
    )
  )
  const url = yield* HttpServer.addressFormattedWith(Effect.succeed).pipe(Effect.provideContext(context))
  return { url, requests }
})

beforeAll(async () => {
  const scope = Effect.runSync(Scope.make())
  await Effect.runPromise(Effect.gen(function*() {
    const ports = Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layer)
    host = yield* startMessagingHost(ports, { PARLEY_UPSTREAM_VERIFY_TOKEN: VERIFY_TOKEN })
    cloud = yield* startMessagingHost(ports, { PARLEY_UPSTREAM: "cloud" })
    recorder = yield* startRecorder
    const settings = Context.get(host.context, UpstreamSettings)
    appSecret = Redacted.value(Option.getOrThrow(settings.appSecret))
    const number = Option.getOrThrow(settings.simulatedNumber)
    simToken = Redacted.value(number.accessToken)
    pnid = number.phoneNumberId
    waba = number.businessAccountId
    messaging = Context.get(host.context, Messaging)
    // The simulator's webhooks go over real HTTP to the host's own ingestion route.
    const sink = yield* Simulator.httpWebhookSink(`${host.url}${PATH}`).pipe(Effect.provide(FetchHttpClient.layer))
    yield* host.simulator.setSink(sink)
  }).pipe(Effect.provideService(Scope.Scope, scope)))
  // Connected as a user would: the manual connection endpoint, verified against the network.
  const connected = await host.request("POST", "/platform/v1/msg/phone_numbers", {
    body: { msg_config: { phone_number_id: pnid, business_account_id: waba, access_token: simToken } }
  })
  assert.strictEqual(connected.status, 201, connected.text)
  configId = connected.body.data.id
  close = () => Effect.runPromise(Scope.close(scope, Exit.void))
}, 60_000)
afterAll(() => close())

const inbound = async (body: Record<string, unknown>, key?: string) => {
  const res = await host.request("POST", "/sandbox/inbound", { body: { phone_number_id: pnid, ...body }, ...(key !== undefined ? { key } : {}) })
  return res
}

const storedMessage = (networkId: string) => stored(host, pnid, networkId)

const countMessages = async (conversationId: string) =>
  (await run(messaging.listMessages(host.projectA, { conversation_id: conversationId }, { mode: "cursor", limit: 100 }))).items.length

/** The connected config as stored (with its credentials), for the service calls the proxy will make. */
const config = async () =>
  Option.getOrThrow(await run(Context.get(host.context, MessageConfigsRepo).findById(host.projectA, configId)))

const signed = (raw: Uint8Array, secret = appSecret) => UpstreamWebhook.hubSignature(raw, secret)

const post = (raw: Uint8Array, signature: string | undefined, path = PATH) =>
  host.request("POST", path, { raw, key: null, ...(signature !== undefined ? { headers: { "x-hub-signature-256": signature } } : {}) })

/** A POST of one `messages` change of the simulated number, `value` its contacts, messages or statuses. */
const changePayload = (value: Record<string, unknown>) => ({
  object: "whatsapp_business_account",
  entry: [{
    id: waba,
    changes: [{
      field: "messages",
      value: { messaging_product: "whatsapp", metadata: { display_phone_number: "15550100001", phone_number_id: pnid }, ...value }
    }]
  }]
})

const statusPayload = (status: Record<string, unknown>) => changePayload({ statuses: [status] })

describe("upstream webhook ingestion over HTTP (the simulator as the source)", () => {
  it("stores a sandbox inbound message: 202 with its id, then the message and its conversation", async () => {
    const res = await inbound({ from: "+49 151 0000 0001", profile_name: "Ada", message: { type: "text", text: { body: "hi" } } })
    assert.strictEqual(res.status, 202, res.text)
    assert.deepStrictEqual(Object.keys(res.body), ["id"])
    assert.match(res.body.id, /^wamid\./)
    const message = await storedMessage(res.body.id)
    assert.strictEqual(message.content, "hi")
    assert.strictEqual(message.direction, "inbound")
    assert.strictEqual(message.phone_number, "4915100000001")
    const conversation = await run(messaging.getConversation(host.projectA, message.conversation_id))
    assert.strictEqual(conversation.contact_name, "Ada")
    assert.strictEqual(conversation.messages_count, 1)
  })

  it("moves a recorded send to read as the simulated network reports it", async () => {
    const hello = await inbound({ from: "15550009001", message: { type: "text", text: { body: "window" } } })
    await storedMessage(hello.body.id)
    const network = Context.get(host.context, MessagingNetwork)
    const envelope = { messaging_product: "whatsapp", to: "15550009001", type: "text", text: { body: "Hi!" } }
    const answer = await run(network.send({ accessToken: Redacted.make(simToken) }, pnid, envelope))
    const id = "messages" in answer.value ? answer.value.messages[0]!.id : ""
    await run(messaging.recordOutbound(await config(), { envelope, network_id: id }))
    await eventually("status read", async () => (await storedMessage(id)).status === "read", 10_000)
    const read = await storedMessage(id)
    assert.deepStrictEqual(read.statuses.map((s: any) => s.status), ["sent", "delivered", "read"])
    const outbox = await host.request("GET", `/sandbox/outbox?phone_number_id=${pnid}`)
    assert.strictEqual(outbox.status, 200, outbox.text)
    const delivered = outbox.body.data.find((e: any) => e.id === id)
    assert.deepStrictEqual(Object.keys(delivered).sort(), ["accepted_at", "envelope", "id", "phone_number_id", "status", "to", "type", "user_id"])
    assert.strictEqual(delivered.status, "read")
    assert.strictEqual(delivered.to, "15550009001")
    assert.deepStrictEqual(delivered.envelope, envelope)
  })

  // Ten messages are recorded in the request that acknowledges them, eleven by the inbox job (its acknowledgement only
  // stores them): both end recorded once. What the cap buys, the acknowledgement's latency, is the ingestion bench's.
  it("records every message of a POST of ten (in the acknowledging request) and of eleven (by the inbox job)", async () => {
    const payload = (count: number, tag: string) => encoder.encode(JSON.stringify(changePayload({
      contacts: [{ wa_id: "15551300000", profile: { name: "Bo" } }],
      messages: Array.from({ length: count }, (_, i) => ({
        from: "15551300000",
        id: `wamid.${tag}.${i}`,
        timestamp: String(Math.floor(Date.now() / 1000)),
        type: "text",
        text: { body: `${tag} ${i}` }
      }))
    })))
    const few = payload(10, "few")
    assert.strictEqual((await post(few, signed(few))).status, 200)
    for (let i = 0; i < 10; i++) assert.strictEqual((await storedMessage(`wamid.few.${i}`)).content, `few ${i}`)
    const many = payload(11, "many")
    assert.strictEqual((await post(many, signed(many))).status, 200)
    for (let i = 0; i < 11; i++) assert.strictEqual((await storedMessage(`wamid.many.${i}`)).content, `many ${i}`)
  })

  // A POST of status reports only (at most 100) is applied in the request that acknowledges it (its inbox row written
  // already processed); 101, or reports beside a message, go to the inbox job. Every report is applied once either way.
  it("applies a POST of status reports before acknowledging it, and larger or mixed POSTs through the inbox job", async () => {
    const record = await config()
    const sends = await Promise.all(Array.from({ length: 3 }, async (_, i) => {
      const id = `wamid.inline-status-${i}-${crypto.randomUUID()}`
      await run(messaging.recordOutbound(record, {
        envelope: { messaging_product: "whatsapp", to: "15550009004", type: "text", text: { body: `s${i}` } },
        network_id: id
      }))
      return id
    }))
    const ingestion = Context.get(host.context, UpstreamIngestion)
    const inbox = Context.get(host.context, UpstreamInboxRepo)
    /** Received as the webhook route receives it; answers whether the POST was processed in the receiving call. */
    const receivedInline = async (raw: Uint8Array) => {
      const entry = await run(ingestion.receive(raw, signed(raw)))
      const stored = Option.getOrThrow(await run(inbox.find(entry.id)))
      return stored.processed_at !== null && stored.fanned_out_at === stored.processed_at
    }
    const delivered = (id: string) => ({ id, status: "delivered", timestamp: "20", recipient_id: "15550009004" })
    const few = encoder.encode(JSON.stringify(changePayload({ statuses: [{ ...delivered(sends[0]!), status: "sent", timestamp: "10" }, delivered(sends[0]!)] })))
    assert.isTrue(await receivedInline(few))
    const applied = await storedMessage(sends[0]!)
    assert.strictEqual(applied.status, "delivered")
    assert.deepStrictEqual(applied.statuses.map((s: any) => s.status), ["sent", "delivered"])
    // 101 reports: the first for a send of this host, the rest for messages it never sent (kept, applied to nothing).
    const strangers = Array.from({ length: 100 }, (_, i) => delivered(`wamid.unknown-${i}-${crypto.randomUUID()}`))
    const many = encoder.encode(JSON.stringify(changePayload({ statuses: [delivered(sends[1]!), ...strangers] })))
    assert.isFalse(await receivedInline(many))
    const mixed = encoder.encode(JSON.stringify(changePayload({
      contacts: [{ wa_id: "15550009004", profile: { name: "Mo" } }],
      messages: [{ from: "15550009004", id: `wamid.mixed-${crypto.randomUUID()}`, timestamp: String(Math.floor(Date.now() / 1000)), type: "text", text: { body: "mixed" } }],
      statuses: [delivered(sends[2]!)]
    })))
    assert.isFalse(await receivedInline(mixed))
    await eventually("the queued reports applied", async () =>
      (await storedMessage(sends[1]!)).status === "delivered" && (await storedMessage(sends[2]!)).status === "delivered")
    // Over HTTP too, and a report delivered again is kept once.
    assert.strictEqual((await post(few, signed(few))).status, 200)
    for (const id of sends) assert.strictEqual((await storedMessage(id)).statuses.filter((s: any) => s.status === "delivered").length, 1)
  })

  it("acknowledges a re-delivered payload and stores it once", async () => {
    const sent = await run(host.simulator.inbound(pnid, { from: "15550009002", message: { type: "text", text: { body: "once" } } }))
    const message = await storedMessage(sent.id)
    const raw = encoder.encode(JSON.stringify(sent.payload))
    for (let i = 0; i < 3; i++) assert.strictEqual((await post(raw, signed(raw))).status, 200)
    await new Promise((resolve) => setTimeout(resolve, 300))
    assert.strictEqual(await countMessages(message.conversation_id), 1)
  })

  it("records a message a POST repeats once (its rows are written after routing)", async () => {
    const id = `wamid.test-${crypto.randomUUID()}`
    const message = { from: "15550009012", id, timestamp: "1772600000", type: "text", text: { body: "twice in one POST" } }
    const raw = encoder.encode(JSON.stringify(changePayload({
      contacts: [{ wa_id: "15550009012", profile: { name: "Twice" } }],
      messages: [message, message]
    })))
    assert.strictEqual((await post(raw, signed(raw))).status, 200)
    const stored = await storedMessage(id)
    assert.strictEqual(stored.content, "twice in one POST")
    assert.strictEqual(await countMessages(stored.conversation_id), 1)
  })

  it("never downgrades on out-of-order statuses, and keeps every report once", async () => {
    const record = await config()
    const id = `wamid.test-${crypto.randomUUID()}`
    await run(messaging.recordOutbound(record, {
      envelope: { messaging_product: "whatsapp", to: "15550009003", type: "text", text: { body: "x" } },
      network_id: id
    }))
    for (const [status, ts] of [["read", "30"], ["delivered", "20"], ["sent", "10"], ["read", "30"]] as const) {
      const raw = encoder.encode(JSON.stringify(statusPayload({ id, status, timestamp: ts, recipient_id: "15550009003" })))
      assert.strictEqual((await post(raw, signed(raw))).status, 200)
    }
    await eventually("three reports applied", async () => (await storedMessage(id)).statuses.length === 3)
    await new Promise((resolve) => setTimeout(resolve, 200))
    const message = await storedMessage(id)
    assert.strictEqual(message.status, "read")
    assert.deepStrictEqual(message.statuses.map((s: any) => s.status), ["read", "delivered", "sent"])
  })

  it("stores messages of contacts known only by a business-scoped id", async () => {
    const res = await inbound({ user_id: "US.13491208655302741918", profile_name: "Anon", message: { type: "text", text: { body: "bsuid" } } })
    assert.strictEqual(res.status, 202, res.text)
    const message = await storedMessage(res.body.id)
    assert.isNull(message.phone_number)
    assert.strictEqual(message.fields["from_user_id"], "US.13491208655302741918")
    const conversation = await run(messaging.getConversation(host.projectA, message.conversation_id))
    assert.isNull(conversation.phone_number)
    assert.strictEqual(conversation.business_scoped_user_id, "US.13491208655302741918")
  })

  it("fetches inbound media from the network and keeps it byte for byte", async () => {
    const bytes = crypto.getRandomValues(new Uint8Array(60_000))
    bytes.set([0xff, 0xd8, 0xff, 0xe0], 0)
    const sent = await run(host.simulator.inbound(pnid, {
      from: "15550009004",
      message: { type: "document", document: { caption: "invoice" } },
      media: { bytes, mimeType: "application/pdf", filename: "invoice ☕.pdf" }
    }))
    const message = await storedMessage(sent.id)
    assert.isTrue(message.has_media)
    assert.strictEqual(message.media!.filename, "invoice ☕.pdf")
    assert.strictEqual(message.media!.byte_size, 60_000)
    const kept = Option.getOrThrow(await run(Context.get(host.context, MediaRepo).find(host.projectA, message.media!.id)))
    assert.isTrue(Buffer.from(kept.bytes).equals(Buffer.from(bytes)), "byte-identical")
    assert.strictEqual(
      message.content,
      `invoice\nDocument attached (invoice ☕.pdf) [Size: 59 KB, Type: application/pdf] URL: ${host.url}/platform/v1/msg/media/${message.media!.id}/content`
    )
  })

  it("answers 401 to a missing or wrong signature and stores nothing", async () => {
    const id = `wamid.forged-${crypto.randomUUID()}`
    const payload = {
      object: "whatsapp_business_account",
      entry: [{ id: waba, changes: [{ field: "messages", value: {
        messaging_product: "whatsapp",
        metadata: { display_phone_number: "15550100001", phone_number_id: pnid },
        contacts: [{ wa_id: "15550009005", profile: { name: "Mallory" } }],
        messages: [{ from: "15550009005", id, timestamp: "1772600000", type: "text", text: { body: "forged" } }]
      } }] }]
    }
    const raw = encoder.encode(JSON.stringify(payload))
    for (const signature of [undefined, signed(raw, "not-the-secret"), "sha256=zz", signed(encoder.encode("other bytes"))]) {
      const res = await post(raw, signature)
      assert.strictEqual(res.status, 401, res.text)
      assert.deepStrictEqual(res.body, { error: "Invalid signature" })
    }
    await new Promise((resolve) => setTimeout(resolve, 300))
    assert.isTrue(Exit.isFailure(await Effect.runPromiseExit(messaging.getMessage(host.projectA, pnid, id))))
    // The same bytes, signed: accepted and stored.
    assert.strictEqual((await post(raw, signed(raw))).status, 200)
    assert.strictEqual((await storedMessage(id)).content, "forged")
  })

  it("answers the GET handshake with the challenge as text/plain, and 403 otherwise", async () => {
    const ok = await host.request("GET", `${PATH}?hub.mode=subscribe&hub.verify_token=${VERIFY_TOKEN}&hub.challenge=1158201444`, { key: null })
    assert.strictEqual(ok.status, 200)
    assert.strictEqual(ok.text, "1158201444")
    assert.match(ok.headers.get("content-type") ?? "", /^text\/plain/)
    for (const query of [
      `hub.mode=subscribe&hub.verify_token=wrong&hub.challenge=1`,
      `hub.mode=unsubscribe&hub.verify_token=${VERIFY_TOKEN}&hub.challenge=1`,
      `hub.mode=subscribe&hub.challenge=1`
    ]) {
      const refused = await host.request("GET", `${PATH}?${query}`, { key: null })
      assert.strictEqual(refused.status, 403, query)
      assert.deepStrictEqual(refused.body, { error: "Verification failed" })
    }
  })

  it("verifies a config's own path with its verify token and app secret", async () => {
    const patched = await host.request("PATCH", `/api/v1/msg_configs/${configId}`, {
      body: { msg_config: { webhook_verify_token: "config-verify-token", app_secret: "config-app-secret" } }
    })
    assert.strictEqual(patched.status, 200, patched.text)
    const own = `${PATH}/${configId}`
    const ok = await host.request("GET", `${own}?hub.mode=subscribe&hub.verify_token=config-verify-token&hub.challenge=42`, { key: null })
    assert.strictEqual(ok.status, 200)
    assert.strictEqual(ok.text, "42")
    const listed = await host.request("GET", `/platform/v1/msg/phone_numbers/${pnid}`)
    assert.isNotNull(listed.body.data.webhook_verified_at)
    assert.strictEqual(
      (await host.request("GET", `${own}?hub.mode=subscribe&hub.verify_token=${VERIFY_TOKEN}&hub.challenge=42`, { key: null })).status,
      403,
      "the host's token does not open a config's path"
    )
    const sent = await run(host.simulator.inbound(pnid, { from: "15550009006", message: { type: "text", text: { body: "own app" } } }))
    const raw = encoder.encode(JSON.stringify(sent.payload))
    assert.strictEqual((await post(raw, signed(raw), own)).status, 401, "the host's secret does not sign for the config")
    assert.strictEqual((await post(raw, signed(raw, "config-app-secret"), own)).status, 200)
    assert.strictEqual((await storedMessage(sent.id)).content, "own app")
    assert.strictEqual((await post(raw, signed(raw), `${PATH}/00000000-0000-4000-8000-00000000dead`)).status, 404)
  })

  it("forwards raw payloads unchanged, with their signature, to webhook_destination_url", async () => {
    const patched = await host.request("PATCH", `/api/v1/msg_configs/${configId}`, {
      body: { msg_config: { webhook_destination_url: `${recorder.url}/hook` } }
    })
    assert.strictEqual(patched.status, 200, patched.text)
    const before = recorder.requests.length
    const sent = await run(host.simulator.inbound(pnid, { from: "15550009007", message: { type: "text", text: { body: "fwd" } } }))
    await eventually("forwarded", () => recorder.requests.length > before)
    const forwarded = recorder.requests[recorder.requests.length - 1]!
    const raw = encoder.encode(JSON.stringify(sent.payload))
    assert.isTrue(Buffer.from(forwarded.body).equals(Buffer.from(raw)), "byte for byte")
    assert.strictEqual(forwarded.headers["x-hub-signature-256"], signed(raw))
    // Parley's internal tracing stays inside Parley.
    for (const name of ["traceparent", "tracestate", "b3", "x-b3-traceid"]) assert.isUndefined(forwarded.headers[name], name)
    await host.request("PATCH", `/api/v1/msg_configs/${configId}`, { body: { msg_config: { webhook_destination_url: null } } })
  })

  it("refuses bodies over 10 MB with 413", async () => {
    const res = await post(new Uint8Array(10 * 1024 * 1024 + 1).fill(32), "sha256=00")
    assert.strictEqual(res.status, 413)
    assert.deepStrictEqual(res.body, { error: "Request body too large" })
  })

  it("answers 404 for a number of another project, and 422 for a message the network would not take", async () => {
    const other = await inbound({ from: "15550009008", message: { type: "text", text: { body: "x" } } }, host.otherKey)
    assert.strictEqual(other.status, 404, other.text)
    assert.deepStrictEqual(other.body, { error: "Phone number not found" })
    const bad = await inbound({ from: "15550009008", message: { type: "text" } })
    assert.strictEqual(bad.status, 422, bad.text)
    assert.deepStrictEqual(bad.body, { error: "message.text is required" })
    const noKey = await inbound({ from: "15550009008", message: { type: "text", text: { body: "x" } } }, "pk_unknown_key_000000000")
    assert.strictEqual(noKey.status, 401)
  })

  it("has no sandbox in cloud mode", async () => {
    const res = await cloud.request("POST", "/sandbox/inbound", {
      body: { phone_number_id: pnid, from: "15550009009", message: { type: "text", text: { body: "x" } } }
    })
    assert.strictEqual(res.status, 404)
    assert.deepStrictEqual(res.body, { error: "Not found" })
    assert.strictEqual((await cloud.request("GET", `/sandbox/outbox?phone_number_id=${pnid}`)).status, 404)
    // Without an app secret configured, the host-wide path accepts nothing.
    const raw = encoder.encode("{}")
    assert.strictEqual((await cloud.request("POST", PATH, { raw, key: null, headers: { "x-hub-signature-256": signed(raw) } })).status, 401)
  })

  it("never shows a secret in an answer or a log line", () => {
    const secrets = [simToken, appSecret, VERIFY_TOKEN, "config-verify-token", "config-app-secret", `${recorder.url}/hook`]
    assert.isAbove(host.logs.length, 10)
    for (const text of [...host.answers, ...host.logs]) {
      for (const secret of secrets) assert.notInclude(text, secret)
    }
  })
})
