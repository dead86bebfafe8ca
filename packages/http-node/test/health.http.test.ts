/**
 * Liveness and readiness: `/healthz` answers as soon as the process does;
 * `/readyz` answers 503 until the host says it is ready (`npm start`: after
 * the default project's bootstrap) and 200 once it is, with the database
 * answering.
 */
import { NodeHttpServer } from "@effect/platform-node"
import { Ids } from "@parley/core"
import { layerMemoryFunctions, layerMemoryJobQueue, layerMemoryStorage } from "@parley/core/testing"
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer, References } from "effect"
import { HttpServer } from "effect/http"
import * as Host from "../src/Host.ts"

const serve = (readiness: "built" | "manual") =>
  Layer.build(
    Host.serve({ publicUrl: "http://127.0.0.1", readiness, functionRuntime: layerMemoryFunctions() }).pipe(
      Layer.provideMerge(NodeHttpServer.layer(Host.createNodeServer, { port: 0, host: "127.0.0.1" })),
      Layer.provideMerge(Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layer)),
      Layer.provideMerge(Layer.succeed(References.MinimumLogLevel, "Warn"))
    )
  )

const get = (url: string, path: string) =>
  Effect.promise(async () => {
    const res = await fetch(`${url}${path}`)
    return { status: res.status, body: await res.json(), retryAfter: res.headers.get("retry-after") }
  })

describe("health", () => {
  it.live("reports live at once and ready only when the host says so", () =>
    Effect.scoped(Effect.gen(function*() {
      const context = yield* serve("manual")
      const url = yield* HttpServer.addressFormattedWith(Effect.succeed).pipe(Effect.provideContext(context))
      assert.deepStrictEqual(yield* get(url, "/healthz"), { status: 200, body: { status: "ok" }, retryAfter: null })
      assert.deepStrictEqual(yield* get(url, "/readyz"), { status: 503, body: { error: "Not ready: starting" }, retryAfter: "1" })
      yield* Context.get(context, Host.Readiness).markReady
      assert.deepStrictEqual(yield* get(url, "/readyz"), { status: 200, body: { status: "ready" }, retryAfter: null })
    })))

  it.live("before it is ready, a key it does not know yet gets 503 with Retry-After, never a wrong 401", () =>
    Effect.scoped(Effect.gen(function*() {
      const context = yield* serve("manual")
      const url = yield* HttpServer.addressFormattedWith(Effect.succeed).pipe(Effect.provideContext(context))
      // The key `npm start` is about to store in its bootstrap: every authenticated surface waits for it.
      const key = { "x-api-key": "pk_not_stored_yet_0123456789" }
      const call = (path: string, init: RequestInit = {}) =>
        Effect.promise(async () => {
          const res = await fetch(`${url}${path}`, { ...init, headers: { ...key, ...init.headers } })
          return { status: res.status, retryAfter: res.headers.get("retry-after"), text: await res.text() }
        })
      const surfaces = [
        () => call("/platform/v1/workflows"),
        () => call("/api/v1/flows"),
        () => call("/proxy/v24.0/100000000000001/messages?limit=1"),
        () => call("/platform/v1/msg/media/m1/content"),
        () =>
          call("/mcp", {
            method: "POST",
            headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
            body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" })
          })
      ]
      for (const surface of surfaces) {
        const before = yield* surface()
        assert.deepStrictEqual([before.status, before.retryAfter, before.text], [503, "1", `{"error":"Not ready: starting"}`])
      }
      // No key at all can be judged at once.
      assert.strictEqual((yield* Effect.promise(() => fetch(`${url}/platform/v1/workflows`))).status, 401)
      yield* Context.get(context, Host.Readiness).markReady
      for (const surface of surfaces) assert.strictEqual((yield* surface()).status, 401)
    })))

  it.live("is ready once its layer is built, by default", () =>
    Effect.scoped(Effect.gen(function*() {
      const context = yield* serve("built")
      const url = yield* HttpServer.addressFormattedWith(Effect.succeed).pipe(Effect.provideContext(context))
      assert.strictEqual((yield* get(url, "/readyz")).status, 200)
    })))
})
