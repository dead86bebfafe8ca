/**
 * The Node `WebhookHttp` against a real loopback receiver: exact bytes and
 * headers, no redirect followed, the first 1 KB of an answer, its own
 * timeout, connection failures, the private-address rule for literals and
 * names, and interruption.
 */
import { assert, describe, it } from "@effect/vitest"
import { WebhookHttp } from "@parley/core"
import { Effect, Exit, Fiber, Scope } from "effect"
import { createServer } from "node:net"
import { afterAll, beforeAll } from "vitest"
import { layerNodeWebhookHttp } from "../src/adapters/NodeWebhookHttp.ts"
import { type Receiver, startReceiver } from "./receiver.ts"

let receiver: Receiver
let close: () => Promise<void>
beforeAll(async () => {
  const scope = Effect.runSync(Scope.make())
  receiver = await Effect.runPromise(Scope.provide(startReceiver, scope))
  close = () => Effect.runPromise(Scope.close(scope, Exit.void))
})
afterAll(() => close())

const post = (path: string, options: { body?: Uint8Array; timeoutMs?: number; allowPrivate?: boolean; url?: string } = {}) =>
  WebhookHttp.use((http) =>
    http.post({
      url: options.url ?? `${receiver.url}${path}`,
      headers: { "Content-Type": "application/json", "X-Webhook-Signature": "abc", "X-Custom": "yes" },
      body: options.body ?? Buffer.from("{}"),
      timeoutMs: options.timeoutMs ?? 10_000,
      allowPrivate: options.allowPrivate ?? true
    })).pipe(Effect.provide(layerNodeWebhookHttp))

const failure = <A, E>(effect: Effect.Effect<A, E>) => Effect.map(Effect.flip(effect), (e) => e as any)

