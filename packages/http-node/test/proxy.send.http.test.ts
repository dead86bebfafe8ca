/**
 * The messaging proxy's send route over real HTTP, with the network
 * simulator behind it: `POST /proxy[/vNN.N]/<phone_number_id>/messages`.
 * The envelope reaches the network byte for byte, the network's answer and
 * error objects come back unchanged, the outbound message is recorded and
 * moved, mark read reaches the thread, and the service's own refusals
 * (window, unknown number, key) have their exact shapes.
 */
import { assert, describe, it } from "@effect/vitest"
import { Ids, type MessageRecord, Messaging, MessagingNetwork, UpstreamInboxRepo, UpstreamSettings, type WebhookSink } from "@parley/core"
import { Simulator } from "@parley/core/simulators"
import { layerMemoryJobQueue, layerMemoryStorage } from "@parley/core/testing"
import { Context, Effect, Exit, Layer, Option, Redacted, Scope } from "effect"
import { FetchHttpClient } from "effect/http"
import { createParleyClient, ParleyError } from "@parley/client"
import { afterAll, beforeAll } from "vitest"
import { eventually, type MessagingHost, startMessagingHost, storedMessage as stored } from "./messaging.support.ts"


const VERIFY_TOKEN = "proxy-verify-token-0123456789"
const INGEST = "/platform/v1/msg/upstream/webhook"

let host: MessagingHost
let messaging: Messaging["Service"]
let simToken: string
let pnid: string
let waba: string
let close: () => Promise<void>
let sink: WebhookSink

const run = <A, E>(effect: Effect.Effect<A, E>) => Effect.runPromise(effect)

beforeAll(async () => {
  const scope = Effect.runSync(Scope.make())
  await Effect.runPromise(Effect.gen(function*() {
    const ports = Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layer)
    host = yield* startMessagingHost(ports, { PARLEY_UPSTREAM_VERIFY_TOKEN: VERIFY_TOKEN })
    const settings = Context.get(host.context, UpstreamSettings)
    const number = Option.getOrThrow(settings.simulatedNumber)
    simToken = Redacted.value(number.accessToken)
    pnid = number.phoneNumberId
    waba = number.businessAccountId
    messaging = Context.get(host.context, Messaging)
    sink = yield* Simulator.httpWebhookSink(`${host.url}${INGEST}`).pipe(Effect.provide(FetchHttpClient.layer))
    yield* host.simulator.setSink(sink)
  }).pipe(Effect.provideService(Scope.Scope, scope)))
  const connected = await host.request("POST", "/platform/v1/msg/phone_numbers", {
    body: { msg_config: { phone_number_id: pnid, business_account_id: waba, access_token: simToken } }
  })
  assert.strictEqual(connected.status, 201, connected.text)
  close = () => Effect.runPromise(Scope.close(scope, Exit.void))
}, 60_000)
afterAll(() => close())

/** A simulated contact writes in; answers the stored inbound message. */
const contactWrites = async (input: Record<string, unknown>): Promise<MessageRecord> => {
  const sent = await run(host.simulator.inbound(pnid, { message: { type: "text", text: { body: "hello" } }, ...input } as any))
  return storedMessage(sent.id)
}

const storedMessage = (id: string) => stored(host, pnid, id)

const outboundOf = async (conversationId: string) =>
  (await run(messaging.listMessages(host.projectA, { conversation_id: conversationId, direction: "outbound" }, {
    mode: "cursor",
    limit: 100
  }))).items

const send = (raw: string, options: { readonly key?: string | null; readonly version?: string; readonly number?: string } = {}) =>
  host.request("POST", `/proxy${options.version !== undefined ? `/${options.version}` : ""}/${options.number ?? pnid}/messages`, {
    raw,
    ...(options.key !== undefined ? { key: options.key } : {})
  })

