/**
 * Bounded, total input over real HTTP: body limits answered before reading,
 * text PostgreSQL cannot store refused with 422 naming the field (400 in the
 * network's shape on the proxy), deep nesting refused without recursion,
 * every error answer in the `{ "error" }` shape (the HTTP layer's 415, Node's
 * own 400), and 405 with `Allow` on a served path.
 */
import { Ids } from "@parley/core"
import { layerMemoryJobQueue, layerMemoryStorage } from "@parley/core/testing"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Layer, Scope } from "effect"
import { connect } from "node:net"
import { afterAll, beforeAll } from "vitest"
import { MAX_PLATFORM_BODY_BYTES } from "../src/InputLimits.ts"
import { connectSimulatedNumber, type MessagingHost, startMessagingHost } from "./messaging.support.ts"

let host: MessagingHost
let pnid: string
let close: () => Promise<void>

beforeAll(async () => {
  const scope = Effect.runSync(Scope.make())
  await Effect.runPromise(Effect.gen(function*() {
    host = yield* startMessagingHost(Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layer))
    pnid = (yield* connectSimulatedNumber(host)).phoneNumberId
  }).pipe(Effect.provideService(Scope.Scope, scope)))
  close = () => Effect.runPromise(Scope.close(scope, Exit.void))
}, 60_000)
afterAll(() => close())

/** Raw bytes over a socket, for what `fetch` will not send. */
const rawRequest = (text: string) =>
  new Promise<string>((resolve, reject) => {
    const url = new URL(host.url)
    const socket = connect(Number(url.port), url.hostname, () => socket.end(text))
    let answer = ""
    socket.on("data", (d) => (answer += d.toString()))
    socket.on("end", () => resolve(answer))
    socket.on("error", reject)
  })

describe("body limits", () => {
  it("answers 413 to a Platform body over 10 MB, by its Content-Length and when it streams without one", async () => {
    const big = JSON.stringify({ name: "a.b", properties: { x: "a".repeat(MAX_PLATFORM_BODY_BYTES) } })
    const declared = await host.request("POST", "/platform/v1/events", { raw: big })
    assert.deepStrictEqual([declared.status, declared.body], [413, { error: "Request body too large" }])
    const chunks = new ReadableStream({
      start(controller) {
        for (let i = 0; i < 11; i++) controller.enqueue(new TextEncoder().encode(i === 0 ? "{\"name\":\"" : "a".repeat(1024 * 1024)))
        controller.close()
      }
    })
    const streamed = await fetch(`${host.url}/platform/v1/events`, {
      method: "POST",
      headers: { "x-api-key": host.key, "content-type": "application/json" },
      body: chunks,
      duplex: "half"
    } as RequestInit)
    assert.strictEqual(streamed.status, 413)
    assert.deepStrictEqual(await streamed.json(), { error: "Request body too large" })
  })
})

describe("text PostgreSQL cannot store", () => {
  it("refuses NUL characters and unpaired surrogates in bodies, queries and paths with 422 naming the field", async () => {
    const nul = await host.request("POST", "/platform/v1/workflows", { body: { workflow: { name: "a\u0000b" } } })
    assert.deepStrictEqual([nul.status, nul.body], [422, {
      error: "workflow.name contains a NUL character",
      details: [{ path: "workflow.name", message: "workflow.name contains a NUL character" }]
    }])
    const surrogate = await host.request("POST", "/platform/v1/events", { raw: `{"name":"a.b","properties":{"x":"\\ud800"}}` })
    assert.strictEqual(surrogate.status, 422)
    assert.strictEqual(surrogate.body.error, "properties.x contains an unpaired surrogate")
    const query = await host.request("GET", "/platform/v1/workflows?name_contains=a%00b")
    assert.deepStrictEqual([query.status, query.body.error], [422, "name_contains contains a NUL character"])
    const path = await host.request("GET", "/platform/v1/workflows/a%00b")
    assert.deepStrictEqual([path.status, path.body.error], [422, "path contains a NUL character"])
    const list = await host.request("GET", "/platform/v1/workflows")
    assert.strictEqual(list.status, 200, "nothing was stored")
    assert.isFalse(list.text.includes("\\u0000"))
  })

  it("answers the proxy's refusals in the network's error shape", async () => {
    const send = await host.request("POST", `/proxy/v24.0/${pnid}/messages`, {
      body: { messaging_product: "whatsapp", to: "15551234567", type: "text", text: { body: "a\u0000" } }
    })
    assert.strictEqual(send.status, 400)
    assert.strictEqual(send.body.error.code, 100)
    assert.include(send.body.error.message, "text.body contains a NUL character")
    const read = await host.request("GET", `/proxy/${pnid}/messages?phone_number=1%00`)
    assert.strictEqual(read.status, 400)
    assert.include(read.body.error.message, "phone_number contains a NUL character")
  })

  it("refuses JSON nested 100,000 levels deep without overflowing the stack", async () => {
    const deep = "{\"a\":".repeat(100_000) + "1" + "}".repeat(100_000)
    const proxy = await host.request("POST", `/proxy/v24.0/${pnid}/messages`, { raw: deep })
    assert.strictEqual(proxy.status, 400)
    assert.include(proxy.body.error.message, "JSON nests deeper than 64 levels")
    const platform = await host.request("POST", "/platform/v1/events", { raw: `{"name":"a.b","properties":${deep}}` })
    assert.deepStrictEqual([platform.status, platform.body.error], [422, "JSON nests deeper than 64 levels"])
  })
})

describe("error answers", () => {
  it("gives the HTTP layer's 415 the error body", async () => {
    const res = await host.request("POST", "/platform/v1/workflows", { raw: "name=x", headers: { "content-type": "application/x-www-form-urlencoded" } })
    assert.strictEqual(res.status, 415)
    assert.strictEqual(res.headers.get("content-type"), "application/json")
    assert.deepStrictEqual(res.body, { error: "Unsupported content-type: application/x-www-form-urlencoded" })
  })

  it("answers 405 with Allow on a served path, 404 elsewhere", async () => {
    const put = await host.request("PUT", "/platform/v1/workflows")
    assert.deepStrictEqual([put.status, put.body, put.headers.get("allow")], [405, { error: "Method not allowed" }, "GET, POST"])
    const remove = await host.request("DELETE", "/platform/v1/workflow_executions/abc")
    assert.deepStrictEqual([remove.status, remove.headers.get("allow")], [405, "GET, PATCH"])
    const unknown = await host.request("GET", "/platform/v1/nothing-here")
    assert.deepStrictEqual([unknown.status, unknown.body], [404, { error: "Not found" }])
  })

  it("gives the requests Node itself refuses the error body", async () => {
    const malformed = await rawRequest("GET / HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n")
    assert.match(malformed, /^HTTP\/1\.1 400 /)
    assert.isTrue(malformed.endsWith("{\"error\":\"Bad request\"}"))
    const huge = await rawRequest(`GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`)
    assert.match(huge, /^HTTP\/1\.1 431 /)
    assert.isTrue(huge.endsWith("{\"error\":\"Request headers too large\"}"))
  })
})
