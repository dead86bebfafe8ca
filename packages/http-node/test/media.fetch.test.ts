/**
 * The Node `WebhookHttp.fetch` (media ingest's GET) against a loopback source:
 * binary bytes exact, a redirect answered as it is, the cap (fixed, or chosen
 * from the answer's headers) enforced while the body streams, and the
 * private-address rule.
 */
import { assert, describe, it } from "@effect/vitest"
import { WebhookHttp, type WebhookHttpFetch } from "@parley/core"
import { Effect } from "effect"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll } from "vitest"
import { layerNodeWebhookHttp } from "../src/adapters/NodeWebhookHttp.ts"

let server: Http.Server
let base: string
const binary = Buffer.from(Array.from({ length: 256 }, (_, i) => i))

beforeAll(async () => {
  server = Http.createServer((req, res) => {
    if (req.url === "/binary") {
      res.writeHead(200, { "content-type": "application/octet-stream" })
      return res.end(binary)
    }
    if (req.url === "/moved") {
      res.writeHead(301, { location: "/binary" })
      return res.end()
    }
    // 4 MB in 64 KB chunks.
    res.writeHead(200, { "content-type": req.url === "/stream.png" ? "image/png" : "application/pdf" })
    const chunk = Buffer.alloc(64 * 1024, 7)
    let left = 64
    const write = () => {
      while (left > 0) {
        left--
        if (!res.write(chunk)) return void res.once("drain", write)
      }
      res.end()
    }
    res.on("error", () => undefined)
    write()
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(async () => {
  server.closeAllConnections()
  await new Promise((resolve) => server.close(resolve))
})

const fetchOnce = (path: string, options: Partial<WebhookHttpFetch> = {}) =>
  WebhookHttp.use((http) =>
    http.fetch({ url: `${base}${path}`, timeoutMs: 10_000, allowPrivate: true, maxBodyBytes: 1024 * 1024, ...options })
  ).pipe(Effect.provide(layerNodeWebhookHttp))

describe("Node WebhookHttp.fetch", () => {
  it.live("answers the bytes exactly, and a redirect as it is", () =>
    Effect.gen(function*() {
      const answer = yield* fetchOnce("/binary")
      assert.strictEqual(answer.status, 200)
      assert.isTrue(Buffer.from(answer.body).equals(binary))
      assert.isFalse(answer.truncated)
      const moved = yield* fetchOnce("/moved")
      assert.strictEqual(moved.status, 301)
      assert.strictEqual(moved.headers["location"], "/binary")
    }))

  it.live("holds no more than the cap and stops reading past it", () =>
    Effect.gen(function*() {
      const capped = yield* fetchOnce("/stream.pdf", { maxBodyBytes: 100_000 })
      assert.strictEqual(capped.body.byteLength, 100_000)
      assert.isTrue(capped.truncated)
      const byType = yield* fetchOnce("/stream.png", {
        maxBodyBytes: (headers) => headers["content-type"] === "image/png" ? 10_000 : 1
      })
      assert.strictEqual(byType.body.byteLength, 10_000)
      assert.isTrue(byType.truncated)
    }))

  it.live("refuses a private address unless allowed", () =>
    Effect.gen(function*() {
      const refused = yield* Effect.flip(fetchOnce("/binary", { allowPrivate: false }))
      assert.strictEqual(refused.reason, "private_address")
      const named = yield* Effect.flip(fetchOnce("/binary", { allowPrivate: false, url: base.replace("127.0.0.1", "localhost") + "/binary" }))
      assert.strictEqual(named.reason, "private_address")
    }))
})
