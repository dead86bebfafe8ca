/**
 * The proxy's pass-through routes over real HTTP with the network simulator
 * behind them (decisions 4.10): templates, block users, usernames, and any
 * other edge of a number of the project's (business profile, settings, ...),
 * forwarded as is. Bodies go out byte for byte; answers and error objects come
 * back unchanged; ids that are not the project's answer 404 (code 100).
 */
import { assert, describe, it } from "@effect/vitest"
import { Ids, MessagingNetwork } from "@parley/core"
import { layerMemoryJobQueue, layerMemoryStorage } from "@parley/core/testing"
import { Context, Effect, Exit, Layer, Redacted, Scope } from "effect"
import { request as httpRequest } from "node:http"
import { afterAll, beforeAll } from "vitest"
import { connectSimulatedNumber, type MessagingHost, startMessagingHost } from "./messaging.support.ts"

let host: MessagingHost
let pnid: string
let waba: string
let token: string
let close: () => Promise<void>

const run = <A, E>(effect: Effect.Effect<A, E>) => Effect.runPromise(effect)

beforeAll(async () => {
  const scope = Effect.runSync(Scope.make())
  await Effect.runPromise(Effect.gen(function*() {
    const ports = Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layer)
    host = yield* startMessagingHost(ports, { PARLEY_UPSTREAM_VERIFY_TOKEN: "proxy-network-verify-token-01" })
    const number = yield* connectSimulatedNumber(host)
    pnid = number.phoneNumberId
    waba = number.businessAccountId
    token = Redacted.value(number.accessToken)
  }).pipe(Effect.provideService(Scope.Scope, scope)))
  close = () => Effect.runPromise(Scope.close(scope, Exit.void))
}, 60_000)
afterAll(() => close())

const network = () => Context.get(host.context, MessagingNetwork)
const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes)

describe("proxy templates", () => {
  it("creates, lists, reads, edits and deletes through the network, answers unchanged", async () => {
    const definition = {
      name: `order_update_${Date.now()}`,
      category: "UTILITY",
      language: "en_US",
      components: [{ type: "BODY", text: "Your order {{1}} shipped.", example: { body_text: [["A-1"]] } }]
    }
    const created = await host.request("POST", `/proxy/v24.0/${waba}/message_templates`, { raw: JSON.stringify(definition) })
    assert.strictEqual(created.status, 200, created.text)
    assert.deepStrictEqual(Object.keys(created.body).sort(), ["category", "id", "status"])
    assert.strictEqual(created.body.status, "PENDING")
    const id: string = created.body.id

    const list = await host.request("GET", `/proxy/${waba}/message_templates?name=${definition.name}&limit=5`)
    assert.strictEqual(list.status, 200, list.text)
    const direct = await run(network().listTemplates({ accessToken: Redacted.make(token) }, waba, { name: definition.name, limit: "5" }))
    assert.strictEqual(list.text, text(direct.body))

    const one = await host.request("GET", `/proxy/${waba}/message_templates/${id}`)
    assert.strictEqual(one.status, 200, one.text)
    assert.strictEqual(one.body.id, id)
    assert.strictEqual(one.body.name, definition.name)

    await run(host.simulator.setTemplateStatus(id, "APPROVED"))
    const edited = await host.request("POST", `/proxy/${waba}/message_templates?hsm_id=${id}`, {
      raw: JSON.stringify({ components: [{ type: "BODY", text: "Order {{1}} is on its way.", example: { body_text: [["A-1"]] } }] })
    })
    assert.strictEqual(edited.status, 200, edited.text)
    assert.deepStrictEqual(edited.body, { success: true })

    const none = await host.request("DELETE", `/proxy/${waba}/message_templates`)
    assert.strictEqual(none.status, 400)
    assert.strictEqual(none.body.error.code, 100)
    const deleted = await host.request("DELETE", `/proxy/${waba}/message_templates?name=${definition.name}&hsm_id=${id}`)
    assert.strictEqual(deleted.status, 200, deleted.text)
    assert.deepStrictEqual(deleted.body, { success: true })
  })

  it("links a list's pages at the proxy, never at the network with its stored token", async () => {
    const names = [0, 1, 2].map((i) => `paged_${Date.now()}_${i}`)
    for (const name of names) {
      const created = await host.request("POST", `/proxy/${waba}/message_templates`, {
        raw: JSON.stringify({ name, category: "UTILITY", language: "en_US", components: [{ type: "BODY", text: "Hi" }] })
      })
      assert.strictEqual(created.status, 200, created.text)
    }
    // The network links its pages at its own address with the caller's token in the query, as the Graph API does.
    const direct = await run(network().listTemplates({ accessToken: Redacted.make(token) }, waba, { name: "paged_", limit: "1" }))
    assert.include(text(direct.body), `access_token=${token}`)

    const first = await host.request("GET", `/proxy/v24.0/${waba}/message_templates?name=paged_&limit=1`)
    assert.strictEqual(first.status, 200, first.text)
    assert.notInclude(first.text, token)
    const next = new URL(first.body.paging.next)
    assert.strictEqual(`${next.origin}/`, new URL("/", host.url).toString())
    assert.strictEqual(next.pathname, `/proxy/v24.0/${waba}/message_templates`)
    assert.strictEqual(next.searchParams.get("name"), "paged_")
    assert.isNull(next.searchParams.get("access_token"))
    assert.deepStrictEqual(first.body.paging.cursors, JSON.parse(text(direct.body)).paging.cursors)

    const second = await host.request("GET", next.pathname + next.search)
    assert.strictEqual(second.status, 200, second.text)
    assert.strictEqual(second.body.data.length, 1)
    assert.notStrictEqual(second.body.data[0].id, first.body.data[0].id)
    const previous = new URL(second.body.paging.previous)
    assert.strictEqual(previous.pathname, `/proxy/v24.0/${waba}/message_templates`)
    assert.notInclude(second.text, token)
  })

  it("forwards the network's refusal unchanged and answers 404 for another project's account", async () => {
    const bad = await host.request("POST", `/proxy/${waba}/message_templates`, { raw: `{"name":"x"}` })
    assert.strictEqual(bad.status >= 400, true, bad.text)
    assert.property(bad.body.error, "fbtrace_id")
    const other = await host.request("GET", `/proxy/${waba}/message_templates`, { key: host.otherKey })
    assert.strictEqual(other.status, 404)
    assert.strictEqual(other.body.error.code, 100)
  })
})