describe("POST /proxy/<phone_number_id>/messages", () => {
  it("forwards the envelope byte for byte and answers the network's body unchanged", async () => {
    const inbound = await contactWrites({ from: "15550201001", profile_name: "Grace" })
    // Odd spacing and key order: whatever the caller wrote is what the network gets.
    const raw = `{ "to":"+1 555 020 1001",  "messaging_product" : "whatsapp","type":"text","text":{"body":"Hi \\u00e9!"} }`
    const res = await send(raw)
    assert.strictEqual(res.status, 200, res.text)
    assert.match(res.headers.get("content-type") ?? "", /^application\/json/)
    assert.deepStrictEqual(Object.keys(res.body), ["messaging_product", "contacts", "messages"])
    assert.strictEqual(res.body.messaging_product, "whatsapp")
    assert.deepStrictEqual(res.body.contacts, [{ input: "+1 555 020 1001", wa_id: "15550201001" }])
    assert.strictEqual(res.body.messages.length, 1)
    const networkId: string = res.body.messages[0].id
    assert.match(networkId, /^wamid\./)
    const entry = (await run(host.simulator.outbox(pnid))).find((e) => e.id === networkId)!
    assert.strictEqual(new TextDecoder().decode(entry.raw), raw)
    assert.strictEqual(entry.version, "v24.0")
    // Recorded with its conversation, given the network id, then moved by the network's reports.
    const stored = await storedMessage(networkId)
    assert.strictEqual(stored.direction, "outbound")
    assert.strictEqual(stored.origin, "api")
    assert.strictEqual(stored.conversation_id, inbound.conversation_id)
    assert.strictEqual(stored.content, "Hi é!")
    await eventually("status read", async () => (await storedMessage(networkId)).status === "read")
  })

  it("forwards the version segment as given", async () => {
    await contactWrites({ from: "15550201002" })
    const res = await send(`{"messaging_product":"whatsapp","to":"15550201002","type":"text","text":{"body":"v"}}`, { version: "v23.0" })
    assert.strictEqual(res.status, 200, res.text)
    const entry = (await run(host.simulator.outbox(pnid))).find((e) => e.id === res.body.messages[0].id)!
    assert.strictEqual(entry.version, "v23.0")
  })

  it("forwards a network error object unchanged, with its status, and records the send as failed", async () => {
    const envelope = {
      messaging_product: "whatsapp",
      to: "15550201003",
      type: "template",
      template: { name: "no_such_template", language: { code: "en_US" } }
    }
    const direct = await run(
      Effect.flip(Context.get(host.context, MessagingNetwork).send({ accessToken: Redacted.make(simToken) }, pnid, envelope))
    )
    const res = await send(JSON.stringify(envelope))
    assert.strictEqual(direct._tag, "NetworkRefused")
    if (direct._tag !== "NetworkRefused") return
    assert.strictEqual(res.status, direct.status)
    const expected = JSON.parse(new TextDecoder().decode(direct.body))
    assert.deepStrictEqual(Object.keys(res.body), ["error"])
    assert.deepStrictEqual(Object.keys(res.body.error), Object.keys(expected.error))
    const { fbtrace_id: _a, ...got } = res.body.error
    const { fbtrace_id: _b, ...want } = expected.error
    assert.deepStrictEqual(got, want)
    assert.strictEqual(res.body.error.code, 132001)
    const conversations = await run(messaging.listConversations(host.projectA, { phone_number: "15550201003" }, { mode: "cursor", limit: 10 }))
    assert.strictEqual(conversations.items.length, 1)
    const sent = await outboundOf(conversations.items[0]!.id)
    assert.strictEqual(sent.length, 1)
    assert.strictEqual(sent[0]!.status, "failed")
    assert.strictEqual((sent[0]!.statuses[0] as any).errors[0].code, 132001)
  })

  it("refuses a non-template send outside the 24-hour window before forwarding (7.5 shape)", async () => {
    const before = (await run(host.simulator.outbox(pnid))).length
    const res = await send(`{"messaging_product":"whatsapp","to":"15550201004","type":"text","text":{"body":"cold"}}`)
    assert.strictEqual(res.status, 422, res.text)
    assert.deepStrictEqual(res.body, {
      error: {
        message: "Only template messages can be sent outside the 24-hour window",
        type: "MessageError",
        code: 131047,
        error_data: {
          messaging_product: "whatsapp",
          details: "Message failed to send because more than 24 hours have passed since the customer last replied to this number."
        },
        error_subcode: 131047
      }
    })
    assert.strictEqual((await run(host.simulator.outbox(pnid))).length, before)
  })

  it("forwards a send to a contact whose message is acknowledged but not yet processed: the network decides", async () => {
    // The contact writes; the payload lands in the inbox, but its processing has not happened yet.
    await run(host.simulator.setSink(undefined))
    const written = await run(host.simulator.inbound(pnid, { from: "15550201099", message: { type: "text", text: { body: "now" } } } as any))
    await run(host.simulator.setSink(sink))
    await run(Context.get(host.context, UpstreamInboxRepo).insert({
      id: crypto.randomUUID(),
      msg_config_id: null,
      body: new TextEncoder().encode(JSON.stringify(written.payload)),
      signature: "sha256=unused",
      received_at: new Date().toISOString(),
      fanned_out_at: null,
      processed_at: null,
      // What ingestion records of the POST as it arrives: who wrote, per number.
      senders: [`${pnid}:15550201099`]
    }))
    const res = await send(`{"messaging_product":"whatsapp","to":"15550201099","type":"text","text":{"body":"reply"}}`)
    assert.strictEqual(res.status, 200, res.text)
  })

  it("sends to a business-scoped recipient: contacts carry user_id", async () => {
    const userId = "US.13491208655302741919"
    await contactWrites({ user_id: userId })
    const res = await send(JSON.stringify({ messaging_product: "whatsapp", recipient: userId, type: "text", text: { body: "bsuid" } }))
    assert.strictEqual(res.status, 200, res.text)
    assert.deepStrictEqual(res.body.contacts, [{ input: userId, user_id: userId }])
    const stored = await storedMessage(res.body.messages[0].id)
    assert.strictEqual(stored.direction, "outbound")
  })

  it("marks read (with typing indicator): { success: true } and the thread's inbound messages read", async () => {
    const first = await contactWrites({ from: "15550201005" })
    const second = await contactWrites({ from: "15550201005", message: { type: "text", text: { body: "again" } } })
    assert.strictEqual(first.status, "delivered")
    const res = await send(JSON.stringify({
      messaging_product: "whatsapp",
      status: "read",
      message_id: second.network_id,
      typing_indicator: { type: "text" }
    }))
    assert.strictEqual(res.status, 200, res.text)
    assert.deepStrictEqual(res.body, { success: true })
    assert.strictEqual((await storedMessage(first.network_id!)).status, "read")
    assert.strictEqual((await storedMessage(second.network_id!)).status, "read")
  })

  it("answers 404 in the network's shape for a number of another project", async () => {
    const res = await send(`{"messaging_product":"whatsapp","to":"15550201001","type":"text","text":{"body":"x"}}`, { key: host.otherKey })
    assert.strictEqual(res.status, 404, res.text)
    assert.deepStrictEqual(Object.keys(res.body.error), ["message", "type", "code", "error_data"])
    assert.strictEqual(res.body.error.code, 100)
    assert.strictEqual(res.body.error.type, "MessageError")
    const unknown = await send(`{}`, { number: "999000111" })
    assert.strictEqual(unknown.status, 404)
    assert.strictEqual(unknown.body.error.code, 100)
  })

  it("answers 401 without a valid key", async () => {
    const none = await send(`{}`, { key: null })
    assert.strictEqual(none.status, 401)
    assert.deepStrictEqual(none.body, { error: "Invalid API key" })
    const wrong = await send(`{}`, { key: "pk_test_nope" })
    assert.strictEqual(wrong.status, 401)
    assert.deepStrictEqual(wrong.body, { error: "Invalid API key" })
  })

  it("accepts Authorization: Bearer, and answers 413 to a send body over 1 MB", async () => {
    await contactWrites({ from: "15550201007" })
    const bearer = await host.request("POST", `/proxy/${pnid}/messages`, {
      key: null,
      headers: { authorization: `Bearer ${host.key}` },
      raw: `{"messaging_product":"whatsapp","to":"15550201007","type":"text","text":{"body":"b"}}`
    })
    assert.strictEqual(bearer.status, 200, bearer.text)
    const huge = await send(JSON.stringify({ messaging_product: "whatsapp", to: "15550201007", type: "text", text: { body: "x".repeat(1024 * 1024) } }))
    assert.strictEqual(huge.status, 413)
    assert.deepStrictEqual(huge.body, { error: "Request body too large" })
  })

  it("sends every one of several concurrent sends to one contact (never refused)", async () => {
    await contactWrites({ from: "15550201006" })
    const bodies = [1, 2, 3, 4, 5].map((i) => `{"messaging_product":"whatsapp","to":"15550201006","type":"text","text":{"body":"n${i}"}}`)
    const answers = await Promise.all(bodies.map((b) => send(b)))
    for (const a of answers) assert.strictEqual(a.status, 200, a.text)
    const ids = answers.map((a) => a.body.messages[0].id)
    const outbox = (await run(host.simulator.outbox(pnid))).filter((e) => ids.includes(e.id))
    assert.strictEqual(outbox.length, 5)
  })
})

