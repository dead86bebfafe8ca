/**
 * The Platform API reads of stored conversations and messages over real HTTP (decisions 4.8, 2.10, 3.5, 1.3):
 * `GET /platform/v1/msg/conversations[/<id>]`, `PATCH /platform/v1/msg/conversations/<id>` and
 * `GET /platform/v1/msg/messages`, with their filters, both paging styles and cross-project 404s.
 */
import { assert, describe, it } from "@effect/vitest"
import { createParleyClient } from "@parley/client"
import { Ids, type MessageRecord, Messaging } from "@parley/core"
import { layerMemoryJobQueue, layerMemoryStorage } from "@parley/core/testing"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import { afterAll, beforeAll } from "vitest"
import { connectSimulatedNumber, type MessagingHost, startMessagingHost, storedMessage as stored } from "./messaging.support.ts"

const CONVERSATIONS = "/platform/v1/msg/conversations"
const MESSAGES = "/platform/v1/msg/messages"
const LIN = "15550401001"
const KIM = "15550401002"

let host: MessagingHost
let messaging: Messaging["Service"]
let pnid: string
let close: () => Promise<void>
const linMessages: Array<MessageRecord> = []
let kimConversation: string
let outboundId: string

const run = <A, E>(effect: Effect.Effect<A, E>) => Effect.runPromise(effect)

const storedMessage = (id: string) => stored(host, pnid, id)

const inbound = async (from: string, body: string) => {
  const sent = await run(host.simulator.inbound(pnid, { from, profile_name: from === LIN ? "Lin" : "Kim", message: { type: "text", text: { body } } }))
  const stored = await storedMessage(sent.id)
  await new Promise((resolve) => setTimeout(resolve, 5))
  return stored
}

beforeAll(async () => {
  const scope = Effect.runSync(Scope.make())
  await Effect.runPromise(Effect.gen(function*() {
    const ports = Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layer)
    host = yield* startMessagingHost(ports, { PARLEY_UPSTREAM_VERIFY_TOKEN: "platform-reads-verify-token-0123" })
    const number = yield* connectSimulatedNumber(host, { sink: true })
    pnid = number.phoneNumberId
    messaging = Context.get(host.context, Messaging)
  }).pipe(Effect.provideService(Scope.Scope, scope)))
  close = () => Effect.runPromise(Scope.close(scope, Exit.void))
  for (const body of ["one", "two"]) linMessages.push(await inbound(LIN, body))
  kimConversation = (await inbound(KIM, "hello")).conversation_id
  const res = await host.request("POST", `/proxy/${pnid}/messages`, {
    raw: `{"messaging_product":"whatsapp","to":"${LIN}","type":"text","text":{"body":"reply"}}`
  })
  assert.strictEqual(res.status, 200, res.text)
  outboundId = res.body.messages[0].id
  await storedMessage(outboundId)
}, 60_000)
afterAll(() => close())

const CONVERSATION_KEYS = [
  "id",
  "phone_number",
  "status",
  "last_active_at",
  "created_at",
  "updated_at",
  "msg_config_id",
  "phone_number_id",
  "metadata",
  "business_scoped_user_id",
  "parent_business_scoped_user_id",
  "username",
  "assigned_user_id",
  "ext"
]

