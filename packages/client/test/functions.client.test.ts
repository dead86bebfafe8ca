/** Functions through the typed Effect client against a real host on memory ports and the memory runtime. */
import { assert, layer } from "@effect/vitest"
import { Conflict, Ids, NotFound } from "@parley/core"
import { layerMemoryJobQueue, layerMemoryStorage } from "@parley/core/testing"
import { Context, Effect, Layer } from "effect"
import { startHost, type TestHost } from "../../http-node/test/support.ts"
import { ParleyClient } from "../src/index.ts"

class Host extends Context.Service<Host, TestHost>()("test/FunctionsHost") {
  static readonly layer = Layer.effect(Host, startHost(Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layer)))
}

layer(Host.layer, { excludeTestServices: true })("functions through the client", (it) => {
  it.effect("creates, deploys, invokes (with the key as a header), manages secrets and reads the log", () =>
    Effect.gen(function*() {
      const host = yield* Host
      const client = yield* ParleyClient
      const { data: fn } = yield* client.functions.create({
        payload: {
          function: {
            name: "Client made",
            code: "export default { async fetch(request, env) { const { n } = await request.json(); return Response.json({ n: n + 1, token: env.TOKEN ?? null }) } }"
          }
        }
      })
      assert.strictEqual(fn.status, "draft")
      const accepted = yield* client.functions.deploy({ params: { id: fn.id } })
      assert.deepStrictEqual(accepted, { message: "Function deployment started", function_id: fn.id, status: "deploying" })
      let current = fn
      while (current.status !== "deployed") {
        yield* Effect.sleep(5)
        current = (yield* client.functions.get({ params: { id: fn.id } })).data
      }
      assert.deepStrictEqual(yield* client.functions.saveSecret({ params: { id: fn.id }, payload: { secret: { name: "TOKEN", value: "t" } } }), {
        message: "Secret saved"
      })
      assert.deepStrictEqual((yield* client.functions.listSecrets({ params: { id: fn.id } })).data, [{ name: "TOKEN", type: "text" }])

      const answer = yield* client.functionInvoke.invoke({ params: { id: fn.id }, headers: { "x-api-key": host.key }, payload: { n: 1 } })
      assert.deepStrictEqual(answer, { n: 2, token: "t" })
      const hidden = yield* Effect.flip(client.functionInvoke.invoke({ params: { id: fn.id }, headers: {}, payload: { n: 1 } }))
      assert.instanceOf(hidden, NotFound)

      const log = yield* client.functions.invocations({ params: { id: fn.id }, query: {} })
      assert.strictEqual(log.data.total, 1)
      assert.strictEqual(log.data.invocations[0]!.source, "api")

      const stale = yield* Effect.flip(client.functions.update({ params: { id: fn.id }, payload: { function: { name: "x", lock_version: 0 } } }))
      assert.instanceOf(stale, Conflict)
      const listed = yield* client.legacyFunctions.list({ query: {} })
      assert.isTrue(listed.body.data.some((f) => f.id === fn.id))
    }).pipe(
      Effect.provide(Layer.unwrap(Host.useSync((host) => ParleyClient.layer({ baseUrl: host.url, apiKey: host.key }))))
    ))
})