describe("proxy block users", () => {
  it("blocks a contact who wrote in, lists and unblocks, with the network's shapes", async () => {
    await run(host.simulator.inbound(pnid, { from: "15550401001", message: { type: "text", text: { body: "spam" } } }))
    const body = JSON.stringify({ messaging_product: "whatsapp", block_users: [{ user: "15550401001" }] })
    const blocked = await host.request("POST", `/proxy/${pnid}/block_users`, { raw: body })
    assert.strictEqual(blocked.status, 200, blocked.text)
    assert.deepStrictEqual(blocked.body.block_users.added_users, [{ input: "15550401001", wa_id: "15550401001" }])
    const list = await host.request("GET", `/proxy/${pnid}/block_users?limit=10`)
    assert.strictEqual(list.status, 200, list.text)
    assert.isTrue(list.body.data.some((u: any) => u.wa_id === "15550401001"))
    assert.property(list.body, "paging")
    const unblocked = await host.request("DELETE", `/proxy/${pnid}/block_users`, { raw: body })
    assert.strictEqual(unblocked.status, 200, unblocked.text)
    assert.deepStrictEqual(unblocked.body.block_users.removed_users, [{ input: "15550401001", wa_id: "15550401001" }])
    const other = await host.request("GET", `/proxy/${pnid}/block_users`, { key: host.otherKey })
    assert.strictEqual(other.status, 404)
  })
})