describe("GET /platform/v1/msg/conversations", () => {
  it("lists newest first in the proxy's shape with ext, in cursor mode by default", async () => {
    const res = await host.request("GET", CONVERSATIONS)
    assert.strictEqual(res.status, 200, res.text)
    assert.deepStrictEqual(Object.keys(res.body), ["data", "paging"])
    assert.deepStrictEqual(res.body.data.map((c: any) => c.phone_number), [KIM, LIN])
    const lin = res.body.data[1]
    assert.deepStrictEqual(Object.keys(lin), CONVERSATION_KEYS)
    assert.strictEqual(lin.id, linMessages[0]!.conversation_id)
    assert.strictEqual(lin.status, "active")
    assert.strictEqual(lin.phone_number_id, pnid)
    assert.strictEqual(lin.metadata, null)
    assert.deepStrictEqual(Object.keys(lin.ext), [
      "contact_name",
      "messages_count",
      "last_message_id",
      "last_message_type",
      "last_message_timestamp",
      "last_message_text",
      "last_inbound_at",
      "last_outbound_at"
    ])
    assert.strictEqual(lin.ext.contact_name, "Lin")
    assert.strictEqual(lin.ext.messages_count, 3)
    assert.deepStrictEqual(res.body.paging.next, null)
    assert.deepStrictEqual(res.body.paging.previous, null)
  })

  it("filters by phone_number (+ and spaces tolerated), phone_number_id and status", async () => {
    const byPhone = await host.request("GET", `${CONVERSATIONS}?phone_number=${encodeURIComponent("+1 555 040 1002")}`)
    assert.strictEqual(byPhone.status, 200, byPhone.text)
    assert.deepStrictEqual(byPhone.body.data.map((c: any) => c.id), [kimConversation])
    const byNumber = await host.request("GET", `${CONVERSATIONS}?phone_number_id=${pnid}&status=active`)
    assert.strictEqual(byNumber.body.data.length >= 2, true)
    const unknownNumber = await host.request("GET", `${CONVERSATIONS}?phone_number_id=999000111`)
    assert.strictEqual(unknownNumber.status, 200)
    assert.deepStrictEqual(unknownNumber.body.data, [])
    const badStatus = await host.request("GET", `${CONVERSATIONS}?status=open`)
    assert.strictEqual(badStatus.status, 422, badStatus.text)
    assert.deepStrictEqual(badStatus.body, {
      error: 'status: Expected "active" | "ended"',
      details: [{ path: "status", message: 'Expected "active" | "ended"' }]
    })
  })

  it("pages with cursors and in page mode (meta and X-Total headers)", async () => {
    const first = await host.request("GET", `${CONVERSATIONS}?phone_number_id=${pnid}&limit=1`)
    assert.strictEqual(first.status, 200, first.text)
    assert.strictEqual(first.body.data.length, 1)
    const next = new URL(first.body.paging.next)
    assert.strictEqual(next.pathname, CONVERSATIONS)
    assert.strictEqual(next.searchParams.get("phone_number_id"), pnid)
    const second = await host.request("GET", `${next.pathname}${next.search}`)
    assert.strictEqual(second.status, 200, second.text)
    assert.notStrictEqual(second.body.data[0].id, first.body.data[0].id)
    assert.notStrictEqual(second.body.paging.previous, null)

    const page = await host.request("GET", `${CONVERSATIONS}?per_page=1&page=2&phone_number=${KIM}`)
    assert.strictEqual(page.status, 200, page.text)
    assert.deepStrictEqual(Object.keys(page.body), ["data", "meta"])
    assert.deepStrictEqual(page.body.data, [])
    assert.deepStrictEqual(page.body.meta, { page: 2, per_page: 1, total_pages: 1, total_count: 1 })
    assert.strictEqual(page.headers.get("x-total"), "1")

    const tooMany = await host.request("GET", `${CONVERSATIONS}?limit=101`)
    assert.strictEqual(tooMany.status, 422, tooMany.text)
    const badCursor = await host.request("GET", `${CONVERSATIONS}?after=!!!`)
    assert.strictEqual(badCursor.status, 400, badCursor.text)
  })

  it("shows another project nothing", async () => {
    const res = await host.request("GET", CONVERSATIONS, { key: host.otherKey })
    assert.strictEqual(res.status, 200, res.text)
    assert.deepStrictEqual(res.body.data, [])
    const unauthenticated = await host.request("GET", CONVERSATIONS, { key: null })
    assert.strictEqual(unauthenticated.status, 401)
  })
})

