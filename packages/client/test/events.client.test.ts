/** Project events through the typed clients (Effect and Promise) against a real host on memory ports. */
import { assert, layer } from "@effect/vitest"
import { Ids, PaymentRequired, Unprocessable } from "@parley/core"
import { layerMemoryJobQueue, layerMemoryStorage } from "@parley/core/testing"
import { Context, Effect, Layer } from "effect"
import { startHost, type TestHost } from "../../http-node/test/support.ts"
import { createParleyClient, ParleyClient, ParleyError } from "../src/index.ts"

class Host extends Context.Service<Host, TestHost>()("test/EventsHost") {
  static readonly layer = Layer.effect(Host, startHost(Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layer)))
}

const withClient = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const host = yield* Host
    return yield* effect.pipe(Effect.provide(ParleyClient.layer({ baseUrl: host.url, apiKey: host.key })))
  })

layer(Host.layer, { excludeTestServices: true })("project events through the clients", (it) => {
  it.effect("emits, lists in both modes and manages definitions with the Effect client", () =>
    withClient(Effect.gen(function*() {
      const client = yield* ParleyClient
      const { data: event } = yield* client.events.emit({ payload: { name: "client.event", properties: { n: 1 } } })
      assert.strictEqual(event.name, "client.event")
      assert.deepStrictEqual(event.properties, { n: 1 })
      const paged = yield* client.events.list({ query: { name: "client.event" } })
      assert.isTrue("meta" in paged.body)
      assert.deepStrictEqual(paged.body.data.map((e) => e.id), [event.id])
      const cursor = yield* client.events.list({ query: { name: "client.event", limit: "5" } })
      assert.isTrue("paging" in cursor.body)

      // 201 and 200 carry the same shape: both decode.
      const created = yield* client.eventDefinitions.save({ payload: { name: "client.def", description: "first" } })
      const updated = yield* client.eventDefinitions.save({ payload: { name: "client.def", description: "second" } })
      assert.strictEqual(updated.data.id, created.data.id)
      assert.strictEqual(updated.data.description, "second")
      const deleted = yield* client.eventDefinitions.delete({ params: { id: created.data.id } })
      assert.deepStrictEqual(deleted, { data: { id: created.data.id, status: "deletion_pending" } })

      const error = yield* Effect.flip(client.events.emit({ payload: { name: "Upper" } }))
      assert.instanceOf(error, Unprocessable)
      if (error._tag === "Unprocessable") assert.strictEqual(error.error, "name must be lowercase, at most 128 characters")
      assert.isFalse(error instanceof PaymentRequired)
    })))

  it.effect("the Promise client rejects with the status and message", () =>
    Effect.gen(function*() {
      const host = yield* Host
      const client = createParleyClient({ baseUrl: host.url, apiKey: host.key })
      const result = yield* Effect.promise(async () => {
        try {
          await client.events.emit({ payload: { name: "e", properties: { nested: { no: true } } } })
          return undefined
        } catch (error) {
          return error
        } finally {
          await client.close()
        }
      })
      assert.instanceOf(result, ParleyError)
      assert.strictEqual((result as ParleyError).status, 422)
      assert.strictEqual((result as ParleyError).error, "property nested must be a string, number, boolean or null")
    }))
})
