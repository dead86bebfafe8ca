/**
 * The network's objects read by id through the proxy, as a Cloud API SDK asks
 * for them (issue 29 §2, decisions 4.10), over real HTTP with the network
 * simulator behind: `GET /<phone_number_id>` (the number's fields),
 * `GET /<template_id>`, `GET /<media_id>` with or without `phone_number_id`,
 * `GET /<waba_id>/phone_numbers` (only the numbers the project holds) and
 * `/<waba_id>/subscribed_apps` (read only); another project's ids answer 404
 * code 100.
 */
import { assert, describe, it } from "@effect/vitest"
import { Ids } from "@parley/core"
import { layerMemoryJobQueue, layerMemoryStorage } from "@parley/core/testing"
import { Effect, Exit, Layer, Scope } from "effect"
import { afterAll, beforeAll } from "vitest"
import { connectSimulatedNumber, type MessagingHost, startMessagingHost } from "./messaging.support.ts"

let host: MessagingHost
let pnid: string
let waba: string
let close: () => Promise<void>
let templateId: string
let mediaId: string

beforeAll(async () => {
  const scope = Effect.runSync(Scope.make())
  await Effect.runPromise(Effect.gen(function*() {
    host = yield* startMessagingHost(Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layer))
    const number = yield* connectSimulatedNumber(host)
    pnid = number.phoneNumberId
    waba = number.businessAccountId
  }).pipe(Effect.provideService(Scope.Scope, scope)))
  close = () => Effect.runPromise(Scope.close(scope, Exit.void))
  const created = await host.request("POST", `/proxy/v24.0/${waba}/message_templates`, {
    raw: JSON.stringify({
      name: "order_ready",
      category: "UTILITY",
      language: "en_US",
      components: [{ type: "BODY", text: "Order {{1}} is ready.", example: { body_text: [["A-1"]] } }]
    })
  })
  assert.strictEqual(created.status, 200, created.text)
  templateId = created.body.id
  const form = new FormData()
  form.set("messaging_product", "whatsapp")
  form.set("file", new Blob([new TextEncoder().encode("a receipt")], { type: "text/plain" }), "receipt.txt")
  const uploaded = await fetch(`${host.url}/proxy/v24.0/${pnid}/media`, { method: "POST", headers: { "x-api-key": host.key }, body: form })
  mediaId = ((await uploaded.json()) as { id: string }).id
}, 60_000)
afterAll(() => close())

const unknown = (answer: { readonly status: number; readonly body: any }, id: string) => {
  assert.strictEqual(answer.status, 404, JSON.stringify(answer.body))
  assert.strictEqual(answer.body.error.code, 100)
  assert.include(answer.body.error.message, `'${id}'`)
}

describe("GET /<id>", () => {
  it("answers a number's fields as the network does, the fields asked for", async () => {
    const all = await host.request("GET", `/proxy/v24.0/${pnid}`)
    assert.strictEqual(all.status, 200, all.text)
    assert.strictEqual(all.body.id, pnid)
    assert.strictEqual(typeof all.body.display_phone_number, "string")
    assert.strictEqual(typeof all.body.verified_name, "string")
    const some = await host.request("GET", `/proxy/${pnid}?fields=verified_name,quality_rating`)
    assert.strictEqual(some.status, 200, some.text)
    assert.deepStrictEqual(Object.keys(some.body).sort(), ["id", "quality_rating", "verified_name"])
  })

  it("answers a template of the project's business account by id", async () => {
    const template = await host.request("GET", `/proxy/v24.0/${templateId}`)
    assert.strictEqual(template.status, 200, template.text)
    assert.strictEqual(template.body.id, templateId)
    assert.strictEqual(template.body.name, "order_ready")
    assert.strictEqual(template.body.language, "en_US")
  })

  it("answers media with or without phone_number_id, the network making it optional", async () => {
    const named = await host.request("GET", `/proxy/v24.0/${mediaId}?phone_number_id=${pnid}`)
    const bare = await host.request("GET", `/proxy/v24.0/${mediaId}`)
    for (const answer of [named, bare]) {
      assert.strictEqual(answer.status, 200, answer.text)
      assert.strictEqual(answer.body.id, mediaId)
      assert.strictEqual(answer.body.mime_type, "text/plain")
      assert.strictEqual(answer.body.file_size, "9")
    }
    const download = await fetch(bare.body.download_url)
    assert.strictEqual(download.status, 200)
    assert.strictEqual(await download.text(), "a receipt")
  })

  it("reads and deletes only media as media: a template id is not media, with or without the number", async () => {
    unknown(await host.request("GET", `/proxy/v24.0/${templateId}?phone_number_id=${pnid}`), templateId)
    unknown(await host.request("DELETE", `/proxy/v24.0/${templateId}`), templateId)
    unknown(await host.request("DELETE", `/proxy/v24.0/${templateId}?phone_number_id=${pnid}`), templateId)
    assert.strictEqual((await host.request("GET", `/proxy/v24.0/${templateId}`)).status, 200, "the template is still there")

    const form = new FormData()
    form.set("messaging_product", "whatsapp")
    form.set("file", new Blob([new TextEncoder().encode("to delete")], { type: "text/plain" }), "gone.txt")
    const uploaded = await fetch(`${host.url}/proxy/v24.0/${pnid}/media`, { method: "POST", headers: { "x-api-key": host.key }, body: form })
    const id = ((await uploaded.json()) as { id: string }).id
    unknown(await host.request("DELETE", `/proxy/v24.0/${id}`, { key: host.otherKey }), id)
    const deleted = await host.request("DELETE", `/proxy/v24.0/${id}`)
    assert.strictEqual(deleted.status, 200, deleted.text)
    assert.deepStrictEqual(deleted.body, { success: true })
    assert.notStrictEqual((await host.request("GET", `/proxy/v24.0/${id}`)).status, 200)
  })

  it("answers 404 code 100 for another project's ids and ids no account of the project knows", async () => {
    for (const id of [pnid, templateId, mediaId]) unknown(await host.request("GET", `/proxy/v24.0/${id}`, { key: host.otherKey }), id)
    unknown(await host.request("GET", "/proxy/v24.0/987654321000"), "987654321000")
    unknown(await host.request("GET", `/proxy/v24.0/${waba}/phone_numbers`, { key: host.otherKey }), waba)
    unknown(await host.request("GET", `/proxy/v24.0/${waba}/subscribed_apps`, { key: host.otherKey }), waba)
  })
})

