/**
 * Connected numbers over real HTTP on memory ports: the manual connection
 * verified against the (simulated) network, the Platform listing and its
 * exact fields, the older surface's `PATCH /api/v1/msg_configs/<id>`,
 * disconnection, the simulated number's bootstrap, the references workflows
 * and events make to numbers and conversations, and credentials that never
 * come back.
 */
import { assert, describe, it } from "@effect/vitest"
import { Ids, MessageConfigs, Messaging, UpstreamSettings } from "@parley/core"
import { layerMemoryJobQueue, layerMemoryStorage } from "@parley/core/testing"
import { Context, Effect, Exit, Layer, Option, Redacted, Scope } from "effect"
import { afterAll, beforeAll } from "vitest"
import { eventually, type MessagingHost, startMessagingHost } from "./messaging.support.ts"

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

const PHONE_NUMBER_KEYS = [
  "business_account_id",
  "calls_enabled",
  "code_verification_status",
  "created_at",
  "customer_id",
  "display_phone_number",
  "id",
  "inbound_processing_enabled",
  "is_coexistence",
  "is_official_business_account",
  "is_pin_enabled",
  "kind",
  "msg_business_manager_messaging_limit",
  "name",
  "name_status",
  "phone_number_id",
  "quality_rating",
  "status",
  "throughput_tier",
  "updated_at",
  "verified_name",
  "webhook_verified_at"
]
const CONFIG_KEYS = [
  "business_account_id",
  "created_at",
  "customer_id",
  "display_name",
  "display_phone_number",
  "display_phone_number_normalized",
  "id",
  "inbound_processing_enabled",
  "kind",
  "name",
  "phone_number_id",
  "updated_at"
]
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/
const SECRETS = { webhook_verify_token: "verify-0123456789", app_secret: "app-secret-0123456789", webhook_destination_url: "https://hooks.example.com/secret-path-0123456789" }

const connect = (body: Record<string, unknown>, key?: string) =>
  host.request("POST", "/platform/v1/msg/phone_numbers", { body: { msg_config: body }, ...(key !== undefined ? { key } : {}) })

