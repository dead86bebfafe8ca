/** Customers over real HTTP (memory ports, simulated network): CRUD, uniqueness, tenancy, numbers of a customer. */
import { assert, describe, it } from "@effect/vitest"
import { Ids, UpstreamSettings } from "@parley/core"
import { layerMemoryJobQueue, layerMemoryStorage } from "@parley/core/testing"
import { Context, Effect, Exit, Layer, Option, Redacted, Scope } from "effect"
import { afterAll, beforeAll } from "vitest"
import { type MessagingHost, startMessagingHost } from "./messaging.support.ts"

let host: MessagingHost
let token: string
let pnid: string
let waba: string
let close: () => Promise<void>

beforeAll(async () => {
  const scope = Effect.runSync(Scope.make())
  await Effect.runPromise(Effect.gen(function*() {
    host = yield* startMessagingHost(Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layer))
    const number = Option.getOrThrow(Context.get(host.context, UpstreamSettings).simulatedNumber)
    token = Redacted.value(number.accessToken)
    pnid = number.phoneNumberId
    waba = number.businessAccountId
  }).pipe(Effect.provideService(Scope.Scope, scope)))
  close = () => Effect.runPromise(Scope.close(scope, Exit.void))
}, 60_000)
afterAll(() => close())

const create = (customer: Record<string, unknown>, key?: string) =>
  host.request("POST", "/platform/v1/customers", { body: { customer }, ...(key !== undefined ? { key } : {}) })

describe("customers", () => {
  it("creates with the exact shape, reads, updates and lists with filters", async () => {
    const res = await create({ name: " Acme Retail ", external_customer_id: "acme-1" })
    assert.strictEqual(res.status, 201, res.text)
    const c = res.body.data
    assert.deepStrictEqual(Object.keys(c).sort(), ["created_at", "external_customer_id", "id", "name", "updated_at"])
    assert.strictEqual(c.name, "Acme Retail")
    assert.strictEqual(c.external_customer_id, "acme-1")
    assert.deepStrictEqual((await host.request("GET", `/platform/v1/customers/${c.id}`)).body, { data: c })
    const patched = await host.request("PATCH", `/platform/v1/customers/${c.id}`, { body: { customer: { name: "Acme Ltd" } } })
    assert.strictEqual(patched.status, 200)
    assert.strictEqual(patched.body.data.name, "Acme Ltd")
    assert.strictEqual(patched.body.data.external_customer_id, "acme-1")
    await create({ name: "Blue Bakery" })
    const byName = await host.request("GET", "/platform/v1/customers?name_contains=acme")
    assert.deepStrictEqual(byName.body.data.map((x: any) => x.id), [c.id])
    assert.deepStrictEqual(Object.keys(byName.body), ["data", "paging"])
    const byExternal = await host.request("GET", "/platform/v1/customers?external_customer_id=acme-1&page=1")
    assert.deepStrictEqual(byExternal.body.meta, { page: 1, per_page: 20, total_pages: 1, total_count: 1 })
  })

  it("refuses a missing or blank name and a taken external id (422), unknown ids (404)", async () => {
    const missing = await create({ external_customer_id: "x" })
    assert.strictEqual(missing.status, 422)
    assert.strictEqual(missing.body.details[0].path, "customer.name")
    assert.strictEqual((await create({ name: "   " })).body.error, "name must be 1-200 characters")
    await create({ name: "First", external_customer_id: "dup" })
    const dup = await create({ name: "Second", external_customer_id: "dup" })
    assert.strictEqual(dup.status, 422)
    assert.strictEqual(dup.body.error, "external_customer_id has already been taken")
    const unknown = await host.request("GET", "/platform/v1/customers/00000000-0000-4000-8000-000000000000")
    assert.strictEqual(unknown.status, 404)
    assert.deepStrictEqual(unknown.body, { error: "Customer not found" })
  })

  it("keeps customers to their project: other projects get 404 and may reuse external ids", async () => {
    const c = (await create({ name: "Private Co", external_customer_id: "shared-ext" })).body.data
    for (const [method, body] of [["GET", undefined], ["PATCH", { customer: { name: "x" } }], ["DELETE", undefined]] as const) {
      const res = await host.request(method, `/platform/v1/customers/${c.id}`, { key: host.otherKey, ...(body ? { body } : {}) })
      assert.strictEqual(res.status, 404, method)
    }
    assert.strictEqual((await create({ name: "Theirs", external_customer_id: "shared-ext" }, host.otherKey)).status, 201)
  })

  it("connects a number to a customer, refuses deleting the customer while it is connected, then deletes", async () => {
    const c = (await create({ name: "Number Owner" })).body.data
    const connected = await host.request("POST", `/platform/v1/customers/${c.id}/msg/phone_numbers`, {
      body: { msg_config: { phone_number_id: pnid, business_account_id: waba, access_token: token } }
    })
    assert.strictEqual(connected.status, 201, connected.text)
    assert.strictEqual(connected.body.data.customer_id, c.id)
    assert.notInclude(connected.text, token)
    const listed = await host.request("GET", `/platform/v1/msg/phone_numbers?customer_id=${c.id}`)
    assert.deepStrictEqual(listed.body.data.map((n: any) => n.phone_number_id), [pnid])
    const refused = await host.request("DELETE", `/platform/v1/customers/${c.id}`)
    assert.strictEqual(refused.status, 422)
    assert.strictEqual(refused.body.error, "Disconnect the customer's phone numbers before deleting it")
    assert.strictEqual((await host.request("DELETE", `/platform/v1/msg/phone_numbers/${pnid}`)).status, 204)
    const deleted = await host.request("DELETE", `/platform/v1/customers/${c.id}`)
    assert.strictEqual(deleted.status, 204)
    assert.strictEqual((await host.request("GET", `/platform/v1/customers/${c.id}`)).status, 404)
    const unknown = await host.request("POST", "/platform/v1/customers/00000000-0000-4000-8000-000000000000/msg/phone_numbers", {
      body: { msg_config: { phone_number_id: pnid, business_account_id: waba, access_token: token } }
    })
    assert.strictEqual(unknown.status, 404)
  })
})