describe("proxy usernames", () => {
  it("sets, reads, suggests and deletes the number's username", async () => {
    const set = await host.request("POST", `/proxy/${pnid}/username`, { raw: JSON.stringify({ username: "acme.support" }) })
    assert.strictEqual(set.status, 200, set.text)
    assert.include(["approved", "reserved"], set.body.status)
    const got = await host.request("GET", `/proxy/${pnid}/username`)
    assert.strictEqual(got.status, 200, got.text)
    assert.strictEqual(got.body.username, "acme.support")
    const suggestions = await host.request("GET", `/proxy/${pnid}/username_suggestions`)
    assert.strictEqual(suggestions.status, 200, suggestions.text)
    assert.isArray(suggestions.body.data[0].username_suggestions)
    const invalid = await host.request("POST", `/proxy/${pnid}/username`, { raw: JSON.stringify({ username: "x" }) })
    assert.strictEqual(invalid.status, 400, invalid.text)
    assert.strictEqual(invalid.body.error.code, 131009)
    const deleted = await host.request("DELETE", `/proxy/${pnid}/username`)
    assert.deepStrictEqual(deleted.body, { success: true })
    const gone = await host.request("GET", `/proxy/${pnid}/username`)
    assert.strictEqual(gone.status, 404, gone.text)
  })
})

describe("proxy interactive form metadata", () => {
  it("updates a flow of the project's business account; unknown flows answer 404", async () => {
    const flowId = await run(host.simulator.createFlow(waba, { name: "Booking" }))
    const res = await host.request("POST", `/proxy/v24.0/${flowId}`, {
      raw: JSON.stringify({ name: "Booking v2", categories: ["APPOINTMENT_BOOKING"], endpoint_uri: "https://example.com/flow" })
    })
    assert.strictEqual(res.status, 200, res.text)
    assert.deepStrictEqual(res.body, { success: true })
    const flow = await run(host.simulator.flow(flowId))
    assert.strictEqual(flow!.name, "Booking v2")
    assert.deepStrictEqual(flow!.categories, ["APPOINTMENT_BOOKING"])
    const invalid = await host.request("POST", `/proxy/${flowId}`, { raw: JSON.stringify({ categories: [] }) })
    assert.strictEqual(invalid.status, 400, invalid.text)
    assert.strictEqual(invalid.body.error.code, 100)
    const unknown = await host.request("POST", `/proxy/987654321012345`, { raw: JSON.stringify({ name: "x" }) })
    assert.strictEqual(unknown.status, 404, unknown.text)
    assert.strictEqual(unknown.body.error.code, 100)
    const other = await host.request("POST", `/proxy/${flowId}`, { raw: JSON.stringify({ name: "x" }), key: host.otherKey })
    assert.strictEqual(other.status, 404, other.text)
  })
})

/** The number's business profile as the network holds it, asked directly with the stored token. */
const profileAtNetwork = async () => {
  const answer = await run(
    network().forward({ accessToken: Redacted.make(token) }, { method: "GET", path: `${pnid}/whatsapp_business_profile` })
  )
  return text(answer.body)
}