describe("Node webhook transport", () => {
  it.live("posts the exact bytes with the given headers and a Content-Length", () =>
    Effect.gen(function*() {
      receiver.answer(() => ({ status: 202, body: "accepted" }))
      const body = Buffer.from(`{"a": "café ☕",  "b":[1,2]}`)
      const answer = yield* post("/exact", { body })
      assert.deepStrictEqual(answer, { status: 202, body: "accepted" })
      const request = receiver.requests.find((r) => r.path === "/exact")!
      assert.isTrue(request.raw.equals(body))
      assert.deepStrictEqual(
        [request.method, request.headers["content-type"], request.headers["x-custom"], request.headers["content-length"]],
        ["POST", "application/json", "yes", String(body.length)]
      )
    }))

  it.live("answers a redirect as it is, without following it", () =>
    Effect.gen(function*() {
      receiver.answer((r) => r.path === "/redirect" ? { status: 302, headers: { location: "/target" } } : { status: 200 })
      const answer = yield* post("/redirect")
      assert.strictEqual(answer.status, 302)
      assert.isFalse(receiver.requests.some((r) => r.path === "/target"))
    }))

  it.live("reads at most the first 1 KB of an answer", () =>
    Effect.gen(function*() {
      receiver.answer(() => ({ status: 500, body: "é".repeat(100_000) }))
      const answer = yield* post("/big")
      assert.strictEqual(answer.status, 500)
      assert.isAtMost(Buffer.byteLength(answer.body), 1024 + 3)
      assert.isTrue(answer.body.startsWith("é".repeat(500)))
    }))

  it.live("gives up after its timeout", () =>
    Effect.gen(function*() {
      receiver.answer(() => ({ status: 200, delayMs: 2_000 }))
      const started = Date.now()
      const error = yield* failure(post("/slow", { timeoutMs: 200 }))
      assert.deepStrictEqual([error._tag, error.reason, error.message], ["WebhookHttpError", "timeout", "Timed out after 0.2 s"])
      assert.isBelow(Date.now() - started, 1_500)
      receiver.answer(() => ({ status: 200 }))
    }))

  it.live("reports connection failures and DNS failures", () =>
    Effect.gen(function*() {
      // A port nothing listens on: take one, then free it.
      const port = yield* Effect.promise(() =>
        new Promise<number>((resolve) => {
          const server = createServer().listen(0, "127.0.0.1", () => {
            const { port } = server.address() as { port: number }
            server.close(() => resolve(port))
          })
        })
      )
      const refused = yield* failure(post("", { url: `http://127.0.0.1:${port}/` }))
      assert.deepStrictEqual([refused.reason, refused.message], ["connection", `connect ECONNREFUSED 127.0.0.1:${port}`])
      const unknown = yield* failure(post("", { url: "https://no-such-host.invalid/", allowPrivate: false }))
      assert.strictEqual(unknown.reason, "dns")
    }))

  it.live("refuses private targets unless allowed: literals before connecting, names after resolving", () =>
    Effect.gen(function*() {
      const before = receiver.requests.length
      const literal = yield* failure(post("/private", { allowPrivate: false }))
      assert.deepStrictEqual([literal.reason, literal.message], [
        "private_address",
        "url host 127.0.0.1 resolves to a private, loopback or link-local address"
      ])
      const port = new URL(receiver.url).port
      const named = yield* failure(post("", { url: `http://localhost:${port}/private`, allowPrivate: false }))
      assert.deepStrictEqual([named.reason, named.message], [
        "private_address",
        "url host localhost resolves to a private, loopback or link-local address"
      ])
      const v6 = yield* failure(post("", { url: `http://[::1]:${port}/private`, allowPrivate: false }))
      assert.strictEqual(v6.reason, "private_address")
      assert.strictEqual(receiver.requests.length, before, "nothing reached the receiver")
      const resolved = yield* WebhookHttp.use((http) => http.resolve("localhost")).pipe(
        Effect.provide(layerNodeWebhookHttp)
      )
      assert.include(resolved.join(","), "127.0.0.1")
    }))

  it.live("abandons the request when interrupted", () =>
    Effect.gen(function*() {
      receiver.answer(() => ({ status: 200, delayMs: 5_000 }))
      const fiber = yield* Effect.forkChild(post("/interrupted"))
      yield* Effect.sleep(200)
      const started = Date.now()
      yield* Fiber.interrupt(fiber)
      assert.isBelow(Date.now() - started, 1_000)
      receiver.answer(() => ({ status: 200 }))
    }))

  it.live("makes a request of any method: headers in, status, headers and the whole body up to the cap out", () =>
    Effect.gen(function*() {
      receiver.answer((r) => ({
        status: r.method === "DELETE" ? 204 : 200,
        body: r.method === "DELETE" ? "" : `{"method":"${r.method}","got":${r.raw.length}}`,
        headers: { "content-type": "application/json", "x-answer": "yes" }
      }))
      const call = (method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE", body?: Uint8Array) =>
        WebhookHttp.use((http) =>
          http.request({
            method,
            url: `${receiver.url}/any/${method}`,
            headers: { "X-Custom": "yes", ...(body !== undefined ? { "Content-Type": "application/json" } : {}) },
            body,
            timeoutMs: 10_000,
            allowPrivate: true,
            maxBodyBytes: 64 * 1024
          })).pipe(Effect.provide(layerNodeWebhookHttp))
      const got = yield* call("GET")
      assert.deepStrictEqual([got.status, got.body, got.truncated, got.headers["x-answer"]], [200, `{"method":"GET","got":0}`, false, "yes"])
      const get = receiver.requests.find((r) => r.path === "/any/GET")!
      assert.isUndefined(get.headers["content-length"])
      const put = yield* call("PUT", Buffer.from(`{"a":1}`))
      assert.strictEqual(put.body, `{"method":"PUT","got":7}`)
      const sent = receiver.requests.find((r) => r.path === "/any/PUT")!
      assert.deepStrictEqual([sent.method, sent.raw.toString(), sent.headers["x-custom"]], ["PUT", `{"a":1}`, "yes"])
      assert.strictEqual((yield* call("PATCH", Buffer.from("{}"))).status, 200)
      assert.strictEqual((yield* call("DELETE")).status, 204)
    }))

  it.live("reads a long answer whole up to the cap, and says when it cut it", () =>
    Effect.gen(function*() {
      receiver.answer(() => ({ status: 200, body: "a".repeat(100_000) }))
      const read = (maxBodyBytes: number) =>
        WebhookHttp.use((http) =>
          http.request({ method: "POST", url: `${receiver.url}/long`, headers: {}, timeoutMs: 10_000, allowPrivate: true, maxBodyBytes })
        ).pipe(Effect.provide(layerNodeWebhookHttp))
      const whole = yield* read(256 * 1024)
      assert.deepStrictEqual([whole.body.length, whole.truncated], [100_000, false])
      const cut = yield* read(5_000)
      assert.deepStrictEqual([cut.body.length, cut.truncated], [5_000, true])
      receiver.answer(() => ({ status: 200 }))
    }))

  it.live("refuses private targets for requests too", () =>
    Effect.gen(function*() {
      const error = yield* failure(WebhookHttp.use((http) =>
        http.request({ method: "GET", url: `${receiver.url}/p`, headers: {}, timeoutMs: 1_000, allowPrivate: false, maxBodyBytes: 10 })
      ).pipe(Effect.provide(layerNodeWebhookHttp)))
      assert.strictEqual(error.reason, "private_address")
    }))
})
