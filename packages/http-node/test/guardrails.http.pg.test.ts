/**
 * Opt-outs over real HTTP on PostgreSQL (issue 32 §1): a contact's STOP through the network's webhook records the
 * opt-out, sends the confirmation and delivers `msg.contact.opted_out` to the project's webhook; the typed client
 * lists, adds and removes opt-outs (a removal delivers `msg.contact.opted_in`); the settings and a contact's time zone
 * are refused in the contract's shape when malformed; the proxy answers a refused send with its reason.
 */
import { assert, describe, it } from "@effect/vitest"
import { createParleyClient, ParleyError } from "@parley/client"
import { Ids } from "@parley/core"
import { layerFromUrl, layerJobQueue, layerStorage } from "@parley/store-pg"
import { Effect, Exit, Layer, Scope } from "effect"
import { afterAll, beforeAll } from "vitest"
import { freshDatabase } from "../../store-pg/test/pg.ts"
import { eventually, hostForSuite, type MessagingHost } from "./messaging.support.ts"
import { type Receiver, startReceiver } from "./receiver.ts"

process.env.PARLEY_ALLOW_PRIVATE_WEBHOOK_URLS = "true"

let host: MessagingHost
let pnid: string
hostForSuite(
  Effect.map(freshDatabase, (url) =>
    Layer.mergeAll(layerStorage, layerJobQueue({ pollingIntervalSeconds: 0.2 }), Ids.layer).pipe(Layer.provideMerge(layerFromUrl(url)))),
  (h, p) => {
    host = h
    pnid = p
  }
)

let receiver: Receiver
let closeReceiver: () => Promise<void> = () => Promise.resolve()
beforeAll(async () => {
  const scope = Effect.runSync(Scope.make())
  receiver = await Effect.runPromise(Effect.provideService(startReceiver, Scope.Scope, scope))
  closeReceiver = () => Effect.runPromise(Scope.close(scope, Exit.void))
})
afterAll(() => closeReceiver())

const say = async (from: string, text: string) => {
  const res = await host.request("POST", "/sandbox/inbound", {
    body: { phone_number_id: pnid, from, profile_name: "Ada", message: { type: "text", text: { body: text } } }
  })
  assert.strictEqual(res.status, 202, res.text)
}

const events = () =>
  receiver.requests.map((r) => JSON.parse(r.raw.toString("utf8")) as { event: string; data: { opt_out: { phone_number: string; source: string } } })