describe("proxy pass-through of other edges", () => {
  it("reads and updates the business profile; the answers are the network's bytes", async () => {
    const first = await host.request("GET", `/proxy/v24.0/${pnid}/whatsapp_business_profile`)
    assert.strictEqual(first.status, 200, first.text)
    assert.strictEqual(first.text, await profileAtNetwork())

    const update = { messaging_product: "whatsapp", about: "Open daily", websites: ["https://acme.test"], vertical: "RETAIL" }
    const updated = await host.request("POST", `/proxy/${pnid}/whatsapp_business_profile`, { body: update })
    assert.strictEqual(updated.status, 200, updated.text)
    assert.deepStrictEqual(updated.body, { success: true })
    const read = await host.request("GET", `/proxy/${pnid}/whatsapp_business_profile?fields=about,websites,vertical`)
    assert.deepStrictEqual(read.body, {
      data: [{ about: "Open daily", websites: ["https://acme.test"], vertical: "RETAIL", messaging_product: "whatsapp" }]
    })

    // The network's validation, its error object forwarded as is.
    const tooLong = await host.request("POST", `/proxy/${pnid}/whatsapp_business_profile`, {
      body: { messaging_product: "whatsapp", about: "x".repeat(140) }
    })
    assert.strictEqual(tooLong.status, 400, tooLong.text)
    assert.strictEqual(tooLong.body.error.code, 100)
    assert.property(tooLong.body.error, "fbtrace_id")
  })

  it("reads and updates the number's settings", async () => {
    const before = await host.request("GET", `/proxy/${pnid}/settings`)
    assert.strictEqual(before.status, 200, before.text)
    assert.strictEqual(before.body.calling.status, "DISABLED")
    const updated = await host.request("POST", `/proxy/${pnid}/settings`, { body: { calling: { status: "ENABLED" } } })
    assert.deepStrictEqual(updated.body, { success: true })
    assert.strictEqual((await host.request("GET", `/proxy/${pnid}/settings`)).body.calling.status, "ENABLED")
  })

  it("answers an edge the network does not have with the network's own error, unchanged", async () => {
    const unknown = await host.request("GET", `/proxy/${pnid}/no_such_edge`)
    assert.strictEqual(unknown.status, 400, unknown.text)
    assert.strictEqual(unknown.body.error.code, 100)
    assert.strictEqual(unknown.body.error.error_subcode, 33)
    assert.strictEqual(unknown.body.error.type, "GraphMethodException")
    assert.isString(unknown.body.error.fbtrace_id, "made by the network, not the proxy")
    // A method the network does not take answers its shape too, made by the proxy, at 405 (issue 29 §4).
    const put = await host.request("PUT", `/proxy/${pnid}/settings`, { body: {} })
    assert.strictEqual(put.status, 405, put.text)
    assert.strictEqual(put.body.error.code, 100)
    assert.strictEqual(put.body.error.error_subcode, 33)
    assert.match(put.body.error.message, /^\(#100\) Unsupported put request/)
  })

  it("never climbs out of the number's edges with dot segments, on any route", async () => {
    // fetch normalises `..` before sending; a raw request does not.
    const rawGet = (path: string) =>
      new Promise<{ readonly status: number; readonly body: any }>((resolve, reject) => {
        const url = new URL(host.url)
        const req = httpRequest({ host: url.hostname, port: url.port, method: "GET", path, headers: { "x-api-key": host.key } }, (res) => {
          const chunks: Array<Buffer> = []
          res.on("data", (c: Buffer) => chunks.push(c))
          res.on("end", () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString()) }))
        })
        req.on("error", reject)
        req.end()
      })
    for (const path of [`/proxy/${pnid}/%2e%2e/${pnid}`, `/proxy/%2e%2e?phone_number_id=${pnid}`, `/proxy/v24.0/%2e`]) {
      const answer = await rawGet(path)
      assert.strictEqual(answer.status, 400, path)
      assert.strictEqual(answer.body.error.code, 100, path)
    }
  })

  it("answers 404 (code 100) for another project's number and 401 without a key, before the network", async () => {
    const before = await profileAtNetwork()
    const other = await host.request("POST", `/proxy/${pnid}/whatsapp_business_profile`, {
      body: { messaging_product: "whatsapp", about: "hijacked" },
      key: host.otherKey
    })
    assert.strictEqual(other.status, 404, other.text)
    assert.strictEqual(other.body.error.code, 100)
    assert.strictEqual((await host.request("GET", `/proxy/${pnid}/settings`, { key: host.otherKey })).status, 404)
    const anonymous = await host.request("GET", `/proxy/${pnid}/settings`, { key: null })
    assert.strictEqual(anonymous.status, 401)
    assert.deepStrictEqual(anonymous.body, { error: "Invalid API key" })
    assert.strictEqual(await profileAtNetwork(), before, "nothing changed at the network")
  })
})

describe("proxy methods", () => {
  it("answers 405 with Allow to a method the network does not serve, in its error shape, before the network", async () => {
    const before = await profileAtNetwork()
    for (const method of ["PUT", "PATCH"]) {
      for (const path of [`/proxy/${pnid}/messages`, `/proxy/v21.0/${pnid}/whatsapp_business_profile`, `/proxy/${waba}/message_templates`]) {
        const res = await host.request(method, path, { body: { messaging_product: "whatsapp", about: "changed" } })
        assert.strictEqual(res.status, 405, `${method} ${path}: ${res.text}`)
        assert.strictEqual(res.headers.get("allow"), "GET, POST, DELETE")
        assert.strictEqual(res.body.error.code, 100)
        assert.include(res.body.error.message, `Unsupported ${method.toLowerCase()} request`)
      }
    }
    assert.strictEqual(await profileAtNetwork(), before, "nothing changed at the network")
    assert.strictEqual((await host.request("PUT", `/proxy/${pnid}/messages`, { key: null })).status, 401, "the key is judged first")
  })
})