describe("GET /platform/v1/msg/conversations/<id>", () => {
  it("answers { data } and 404 across projects", async () => {
    const res = await host.request("GET", `${CONVERSATIONS}/${kimConversation}`)
    assert.strictEqual(res.status, 200, res.text)
    assert.deepStrictEqual(Object.keys(res.body), ["data"])
    assert.deepStrictEqual(Object.keys(res.body.data), CONVERSATION_KEYS)
    assert.strictEqual(res.body.data.phone_number, KIM)
    const other = await host.request("GET", `${CONVERSATIONS}/${kimConversation}`, { key: host.otherKey })
    assert.strictEqual(other.status, 404)
    assert.deepStrictEqual(other.body, { error: "Conversation not found" })
    const unknown = await host.request("GET", `${CONVERSATIONS}/00000000-0000-4000-8000-000000000000`)
    assert.strictEqual(unknown.status, 404)
    assert.deepStrictEqual(unknown.body, { error: "Conversation not found" })
  })
})

describe("PATCH /platform/v1/msg/conversations/<id>", () => {
  it("replaces metadata as a whole, clears it with null, and refuses more than 16 KB", async () => {
    const path = `${CONVERSATIONS}/${kimConversation}`
    const first = await host.request("PATCH", path, { body: { msg_conversation: { metadata: { a: 1, b: { c: "x" } } } } })
    assert.strictEqual(first.status, 200, first.text)
    assert.deepStrictEqual(first.body.data.metadata, { a: 1, b: { c: "x" } })
    assert.strictEqual(first.body.data.status, "active")
    const second = await host.request("PATCH", path, { body: { msg_conversation: { metadata: { d: true } } } })
    assert.deepStrictEqual(second.body.data.metadata, { d: true })
    const got = await host.request("GET", path)
    assert.deepStrictEqual(got.body.data.metadata, { d: true })

    // {"v":"…"} is 8 bytes around the string.
    const exact = await host.request("PATCH", path, { body: { msg_conversation: { metadata: { v: "x".repeat(16 * 1024 - 8) } } } })
    assert.strictEqual(exact.status, 200, exact.text)
    const over = await host.request("PATCH", path, { body: { msg_conversation: { metadata: { v: "x".repeat(16 * 1024 - 7) } } } })
    assert.strictEqual(over.status, 422, over.text)
    assert.strictEqual(over.body.error, "metadata must be at most 16 KB when serialized")
    const kept = await host.request("GET", path)
    assert.strictEqual(kept.body.data.metadata.v.length, 16 * 1024 - 8)

    const cleared = await host.request("PATCH", path, { body: { msg_conversation: { metadata: null } } })
    assert.strictEqual(cleared.status, 200, cleared.text)
    assert.strictEqual(cleared.body.data.metadata, null)
  })

  it("answers 400 without the envelope and 404 across projects", async () => {
    const path = `${CONVERSATIONS}/${kimConversation}`
    const missing = await host.request("PATCH", path, { body: { status: "ended" } })
    assert.strictEqual(missing.status, 400, missing.text)
    const other = await host.request("PATCH", path, { key: host.otherKey, body: { msg_conversation: { status: "ended" } } })
    assert.strictEqual(other.status, 404)
    assert.deepStrictEqual(other.body, { error: "Conversation not found" })
    const still = await host.request("GET", path)
    assert.strictEqual(still.body.data.status, "active")
  })

  it("ends with reason manual, refuses to reopen while a newer one is active, reopens otherwise", async () => {
    const path = `${CONVERSATIONS}/${kimConversation}`
    const ended = await host.request("PATCH", path, { body: { msg_conversation: { status: "ended" } } })
    assert.strictEqual(ended.status, 200, ended.text)
    assert.strictEqual(ended.body.data.status, "ended")
    const record = await run(messaging.getConversation(host.projectA, kimConversation))
    assert.strictEqual(record.end_reason, "manual")
    assert.notStrictEqual(record.ended_at, null)
    // Ending again changes nothing.
    const again = await host.request("PATCH", path, { body: { msg_conversation: { status: "ended" } } })
    assert.strictEqual(again.status, 200, again.text)
    assert.strictEqual(again.body.data.updated_at, ended.body.data.updated_at)

    const newer = (await inbound(KIM, "back again")).conversation_id
    assert.notStrictEqual(newer, kimConversation)
    const refused = await host.request("PATCH", path, { body: { msg_conversation: { status: "active" } } })
    assert.strictEqual(refused.status, 422, refused.text)
    assert.strictEqual(refused.body.error, "The contact has a newer active conversation on this number")
    assert.strictEqual((await host.request("GET", path)).body.data.status, "ended")

    const endNewer = await host.request("PATCH", `${CONVERSATIONS}/${newer}`, { body: { msg_conversation: { status: "ended" } } })
    assert.strictEqual(endNewer.status, 200, endNewer.text)
    const reopened = await host.request("PATCH", path, { body: { msg_conversation: { status: "active", metadata: { r: 1 } } } })
    assert.strictEqual(reopened.status, 200, reopened.text)
    assert.strictEqual(reopened.body.data.status, "active")
    assert.deepStrictEqual(reopened.body.data.metadata, { r: 1 })
    const reopenedRecord = await run(messaging.getConversation(host.projectA, kimConversation))
    assert.strictEqual(reopenedRecord.end_reason, null)
    assert.strictEqual(reopenedRecord.ended_at, null)
    assert.strictEqual(Date.parse(reopenedRecord.last_active_at) >= Date.parse(record.ended_at!), true)

    const active = await host.request("GET", `${CONVERSATIONS}?phone_number=${KIM}&status=active`)
    assert.deepStrictEqual(active.body.data.map((c: any) => c.id), [kimConversation])
  })
})