describe("the proxy in the contract", () => {
  it("documents its routes in /openapi.json, served by the same pass-through (bytes kept, errors in the network's shape)", async () => {
    const doc = await host.request("GET", "/openapi.json", { key: null })
    assert.strictEqual(doc.status, 200)
    assert.deepStrictEqual(Object.keys(doc.body.paths["/proxy/{version}/{phone_number_id}/messages"] ?? {}).sort(), ["get", "post"])
    assert.deepStrictEqual(Object.keys(doc.body.paths["/proxy/{version}/{media_id}"] ?? {}).sort(), ["delete", "get"])
    await contactWrites({ from: "15550201008" })
    const raw = `{"to":"15550201008",   "messaging_product":"whatsapp","type":"text","text":{"body":"documented"}}`
    const res = await send(raw, { version: "v24.0" })
    assert.strictEqual(res.status, 200, res.text)
    const entry = (await run(host.simulator.outbox(pnid))).find((e) => e.id === res.body.messages[0].id)!
    assert.strictEqual(new TextDecoder().decode(entry.raw), raw)
    const unknown = await host.request("GET", "/proxy/v24.0/1234567890/messages", {})
    assert.strictEqual(unknown.status, 404)
    assert.strictEqual(unknown.body.error.code, 100)
    const keyless = await host.request("GET", `/proxy/v24.0/${pnid}/messages`, { key: null })
    assert.deepStrictEqual([keyless.status, keyless.body], [401, { error: "Invalid API key" }])
  })

  it("is called by the typed client: a send and the stored history", async () => {
    await contactWrites({ from: "15550201009" })
    const client = createParleyClient({ baseUrl: host.url, apiKey: host.key })
    const sent: any = await client.proxy.send({
      params: { version: "v24.0", phone_number_id: pnid },
      payload: { messaging_product: "whatsapp", to: "15550201009", type: "text", text: { body: "from the client" } }
    })
    const id: string = sent.messages[0].id
    assert.match(id, /^wamid\./)
    const one: any = await client.proxy.getMessage({ params: { version: "v24.0", phone_number_id: pnid, message_id: id } })
    assert.strictEqual(one.id, id)
    assert.strictEqual(one.text.body, "from the client")
    const missing = await client.proxy.getMessage({ params: { version: "v24.0", phone_number_id: pnid, message_id: "wamid.none" } })
      .then(() => undefined, (error: unknown) => error)
    assert.instanceOf(missing, ParleyError)
    assert.strictEqual((missing as ParleyError).status, 404)
    await client.close()
  })
})
