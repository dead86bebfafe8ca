/**
 * The template mirror over real HTTP with the network simulator behind the
 * proxy (decisions 4.8.1): a template created through the proxy is listed at
 * once (`pending`), reviews reach it on the next read, a delete through the
 * proxy removes it; the client lists it too.
 */
import { assert, describe, it } from "@effect/vitest"
import { createParleyClient } from "@parley/client"
import { Ids } from "@parley/core"
import { layerMemoryJobQueue, layerMemoryStorage } from "@parley/core/testing"
import { Effect, Exit, Layer, Scope } from "effect"
import { afterAll, beforeAll } from "vitest"
import { connectSimulatedNumber, type MessagingHost, startMessagingHost } from "./messaging.support.ts"

let host: MessagingHost
let pnid: string
let waba: string
let close: () => Promise<void>

beforeAll(async () => {
  const scope = Effect.runSync(Scope.make())
  await Effect.runPromise(Effect.gen(function*() {
    host = yield* startMessagingHost(Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layer))
    const number = yield* connectSimulatedNumber(host)
    pnid = number.phoneNumberId
    waba = number.businessAccountId
  }).pipe(Effect.provideService(Scope.Scope, scope)))
  close = () => Effect.runPromise(Scope.close(scope, Exit.void))
}, 60_000)
afterAll(() => close())

const TEMPLATES = "/platform/v1/msg/templates"

describe("template mirror", () => {
  it("lists a template created through the proxy at once, by id too, and forgets it when deleted", async () => {
    const name = `welcome_${Date.now()}`
    const created = await host.request("POST", `/proxy/${waba}/message_templates`, {
      raw: JSON.stringify({
        name,
        category: "UTILITY",
        language: "en_US",
        components: [{ type: "BODY", text: "Welcome {{1}}!", example: { body_text: [["Ada"]] } }]
      })
    })
    assert.strictEqual(created.status, 200, created.text)
    const upstreamId = created.body.id

    const listed = await host.request("GET", `${TEMPLATES}?phone_number_id=${pnid}&name=${name}`)
    assert.strictEqual(listed.status, 200, listed.text)
    assert.strictEqual(listed.body.data.length, 1)
    const t = listed.body.data[0]
    assert.deepStrictEqual(Object.keys(t).sort(), [
      "business_account_id",
      "category",
      "components",
      "created_at",
      "id",
      "language",
      "name",
      "parameter_format",
      "status",
      "sub_category",
      "updated_at",
      "upstream_template_id"
    ])
    assert.strictEqual(t.upstream_template_id, upstreamId)
    assert.strictEqual(t.business_account_id, waba)
    assert.strictEqual(t.category, "UTILITY")
    assert.include(["pending", "approved"], t.status)
    assert.deepStrictEqual((await host.request("GET", `${TEMPLATES}/${t.id}`)).body, { data: t })

    const byStatus = await host.request("GET", `${TEMPLATES}?business_account_id=${waba}&status=REJECTED&name=${name}`)
    assert.deepStrictEqual(byStatus.body.data, [])
    const otherNumber = await host.request("GET", `${TEMPLATES}?phone_number_id=000000&name=${name}`)
    assert.deepStrictEqual(otherNumber.body.data, [])
    const otherProject = await host.request("GET", `${TEMPLATES}/${t.id}`, { key: host.otherKey })
    assert.strictEqual(otherProject.status, 404)
    assert.deepStrictEqual(otherProject.body, { error: "Template not found" })

    const client = createParleyClient({ baseUrl: host.url, apiKey: host.key })
    const viaClient = await client.msgTemplates.list({ query: { name } })
    assert.deepStrictEqual(viaClient.body.data.map((x) => x.id), [t.id])
    assert.strictEqual((await client.msgTemplates.get({ params: { id: t.id } })).data.name, name)
    await client.close()

    const deleted = await host.request("DELETE", `/proxy/${waba}/message_templates?name=${name}&hsm_id=${upstreamId}`)
    assert.strictEqual(deleted.status, 200, deleted.text)
    assert.strictEqual((await host.request("GET", `${TEMPLATES}/${t.id}`)).status, 404)
  })

  it("refuses bad paging with 422", async () => {
    const res = await host.request("GET", `${TEMPLATES}?limit=0`)
    assert.strictEqual(res.status, 422)
    assert.strictEqual(res.body.error, "limit must be between 1 and 100")
  })
})