describe("GET /platform/v1/msg/messages", () => {
  it("lists newest first in the proxy's Message shape", async () => {
    const res = await host.request("GET", `${MESSAGES}?conversation_id=${linMessages[0]!.conversation_id}`)
    assert.strictEqual(res.status, 200, res.text)
    assert.deepStrictEqual(Object.keys(res.body), ["data", "paging"])
    assert.deepStrictEqual(res.body.data.map((m: any) => m.id), [outboundId, linMessages[1]!.network_id, linMessages[0]!.network_id])
    const last = res.body.data[2]
    assert.deepStrictEqual(Object.keys(last).slice(0, 3), ["id", "timestamp", "type"])
    assert.strictEqual(last.type, "text")
    assert.deepStrictEqual(last.text, { body: "one" })
    assert.strictEqual(last.from, LIN)
    assert.strictEqual(last.ext.direction, "inbound")
    assert.strictEqual(last.ext.msg_conversation_id, linMessages[0]!.conversation_id)
    assert.strictEqual(last.ext.phone_number_id, pnid)
    assert.strictEqual(last.ext.content, "one")
    const reply = res.body.data[0]
    assert.strictEqual(reply.ext.direction, "outbound")
    assert.strictEqual(reply.ext.origin, "api")
  })

  it("filters by direction, status, message_type, has_media, phone_number and phone_number_id", async () => {
    const outbound = await host.request("GET", `${MESSAGES}?direction=outbound`)
    assert.deepStrictEqual(outbound.body.data.map((m: any) => m.id), [outboundId])
    const lin = await host.request("GET", `${MESSAGES}?phone_number=${encodeURIComponent("+1 555 040 1001")}&direction=inbound`)
    assert.deepStrictEqual(lin.body.data.map((m: any) => m.id), [linMessages[1]!.network_id, linMessages[0]!.network_id])
    const delivered = await host.request("GET", `${MESSAGES}?status=delivered&phone_number=${LIN}`)
    assert.deepStrictEqual(delivered.body.data.map((m: any) => m.ext.status), ["delivered", "delivered"])
    const texts = await host.request("GET", `${MESSAGES}?message_type=text&has_media=false&phone_number_id=${pnid}`)
    // Lin's two, the reply, Kim's two.
    assert.strictEqual(texts.body.data.length, 5)
    const images = await host.request("GET", `${MESSAGES}?message_type=image`)
    assert.deepStrictEqual(images.body.data, [])
    const withMedia = await host.request("GET", `${MESSAGES}?has_media=true`)
    assert.deepStrictEqual(withMedia.body.data, [])
    const unknownNumber = await host.request("GET", `${MESSAGES}?phone_number_id=999000111`)
    assert.deepStrictEqual(unknownNumber.body.data, [])
    const badDirection = await host.request("GET", `${MESSAGES}?direction=sideways`)
    assert.strictEqual(badDirection.status, 422, badDirection.text)
    assert.strictEqual(badDirection.body.error, 'direction: Expected "inbound" | "outbound"')
    const badMedia = await host.request("GET", `${MESSAGES}?has_media=yes`)
    assert.strictEqual(badMedia.status, 422, badMedia.text)
    assert.strictEqual(badMedia.body.details[0].path, "has_media")
  })

  it("pages in both styles and shows another project nothing", async () => {
    const first = await host.request("GET", `${MESSAGES}?limit=2&direction=inbound`)
    assert.strictEqual(first.body.data.length, 2)
    const next = new URL(first.body.paging.next)
    assert.strictEqual(next.searchParams.get("direction"), "inbound")
    const second = await host.request("GET", `${next.pathname}${next.search}`)
    assert.strictEqual(second.status, 200, second.text)
    assert.strictEqual(second.body.data.length, 2)
    assert.notStrictEqual(second.body.data[0].id, first.body.data[1].id)

    const page = await host.request("GET", `${MESSAGES}?page=1&per_page=2&phone_number=${LIN}`)
    assert.deepStrictEqual(Object.keys(page.body), ["data", "meta"])
    assert.deepStrictEqual(page.body.meta, { page: 1, per_page: 2, total_pages: 2, total_count: 3 })
    assert.strictEqual(page.headers.get("x-total"), "3")

    const other = await host.request("GET", MESSAGES, { key: host.otherKey })
    assert.strictEqual(other.status, 200, other.text)
    assert.deepStrictEqual(other.body.data, [])
  })
})