describe("phone numbers (manual connection, listing, disconnection)", () => {
  let configId: string

  it("connects a number after the network accepted its credentials: 201 with the phone number", async () => {
    const res = await connect({ phone_number_id: pnid, business_account_id: waba, access_token: token, name: "Support", ...SECRETS })
    assert.strictEqual(res.status, 201, res.text)
    assert.deepStrictEqual(Object.keys(res.body), ["data"])
    const number = res.body.data
    assert.deepStrictEqual(Object.keys(number).sort(), PHONE_NUMBER_KEYS)
    assert.match(number.id, UUID)
    configId = number.id
    assert.deepStrictEqual({ ...number, id: undefined, created_at: undefined, updated_at: undefined }, {
      id: undefined,
      phone_number_id: pnid,
      name: "Support",
      business_account_id: waba,
      display_phone_number: "+1 555-010-0001",
      quality_rating: "GREEN",
      throughput_tier: "TIER_10K",
      status: "CONNECTED",
      customer_id: null,
      kind: "production",
      is_coexistence: false,
      calls_enabled: false,
      is_official_business_account: false,
      is_pin_enabled: false,
      inbound_processing_enabled: true,
      verified_name: "Parley Sandbox",
      name_status: "APPROVED",
      code_verification_status: "VERIFIED",
      msg_business_manager_messaging_limit: "TIER_10K",
      webhook_verified_at: null,
      created_at: undefined,
      updated_at: undefined
    })
    assert.strictEqual(number.created_at, number.updated_at)
  })

  it("lists the project's numbers in cursor mode by default, and gets one by its network id", async () => {
    const list = await host.request("GET", "/platform/v1/msg/phone_numbers")
    assert.strictEqual(list.status, 200, list.text)
    assert.deepStrictEqual(Object.keys(list.body), ["data", "paging"])
    assert.deepStrictEqual(list.body.data.map((n: any) => n.phone_number_id), [pnid])
    assert.isNull(list.body.paging.next)
    const paged = await host.request("GET", "/platform/v1/msg/phone_numbers?page=1&per_page=5")
    assert.deepStrictEqual(paged.body.meta, { page: 1, per_page: 5, total_pages: 1, total_count: 1 })
    assert.strictEqual(paged.headers.get("x-total"), "1")
    assert.deepStrictEqual((await host.request("GET", "/platform/v1/msg/phone_numbers?kind=sandbox")).body.data, [])
    const one = await host.request("GET", `/platform/v1/msg/phone_numbers/${pnid}`)
    assert.strictEqual(one.status, 200)
    assert.strictEqual(one.body.data.id, configId)
    assert.strictEqual((await host.request("GET", "/platform/v1/msg/phone_numbers?kind=nope")).status, 422)
  })

  it("keeps other projects out: invisible, unknown, and the number cannot be connected twice", async () => {
    assert.deepStrictEqual((await host.request("GET", "/platform/v1/msg/phone_numbers", { key: host.otherKey })).body.data, [])
    const other = await host.request("GET", `/platform/v1/msg/phone_numbers/${pnid}`, { key: host.otherKey })
    assert.strictEqual(other.status, 404)
    assert.deepStrictEqual(other.body, { error: "Phone number not found" })
    for (const key of [host.key, host.otherKey]) {
      const again = await connect({ phone_number_id: pnid, business_account_id: waba, access_token: token }, key)
      assert.strictEqual(again.status, 422, again.text)
      assert.deepStrictEqual(again.body, { error: `Phone number ${pnid} is already connected` })
    }
  })

  it("refuses credentials the network refuses, and bodies without the envelope or a required field", async () => {
    const badToken = await connect({ phone_number_id: "100000000000777", business_account_id: waba, access_token: "wrong-token" })
    assert.strictEqual(badToken.status, 422, badToken.text)
    assert.match(badToken.body.error, /^The network refused the credentials: \(#190\)/)
    const missing = await host.request("POST", "/platform/v1/msg/phone_numbers", { body: { phone_number_id: pnid } })
    assert.strictEqual(missing.status, 400)
    assert.deepStrictEqual(missing.body, { error: "Missing msg_config envelope in the request body", code: "missing_envelope" })
    const noToken = await connect({ phone_number_id: pnid, business_account_id: waba })
    assert.strictEqual(noToken.status, 422)
    assert.strictEqual(noToken.body.details[0].path, "msg_config.access_token")
    const badUrl = await connect({ phone_number_id: "100000000000778", business_account_id: waba, access_token: token, webhook_destination_url: "ftp://x" })
    assert.strictEqual(badUrl.status, 422)
    assert.strictEqual(badUrl.body.error, "msg_config.webhook_destination_url must be an http(s) URL")
  })

  it("updates a config through the older surface: { data: <config> } without credentials", async () => {
    const res = await host.request("PATCH", `/api/v1/msg_configs/${configId}`, {
      body: { msg_config: { name: "Sales", kind: "production", inbound_processing_enabled: false, webhook_verify_token: "rotated-verify-0123" } }
    })
    assert.strictEqual(res.status, 200, res.text)
    assert.deepStrictEqual(Object.keys(res.body), ["data"])
    assert.deepStrictEqual(Object.keys(res.body.data).sort(), CONFIG_KEYS)
    assert.deepStrictEqual({ ...res.body.data, created_at: undefined, updated_at: undefined }, {
      id: configId,
      name: "Sales",
      display_name: "Parley Sandbox",
      kind: "production",
      phone_number_id: pnid,
      business_account_id: waba,
      display_phone_number: "+1 555-010-0001",
      display_phone_number_normalized: "15550100001",
      customer_id: null,
      inbound_processing_enabled: false,
      created_at: undefined,
      updated_at: undefined
    })
    const stored = Option.getOrThrow(await Effect.runPromise(
      Effect.flatMap(Effect.succeed(Context.get(host.context, MessageConfigs)), (configs) =>
        Effect.map(configs.get({ project: { id: host.projectA } as any, apiKey: { id: "k", name: "k" } }, pnid), Option.some))
    ))
    assert.strictEqual(Redacted.value(stored.webhook_verify_token!), "rotated-verify-0123", "write-only, but written")
    assert.strictEqual(Redacted.value(stored.app_secret!), SECRETS.app_secret, "fields not sent stay as they were")
    const other = await host.request("PATCH", `/api/v1/msg_configs/${configId}`, { key: host.otherKey, body: { msg_config: { name: "x" } } })
    assert.strictEqual(other.status, 404)
    const badToken = await host.request("PATCH", `/api/v1/msg_configs/${configId}`, { body: { msg_config: { access_token: "nope" } } })
    assert.strictEqual(badToken.status, 422, "changed credentials are verified again")
    await host.request("PATCH", `/api/v1/msg_configs/${configId}`, { body: { msg_config: { inbound_processing_enabled: true } } })
  })

  it("lets workflows and events reference the number and its conversations", async () => {
    const workflow = await host.request("POST", "/platform/v1/workflows", { body: { workflow: { name: `Inbound ${crypto.randomUUID()}` } } })
    assert.strictEqual(workflow.status, 201, workflow.text)
    const trigger = await host.request("POST", `/platform/v1/workflows/${workflow.body.data.id}/triggers`, {
      body: { trigger: { trigger_type: "inbound_message", phone_number_id: pnid } }
    })
    assert.strictEqual(trigger.status, 201, trigger.text)
    assert.strictEqual(trigger.body.data.display_name, "Msg: Parley Sandbox")

    const sent = await host.request("POST", "/sandbox/inbound", {
      body: { phone_number_id: pnid, from: "15550007001", message: { type: "text", text: { body: "order 42" } } }
    })
    assert.strictEqual(sent.status, 202, sent.text)
    const messaging = Context.get(host.context, Messaging)
    let conversationId = ""
    await eventually("message stored", async () => {
      const exit = await Effect.runPromiseExit(messaging.getMessage(host.projectA, pnid, sent.body.id))
      if (Exit.isSuccess(exit)) conversationId = exit.value.conversation_id
      return Exit.isSuccess(exit)
    })
    const event = await host.request("POST", "/platform/v1/events", { body: { name: "order.asked", conversation_id: conversationId } })
    assert.strictEqual(event.status, 201, event.text)
    assert.strictEqual(event.body.data.conversation_id, conversationId)
    const foreign = await host.request("POST", "/platform/v1/events", { key: host.otherKey, body: { name: "order.asked", conversation_id: conversationId } })
    assert.strictEqual(foreign.status, 422)
    assert.deepStrictEqual(foreign.body, { error: "Conversation not found" })
  })

  it("disconnects a number: 204, gone from the listing, its triggers and webhooks removed; it can connect again", async () => {
    const triggersBefore = await host.request("GET", "/platform/v1/msg/phone_numbers")
    assert.strictEqual(triggersBefore.body.data.length, 1)
    const hook = await host.request("POST", `/platform/v1/msg/phone_numbers/${pnid}/webhooks`, {
      body: { msg_webhook: { url: "https://93.184.215.14/in", events: ["msg.message.received"], secret_key: "s3cret" } }
    })
    assert.strictEqual(hook.status, 201, hook.text)
    const gone = await host.request("DELETE", `/platform/v1/msg/phone_numbers/${pnid}`)
    assert.strictEqual(gone.status, 204, gone.text)
    assert.deepStrictEqual((await host.request("GET", "/platform/v1/msg/phone_numbers")).body.data, [])
    assert.strictEqual((await host.request("GET", `/platform/v1/msg/phone_numbers/${pnid}`)).status, 404)
    assert.strictEqual((await host.request("DELETE", `/platform/v1/msg/phone_numbers/${pnid}`)).status, 404)
    assert.strictEqual((await host.request("PATCH", `/api/v1/msg_configs/${configId}`, { body: { msg_config: { name: "x" } } })).status, 404)
    const again = await connect({ phone_number_id: pnid, business_account_id: waba, access_token: token })
    assert.strictEqual(again.status, 201, again.text)
    assert.notStrictEqual(again.body.data.id, configId)
    assert.strictEqual(again.body.data.name, "Parley Sandbox", "the verified name by default")
    const hooks = await host.request("GET", `/platform/v1/msg/phone_numbers/${pnid}/webhooks`)
    assert.strictEqual(hooks.status, 200, hooks.text)
    assert.deepStrictEqual(hooks.body.data, [], "the old webhooks did not come back with the number")
    assert.strictEqual((await host.request("GET", `/platform/v1/msg/webhooks/${hook.body.data.id}`)).status, 404)
  })

  it("bootstraps the simulated number into a project once, and leaves it where it is", async () => {
    const configs = Context.get(host.context, MessageConfigs)
    const first = await Effect.runPromise(configs.bootstrap(host.projectA))
    const second = await Effect.runPromise(configs.bootstrap(host.projectA))
    assert.strictEqual(Option.getOrThrow(first).id, Option.getOrThrow(second).id)
    assert.isTrue(Option.isNone(await Effect.runPromise(configs.bootstrap(host.projectB))))
  })

  it("never answers a credential", () => {
    for (const text of host.answers) {
      for (const secret of [token, ...Object.values(SECRETS), "rotated-verify-0123"]) assert.notInclude(text, secret)
    }
    for (const line of host.logs) {
      for (const secret of [token, ...Object.values(SECRETS), "rotated-verify-0123"]) assert.notInclude(line, secret)
    }
  })
})
