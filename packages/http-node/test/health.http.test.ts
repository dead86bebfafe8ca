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

  it.live("is ready once its layer is built, by default", () =>
    Effect.scoped(Effect.gen(function*() {
      const context = yield* serve("built")
      const url = yield* HttpServer.addressFormattedWith(Effect.succeed).pipe(Effect.provideContext(context))
      assert.strictEqual((yield* get(url, "/readyz")).status, 200)
    })))
})
