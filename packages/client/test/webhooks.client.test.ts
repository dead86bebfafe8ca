/** Webhooks through the typed Promise client against a real host on memory ports. */
import { assert, layer } from "@effect/vitest"
import { Ids } from "@parley/core"
import { layerMemoryJobQueue, layerMemoryStorage } from "@parley/core/testing"
import { Context, Effect, Layer } from "effect"
import { startHost, type TestHost } from "../../http-node/test/support.ts"
import { createParleyClient, ParleyError } from "../src/index.ts"

class Host extends Context.Service<Host, TestHost>()("test/WebhooksHost") {
  static readonly layer = Layer.effect(Host, startHost(Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layer)))
}

layer(Host.layer, { excludeTestServices: true })("webhooks through the Promise client", (it) => {
  it.effect("registers, updates, lists and deletes a webhook; reads the empty delivery log; rejects with the reason", () =>
    Effect.gen(function*() {
      const host = yield* Host
      const result = yield* Effect.promise(async () => {
        const client = createParleyClient({ baseUrl: host.url, apiKey: host.key })
        try {
          const { data: created } = await client.webhooks.create({
            payload: { msg_webhook: { url: "https://93.184.215.14/hooks", events: ["project.event"], secret_key: "s" } }
          })
          const { data: updated } = await client.webhooks.update({
            params: { id: created.id },
            payload: { msg_webhook: { retry_schedule: "extended" } }
          })
          const listed = await client.webhooks.list({ query: {} })
          const log = await client.webhookDeliveries.list({ query: { webhook_id: created.id } })
          await client.webhooks.delete({ params: { id: created.id } })
          const refused = await client.webhooks.create({
            payload: { msg_webhook: { url: "https://93.184.215.14/x", events: ["nope"], secret_key: "s" } }
          }).then(() => undefined, (error: unknown) => error)
          return { created, updated, listed: listed.body.data.map((w) => w.id), log: log.body.data, refused }
        } finally {
          await client.close()
        }
      })
      assert.strictEqual(result.created.kind, "ext")
      assert.strictEqual(result.updated.retry_schedule, "extended")
      assert.deepStrictEqual(result.listed, [result.created.id])
      assert.deepStrictEqual(result.log, [])
      assert.instanceOf(result.refused, ParleyError)
      assert.strictEqual((result.refused as ParleyError).status, 422)
      assert.strictEqual((result.refused as ParleyError).error, "Unknown webhook event nope")
    }))
})
