/**
 * The proxy's service-only reads over real HTTP (decisions 4.10, 2.10, 1.3):
 * `GET /proxy[/vNN.N]/<phone_number_id>/messages[/<id>]` and
 * `.../conversations[/<id>]` with their filters, cursor paging and the
 * `fields` selector including `ext(...)`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Ids, type MessageRecord, Messaging } from "@parley/core"
import { layerMemoryJobQueue, layerMemoryStorage } from "@parley/core/testing"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import { afterAll, beforeAll } from "vitest"
import { connectSimulatedNumber, type MessagingHost, startMessagingHost, storedMessage as stored } from "./messaging.support.ts"

let host: MessagingHost
let messaging: Messaging["Service"]
let pnid: string
let close: () => Promise<void>
let inbound: Array<MessageRecord> = []
let outboundId: string
let conversationId: string

const run = <A, E>(effect: Effect.Effect<A, E>) => Effect.runPromise(effect)

const storedMessage = (id: string) => stored(host, pnid, id)

beforeAll(async () => {
  const scope = Effect.runSync(Scope.make())
  await Effect.runPromise(Effect.gen(function*() {
    const ports = Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layer)
    host = yield* startMessagingHost(ports, { PARLEY_UPSTREAM_VERIFY_TOKEN: "proxy-reads-verify-token-0123" })
    const number = yield* connectSimulatedNumber(host, { sink: true })
    pnid = number.phoneNumberId
    messaging = Context.get(host.context, Messaging)
  }).pipe(Effect.provideService(Scope.Scope, scope)))
  close = () => Effect.runPromise(Scope.close(scope, Exit.void))
  for (const body of ["one", "two", "three"]) {
    const sent = await run(host.simulator.inbound(pnid, { from: "15550301001", profile_name: "Lin", message: { type: "text", text: { body } } }))
    inbound.push(await storedMessage(sent.id))
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
  conversationId = inbound[0]!.conversation_id
  const res = await host.request("POST", `/proxy/${pnid}/messages`, {
    raw: `{"messaging_product":"whatsapp","to":"15550301001","type":"text","text":{"body":"reply"}}`
  })
  assert.strictEqual(res.status, 200, res.text)
  outboundId = res.body.messages[0].id
  await storedMessage(outboundId)
}, 60_000)
afterAll(() => close())

describe("GET /proxy/<phone_number_id>/messages", () => {
  it("lists newest first with every network field and ext key, and cursor paging", async () => {
    const res = await host.request("GET", `/proxy/${pnid}/messages?conversation_id=${conversationId}`)
    assert.strictEqual(res.status, 200, res.text)
    assert.deepStrictEqual(Object.keys(res.body), ["data", "paging"])
    assert.deepStrictEqual(res.body.data.map((m: any) => m.id), [outboundId, ...inbound.map((m) => m.network_id).reverse()])
    const first = res.body.data[0]
    assert.deepStrictEqual(Object.keys(first), ["id", "timestamp", "type", "to", "text", "ext"])
    assert.strictEqual(first.ext.direction, "outbound")
    assert.strictEqual(first.ext.msg_conversation_id, conversationId)
    assert.deepStrictEqual(Object.keys(res.body.paging), ["cursors", "next", "previous"])
    assert.isNull(res.body.paging.next)
    assert.isNull(res.body.paging.previous)

    const page1 = await host.request("GET", `/proxy/v24.0/${pnid}/messages?conversation_id=${conversationId}&limit=2`)
    assert.strictEqual(page1.body.data.length, 2)
    const next: string = page1.body.paging.next
    assert.isTrue(next.startsWith(`${host.url}/proxy/v24.0/${pnid}/messages?`), next)
    const page2 = await host.request("GET", next.slice(host.url.length))
    assert.deepStrictEqual(page2.body.data.map((m: any) => m.id), inbound.slice(0, 2).map((m) => m.network_id).reverse())
    assert.isNull(page2.body.paging.next)
    assert.isString(page2.body.paging.previous)
  })

  it("filters by direction, status and inclusive since/until", async () => {
    const out = await host.request("GET", `/proxy/${pnid}/messages?conversation_id=${conversationId}&direction=outbound`)
    assert.deepStrictEqual(out.body.data.map((m: any) => m.id), [outboundId])
    const delivered = await host.request("GET", `/proxy/${pnid}/messages?conversation_id=${conversationId}&direction=inbound&status=delivered`)
    assert.strictEqual(delivered.body.data.length, 3)
    const at = inbound[1]!.created_at
    const window = await host.request("GET", `/proxy/${pnid}/messages?conversation_id=${conversationId}&since=${at}&until=${at}`)
    assert.deepStrictEqual(window.body.data.map((m: any) => m.id), [inbound[1]!.network_id])
  })

  it("selects fields, including ext(...), ext(*) and ext()", async () => {
    const base = `/proxy/${pnid}/messages?conversation_id=${conversationId}&direction=outbound`
    const some = await host.request("GET", `${base}&fields=${encodeURIComponent("type,text,ext(direction,status),bogus")}`)
    assert.strictEqual(some.status, 200, some.text)
    assert.deepStrictEqual(Object.keys(some.body.data[0]), ["id", "type", "text", "ext"])
    assert.deepStrictEqual(Object.keys(some.body.data[0].ext), ["direction", "status"])
    const all = await host.request("GET", `${base}&fields=${encodeURIComponent("type,ext(*)")}`)
    assert.isAbove(Object.keys(all.body.data[0].ext).length, 10)
    const none = await host.request("GET", `${base}&fields=${encodeURIComponent("type,ext()")}`)
    assert.deepStrictEqual(Object.keys(none.body.data[0]), ["id", "type"])
  })

  it("answers 400 naming unknown ext names, 400 code 100 for a limit out of range, 400 for bad filters and cursors", async () => {
    const bad = await host.request("GET", `/proxy/${pnid}/messages?fields=${encodeURIComponent("ext(status,nope,zap)")}`)
    assert.strictEqual(bad.status, 400)
    assert.strictEqual(bad.body.error.code, 100)
    assert.strictEqual(bad.body.error.type, "MessageError")
    assert.include(bad.body.error.message, "nope, zap")
    for (const limit of ["0", "101"]) {
      const refused = await host.request("GET", `/proxy/${pnid}/messages?limit=${limit}`)
      assert.strictEqual(refused.status, 400, refused.text)
      assert.strictEqual(refused.body.error.code, 100)
    }
    assert.strictEqual((await host.request("GET", `/proxy/${pnid}/messages?direction=sideways`)).status, 400)
    assert.strictEqual((await host.request("GET", `/proxy/${pnid}/messages?since=yesterday`)).status, 400)
    assert.strictEqual((await host.request("GET", `/proxy/${pnid}/messages?after=%25%25`)).status, 400)
  })

  it("reads one message by network or Parley id with fields; 404 for unknown ids and other projects", async () => {
    const one = await host.request("GET", `/proxy/${pnid}/messages/${outboundId}?fields=${encodeURIComponent("text,ext(status)")}`)
    assert.strictEqual(one.status, 200, one.text)
    assert.deepStrictEqual(Object.keys(one.body), ["id", "text", "ext"])
    assert.deepStrictEqual(Object.keys(one.body.ext), ["status"])
    const byOwnId = await host.request("GET", `/proxy/${pnid}/messages/${inbound[0]!.id}`)
    assert.strictEqual(byOwnId.body.id, inbound[0]!.network_id)
    const missing = await host.request("GET", `/proxy/${pnid}/messages/wamid.nope`)
    assert.strictEqual(missing.status, 404)
    assert.strictEqual(missing.body.error.code, 100)
    const other = await host.request("GET", `/proxy/${pnid}/messages`, { key: host.otherKey })
    assert.strictEqual(other.status, 404)
    assert.strictEqual(other.body.error.code, 100)
  })
})

describe("GET /proxy/<phone_number_id>/conversations", () => {
  it("lists conversations with filters and fields; reads one", async () => {
    const list = await host.request("GET", `/proxy/${pnid}/conversations?phone_number=${encodeURIComponent("+1 555 030 1001")}`)
    assert.strictEqual(list.status, 200, list.text)
    assert.deepStrictEqual(list.body.data.map((c: any) => c.id), [conversationId])
    assert.strictEqual(list.body.data[0].ext.messages_count, 4)
    assert.strictEqual(list.body.data[0].ext.contact_name, "Lin")
    const active = await host.request("GET", `/proxy/${pnid}/conversations?status=ended`)
    assert.isFalse(active.body.data.some((c: any) => c.id === conversationId))
    const unassigned = await host.request("GET", `/proxy/${pnid}/conversations?unassigned=true`)
    assert.isTrue(unassigned.body.data.some((c: any) => c.id === conversationId))

    const one = await host.request("GET", `/proxy/${pnid}/conversations/${conversationId}?fields=${encodeURIComponent("status,ext(messages_count)")}`)
    assert.strictEqual(one.status, 200, one.text)
    assert.deepStrictEqual(one.body, { id: conversationId, status: "active", ext: { messages_count: 4 } })
    const full = await host.request("GET", `/proxy/${pnid}/conversations/${conversationId}`)
    assert.deepStrictEqual(Object.keys(full.body.ext).length, 8)
    const bad = await host.request("GET", `/proxy/${pnid}/conversations/${conversationId}?fields=ext(direction)`)
    assert.strictEqual(bad.status, 400)
    const missing = await host.request("GET", `/proxy/${pnid}/conversations/00000000-0000-0000-0000-000000000000`)
    assert.strictEqual(missing.status, 404)
    assert.strictEqual(missing.body.error.code, 100)
  })
})

describe("GET /platform/v1/msg/media/<id>/content (ext.media_url)", () => {
  it("serves the kept copy byte for byte with its type, only with the project's key", async () => {
    const bytes = crypto.getRandomValues(new Uint8Array(40_000))
    const sent = await run(host.simulator.inbound(pnid, {
      from: "15550301002",
      message: { type: "document", document: { caption: "invoice" } },
      media: { bytes, mimeType: "application/pdf", filename: "invoice ☕.pdf" }
    }))
    const message = await storedMessage(sent.id)
    const listed = await host.request("GET", `/proxy/${pnid}/messages/${sent.id}?fields=ext(media_url)`)
    const url: string = listed.body.ext.media_url
    assert.strictEqual(url, `${host.url}/platform/v1/msg/media/${message.media!.id}/content`)
    const res = await fetch(url, { headers: { "x-api-key": host.key } })
    assert.strictEqual(res.status, 200)
    assert.strictEqual(res.headers.get("content-type"), "application/pdf")
    assert.include(res.headers.get("content-disposition") ?? "", "filename*=UTF-8''invoice%20%E2%98%95.pdf")
    assert.isTrue(Buffer.from(await res.arrayBuffer()).equals(Buffer.from(bytes)), "byte-identical")
    assert.strictEqual((await fetch(url)).status, 401)
    assert.strictEqual((await fetch(url, { headers: { "x-api-key": host.otherKey } })).status, 404)
  })
})

describe("GET /proxy/<phone_number_id>/contacts", () => {
  it("lists the number's contacts (wa_id, customer filters, paging) and reads one", async () => {
    const list = await host.request("GET", `/proxy/${pnid}/contacts?wa_id=${encodeURIComponent("+1 555 030 1001")}`)
    assert.strictEqual(list.status, 200, list.text)
    assert.strictEqual(list.body.data.length, 1)
    assert.deepStrictEqual(Object.keys(list.body.data[0]), [
      "id",
      "wa_id",
      "business_scoped_user_id",
      "parent_business_scoped_user_id",
      "username",
      "profile_name",
      "created_at",
      "updated_at"
    ])
    assert.strictEqual(list.body.data[0].wa_id, "15550301001")
    assert.strictEqual(list.body.data[0].profile_name, "Lin")
    assert.deepStrictEqual(Object.keys(list.body.paging), ["cursors", "next", "previous"])
    const all = await host.request("GET", `/proxy/${pnid}/contacts?limit=1`)
    assert.strictEqual(all.body.data.length, 1)
    assert.isString(all.body.paging.next)
    // The simulated number belongs to no customer.
    assert.strictEqual((await host.request("GET", `/proxy/${pnid}/contacts?has_customer=true`)).body.data.length, 0)
    assert.isAbove((await host.request("GET", `/proxy/${pnid}/contacts?has_customer=false`)).body.data.length, 0)
    assert.strictEqual((await host.request("GET", `/proxy/${pnid}/contacts?customer_id=c-1`)).body.data.length, 0)

    const one = await host.request("GET", `/proxy/${pnid}/contacts/15550301001`)
    assert.strictEqual(one.status, 200, one.text)
    assert.strictEqual(one.body.id, list.body.data[0].id)
    const missing = await host.request("GET", `/proxy/${pnid}/contacts/15559999999`)
    assert.strictEqual(missing.status, 404)
    assert.strictEqual(missing.body.error.code, 100)
    const other = await host.request("GET", `/proxy/${pnid}/contacts`, { key: host.otherKey })
    assert.strictEqual(other.status, 404)
  })
})