describe("business account edges", () => {
  it("GET /<waba_id>/subscribed_apps answers the subscription; changing it is refused (Parley receives the webhooks)", async () => {
    const listed = await host.request("GET", `/proxy/v24.0/${waba}/subscribed_apps`)
    assert.strictEqual(listed.status, 200, listed.text)
    assert.strictEqual(listed.body.data.length, 1)
    for (const method of ["POST", "DELETE"]) {
      const refused = await host.request(method, `/proxy/v24.0/${waba}/subscribed_apps`, { body: {} })
      assert.strictEqual(refused.status, 403, refused.text)
      assert.strictEqual(refused.body.error.code, 200)
    }
    const still = await host.request("GET", `/proxy/${waba}/subscribed_apps`)
    assert.deepStrictEqual(still.body, listed.body)
  })

  it("GET /<waba_id>/phone_numbers lists the account's numbers each project holds, and a number of another project is not read", async () => {
    // A second number on the same business account, connected by project B.
    const other = { phoneNumberId: "100000000000888", businessAccountId: waba, accessToken: "second-number-token-0888" }
    await Effect.runPromise(host.simulator.registerNumber({ ...other, displayPhoneNumber: "+1 555-010-0888", verifiedName: "Second" }))
    const connected = await host.request("POST", "/platform/v1/msg/phone_numbers", {
      key: host.otherKey,
      body: {
        msg_config: { phone_number_id: other.phoneNumberId, business_account_id: waba, access_token: other.accessToken }
      }
    })
    assert.strictEqual(connected.status, 201, connected.text)

    const a = await host.request("GET", `/proxy/v24.0/${waba}/phone_numbers`)
    assert.strictEqual(a.status, 200, a.text)
    assert.deepStrictEqual(a.body.data.map((n: any) => n.id), [pnid])
    assert.strictEqual(typeof a.body.data[0].display_phone_number, "string")
    const b = await host.request("GET", `/proxy/v24.0/${waba}/phone_numbers?fields=id,verified_name`, { key: host.otherKey })
    assert.strictEqual(b.status, 200, b.text)
    assert.deepStrictEqual(b.body.data, [{ id: other.phoneNumberId, verified_name: "Second" }])
    for (const page of [a.body, b.body]) {
      assert.notInclude(JSON.stringify(page), "access_token")
      assert.notInclude(JSON.stringify(page), other.accessToken)
    }

    // Project A's account token would read it: the number is project B's.
    unknown(await host.request("GET", `/proxy/v24.0/${other.phoneNumberId}`), other.phoneNumberId)
    const own = await host.request("GET", `/proxy/v24.0/${other.phoneNumberId}`, { key: host.otherKey })
    assert.strictEqual(own.status, 200, own.text)
  })
})