describe("the contract", () => {
  it("documents the endpoints in /openapi.json", async () => {
    const res = await host.request("GET", "/openapi.json", { key: null })
    assert.strictEqual(res.status, 200)
    assert.deepStrictEqual(Object.keys(res.body.paths[CONVERSATIONS] ?? {}), ["get"])
    assert.deepStrictEqual(Object.keys(res.body.paths[`${CONVERSATIONS}/{id}`] ?? {}).sort(), ["get", "patch"])
    assert.deepStrictEqual(Object.keys(res.body.paths[MESSAGES] ?? {}), ["get"])
  })
})

describe("the typed client", () => {
  it("lists and reads conversations and messages, the network's own message fields included", async () => {
    const client = createParleyClient({ baseUrl: host.url, apiKey: host.key })
    const list = await client.msgConversations.list({ query: { phone_number: LIN } })
    assert.isTrue("paging" in list.body)
    assert.deepStrictEqual(list.body.data.map((c) => c.id), [linMessages[0]!.conversation_id])
    const one = await client.msgConversations.get({ params: { id: kimConversation } })
    assert.strictEqual(one.data.phone_number, KIM)
    const patched = await client.msgConversations.update({
      params: { id: kimConversation },
      payload: { msg_conversation: { metadata: { via: "client" } } }
    })
    assert.deepStrictEqual(patched.data.metadata, { via: "client" })
    const messages = await client.msgConversations.listMessages({ query: { phone_number: LIN, direction: "inbound", limit: "1" } })
    assert.strictEqual(messages.body.data.length, 1)
    assert.deepStrictEqual(messages.body.data[0]!["text"], { body: "two" })
    assert.strictEqual(messages.body.data[0]!.ext["direction"], "inbound")
  })
})