describe("opt-outs over HTTP (postgres)", () => {
  it("a STOP from the network records the opt-out, confirms it and tells the project's webhook; the client lists, adds and removes them", async () => {
    const client = createParleyClient({ baseUrl: host.url, apiKey: host.key })
    const subscribed = await host.request("POST", "/platform/v1/msg/webhooks", {
      body: { msg_webhook: { url: `${receiver.url}/hooks`, events: ["msg.contact.opted_out", "msg.contact.opted_in"], secret_key: "s" } }
    })
    assert.strictEqual(subscribed.status, 201, subscribed.text)

    const ada = "15550707001"
    await say(ada, "hello")
    await say(ada, "UNSUBSCRIBE")
    await eventually("the opt-out is listed", async () => (await client.guardrails.listOptOuts({ query: { phone_number: ada } })).body.data.length === 1)
    const listed = await client.guardrails.listOptOuts({ query: { phone_number: `+${ada}` } })
    assert.deepStrictEqual(listed.body.data.map((o) => [o.phone_number, o.source, o.keyword]), [[ada, "keyword", "UNSUBSCRIBE"]])
    await eventually("the confirmation is sent", async () => {
      const outbox = await Effect.runPromise(host.simulator.outbox(pnid))
      return outbox.some((m) => m.to === ada && JSON.stringify(m.envelope).includes("unsubscribed"))
    })
    await receiver.received(1, 20_000)
    assert.deepStrictEqual(events().map((e) => [e.event, e.data.opt_out.phone_number, e.data.opt_out.source]), [["msg.contact.opted_out", ada, "keyword"]])

    // A free text to Ada through the proxy is refused with the reason (she has not written since).
    const refused = await host.request("POST", `/proxy/${pnid}/messages`, {
      raw: JSON.stringify({ messaging_product: "whatsapp", to: ada, type: "text", text: { body: "One more offer" } })
    })
    assert.strictEqual(refused.status, 422, refused.text)
    assert.strictEqual(refused.body.code, "opted_out")

    // The API: a project-wide opt-out of another contact, answered again when repeated; removal tells the webhook.
    const added = await client.guardrails.addOptOut({ payload: { opt_out: { phone_number: "+1 555 070 7002" } } })
    assert.deepStrictEqual([added.data.phone_number, added.data.msg_config_id, added.data.source], ["15550707002", null, "api"])
    const again = await client.guardrails.addOptOut({ payload: { opt_out: { phone_number: "15550707002" } } })
    assert.strictEqual(again.data.id, added.data.id)
    assert.strictEqual((await client.guardrails.listOptOuts({ query: {} })).body.data.length, 2)
    await client.guardrails.removeOptOut({ params: { id: added.data.id } })
    assert.strictEqual((await client.guardrails.listOptOuts({ query: {} })).body.data.length, 1)
    await receiver.received(3, 20_000)
    assert.deepStrictEqual(events().slice(1).map((e) => [e.event, e.data.opt_out.phone_number]).sort(), [
      ["msg.contact.opted_in", "15550707002"],
      ["msg.contact.opted_out", "15550707002"]
    ])
    const gone = await client.guardrails.removeOptOut({ params: { id: added.data.id } }).then(() => undefined, (e: unknown) => e)
    assert.instanceOf(gone, ParleyError)
    assert.strictEqual((gone as ParleyError).status, 404)
  }, 60_000)

  it("refuses malformed settings, numbers and time zones in the contract's shape", async () => {
    const bad = await host.request("POST", "/platform/v1/msg/opt_outs", { body: { opt_out: { phone_number: "call me" } } })
    assert.deepStrictEqual([bad.status, bad.body.details?.[0]?.path], [422, "phone_number"])
    const unknownNumber = await host.request("POST", "/platform/v1/msg/opt_outs", { body: { opt_out: { phone_number: "15550707003", msg_config_id: "nope" } } })
    assert.deepStrictEqual([unknownNumber.status, unknownNumber.body.details?.[0]?.path], [422, "msg_config_id"])
    const settings = (quiet_hours: unknown) => ({
      guardrails: {
        opt_out_keywords: null,
        opt_in_keywords: null,
        opt_out_confirmation: null,
        opt_in_confirmation: null,
        quiet_hours,
        frequency_caps: null
      }
    })
    const badWindow = await host.request("PUT", "/platform/v1/msg/guardrails", { body: settings({ start: "25:00", end: "08:00", days: [] }) })
    assert.strictEqual(badWindow.status, 422, badWindow.text)
    assert.isString(badWindow.body.error)
    const badZone = await host.request("PUT", "/platform/v1/msg/guardrails", { body: settings({ start: "21:00", end: "08:00", days: [], default_time_zone: "Mars/Olympus" }) })
    assert.deepStrictEqual([badZone.status, badZone.body.details?.[0]?.path], [422, "quiet_hours.default_time_zone"])
    const good = await host.request("PUT", "/platform/v1/msg/guardrails", { body: settings({ start: "21:00", end: "08:00", days: [1, 2, 3, 4, 5] }) })
    assert.strictEqual(good.status, 200, good.text)
    const all = await host.request("GET", "/platform/v1/msg/guardrails")
    assert.deepStrictEqual(all.body.data.map((s: { msg_config_id: string | null }) => s.msg_config_id), [null])
    const zone = await host.request("PUT", "/platform/v1/msg/contact_time_zones/+15550707004", { body: { time_zone: "Nowhere/Town" } })
    assert.deepStrictEqual([zone.status, zone.body.details?.[0]?.path], [422, "time_zone"])
    assert.strictEqual((await host.request("PUT", "/platform/v1/msg/contact_time_zones/+15550707004", { body: { time_zone: "Asia/Tokyo" } })).status, 204)
    assert.strictEqual((await host.request("DELETE", "/platform/v1/msg/contact_time_zones/+15550707004")).status, 204)
    assert.strictEqual((await host.request("DELETE", "/platform/v1/msg/contact_time_zones/+15550707004")).status, 404)
  }, 60_000)
})
