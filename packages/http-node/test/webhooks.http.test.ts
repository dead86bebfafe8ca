/**
 * Webhooks over real HTTP on memory ports, delivering to a real receiver on
 * loopback (`PARLEY_ALLOW_PRIVATE_WEBHOOK_URLS=true` for that host): the
 * registration rules with exact answers, deliveries verified with
 * `@parley/client` against the raw bytes, the delivery log, test deliveries,
 * batches, and a second host that refuses private targets.
 */
import { assert, describe, it } from "@effect/vitest"
import { parseWebhookBatch, verifyWebhookSignature } from "@parley/client"
import {
  EventPlans,
  layerHostCipher,
  Ids,
  layerSealedRepos,
  MessageConfigsRepo,
  Outbox,
  Projects,
  Transactor,
  WebhooksRepo
} from "@parley/core"
import { layerMemoryJobQueue, layerMemoryStorage } from "@parley/core/testing"
import { makeConfig } from "@parley/core/testing/conformance"
import { ConfigProvider, Context, Effect, Exit, Layer, Option, Scope } from "effect"
import { createHmac } from "node:crypto"
import { afterAll, beforeAll } from "vitest"
import { type Receiver, startReceiver } from "./receiver.ts"
import { startHost, type TestHost } from "./support.ts"

const PNID = "106540352242922"
const OTHER_PNID = "106540352242999"
const SECRET = "whsec_http_0123456789"
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[47][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/
/** Idempotency keys are name-based (version 5): fixed per (webhook, event occurrence). */
const NAME_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

const WEBHOOK_KEYS = [
  "active",
  "auto_pause",
  "buffer_enabled",
  "buffer_events",
  "buffer_window_seconds",
  "created_at",
  "events",
  "headers",
  "id",
  "inactivity_minutes",
  "kind",
  "max_buffer_size",
  "pause_reason",
  "paused_at",
  "payload_version",
  "phone_number_id",
  "project_id",
  "retry_schedule",
  "secret_key",
  "updated_at",
  "url"
]
const DELIVERY_KEYS = [
  "attempt_count",
  "conversation_phone_number",
  "created_at",
  "delivered_at",
  "error_message",
  "event",
  "failed_at",
  "id",
  "last_attempt_at",
  "msg_config_id",
  "next_attempt_at",
  "phone_number_id",
  "response_status",
  "status",
  "webhook_id",
  "webhook_url"
]

let host: TestHost
let strict: TestHost
let receiver: Receiver
let plans: EventPlans["Service"]
let outbox: Outbox["Service"]
let transactor: Transactor["Service"]
let projectA: string
let projectB: string
/** The memory adapter under the host: what it keeps is what a database would. */
let storedWebhooks: WebhooksRepo["Service"]
let close: () => Promise<void>

/** Connects a number to a project, through the sealed repo as the host stores configs (credentials encrypted). */
const connect = (ports: Context.Context<any>, projectId: string, phoneNumberId: string) =>
  MessageConfigsRepo.use((repo) => repo.insert(makeConfig(projectId, { phone_number_id: phoneNumberId, display_name: "+1 555" }))).pipe(
    Effect.provide(layerSealedRepos.pipe(Layer.provideMerge(layerHostCipher), Layer.provide(Layer.succeedContext(ports))))
  )

beforeAll(async () => {
  const scope = Effect.runSync(Scope.make())
  await Effect.runPromise(Effect.gen(function*() {
    receiver = yield* startReceiver
    const ports = yield* Layer.build(Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layer))
    // The setting is read from the environment when a host starts: this one may deliver to loopback.
    const environment = (allow: string) =>
      ConfigProvider.fromEnv({ env: { ...process.env, PARLEY_ALLOW_PRIVATE_WEBHOOK_URLS: allow } })
    host = yield* startHost(
      Layer.succeedContext(Context.add(ports, ConfigProvider.ConfigProvider, environment("true")))
    )
    const strictPorts = yield* Layer.build(Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layer))
    strict = yield* startHost(
      Layer.succeedContext(Context.add(strictPorts, ConfigProvider.ConfigProvider, environment("false")))
    )
    const services = yield* Layer.build(
      EventPlans.layer.pipe(Layer.provideMerge(Projects.layer), Layer.provide(Layer.succeedContext(ports)))
    )
    plans = Context.get(services, EventPlans)
    outbox = Context.get(ports, Outbox)
    storedWebhooks = Context.get(ports, WebhooksRepo)
    transactor = Context.get(ports, Transactor)
    const projects = Context.get(services, Projects)
    projectA = (yield* projects.authenticate(host.key)).project.id
    projectB = (yield* projects.authenticate(host.otherKey)).project.id
    yield* connect(ports, projectA, PNID)
    yield* connect(ports, projectB, OTHER_PNID)
  }).pipe(Effect.provideService(Scope.Scope, scope)))
  close = () => Effect.runPromise(Scope.close(scope, Exit.void))
})
afterAll(() => close())

const hook = (overrides: Record<string, unknown> = {}) => ({
  url: `${receiver.url}/hooks`,
  secret_key: SECRET,
  events: ["project.event"],
  ...overrides
})

const create = async (body: Record<string, unknown>, path = "/platform/v1/msg/webhooks", on = host) => {
  const res = await on.request("POST", path, { body: { msg_webhook: body } })
  assert.strictEqual(res.status, 201, res.text)
  return res.body.data
}

const refused = async (method: string, path: string, body: unknown, status: number, expected: unknown, on = host) => {
  const res = await on.request(method, path, { body })
  assert.strictEqual(res.status, status, res.text)
  assert.deepStrictEqual(res.body, expected)
}

const eventually = async <A>(what: string, f: () => Promise<A | undefined>, withinMs = 15_000): Promise<A> => {
  const deadline = Date.now() + withinMs
  while (true) {
    const value = await f()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`still waiting for: ${what}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

/** Requests that arrived at `path` from now on. */
const arrivals = (path: string) => {
  const from = receiver.requests.length
  return (count: number) =>
    eventually(`${count} requests at ${path}`, async () => {
      const got = receiver.requests.slice(from).filter((r) => r.path === path)
      return got.length >= count ? got : undefined
    })
}

const emit = async (name: string, properties: Record<string, unknown> = {}) => {
  const res = await host.request("POST", "/platform/v1/events", { body: { name, properties } })
  assert.strictEqual(res.status, 201, res.text)
  return res.body.data
}

describe("webhook registrations", () => {
  it("creates a project-level webhook with the defaults of 2.9 and reads it back", async () => {
    const created = await create(hook({ url: `${receiver.url}/reg`, headers: { "X-Tenant": "acme" } }))
    assert.deepStrictEqual(Object.keys(created).sort(), WEBHOOK_KEYS)
    assert.match(created.id, UUID)
    const { created_at, id, updated_at, ...rest } = created
    assert.deepStrictEqual(rest, {
      project_id: projectA,
      phone_number_id: null,
      url: `${receiver.url}/reg`,
      kind: "ext",
      events: ["project.event"],
      secret_key: SECRET,
      headers: { "X-Tenant": "acme" },
      active: true,
      paused_at: null,
      pause_reason: null,
      retry_schedule: "standard",
      auto_pause: false,
      buffer_enabled: false,
      buffer_window_seconds: 5,
      max_buffer_size: 50,
      buffer_events: ["msg.message.received"],
      inactivity_minutes: 60,
      payload_version: "v2"
    })
    assert.strictEqual(created_at, updated_at)
    const got = await host.request("GET", `/platform/v1/msg/webhooks/${id}`)
    assert.strictEqual(got.status, 200)
    assert.deepStrictEqual(got.body, { data: created })
    // Stored encrypted with the host key, answered in clear (the read shape has it).
    const stored = Option.getOrThrow(await Effect.runPromise(storedWebhooks.findById(projectA, id)))
    assert.notInclude(stored.secret_key, SECRET)
    const other = await host.request("GET", `/platform/v1/msg/webhooks/${id}`, { key: host.otherKey })
    assert.deepStrictEqual([other.status, other.body], [404, { error: "Webhook not found" }])
  })

  it("updates any field but kind; pausing and resuming by active; deletes with 204", async () => {
    const created = await create(hook({ url: `${receiver.url}/upd` }))
    const path = `/platform/v1/msg/webhooks/${created.id}`
    const patched = await host.request("PATCH", path, {
      body: { msg_webhook: { active: false, retry_schedule: "extended", auto_pause: true, payload_version: "v1", kind: "ext" } }
    })
    assert.strictEqual(patched.status, 200, patched.text)
    assert.deepStrictEqual(
      [patched.body.data.active, patched.body.data.retry_schedule, patched.body.data.auto_pause, patched.body.data.payload_version],
      [false, "extended", true, "v1"]
    )
    const resumed = await host.request("PATCH", path, { body: { msg_webhook: { active: true } } })
    assert.deepStrictEqual([resumed.body.data.active, resumed.body.data.paused_at, resumed.body.data.pause_reason], [true, null, null])
    await refused("PATCH", path, { msg_webhook: { kind: "upstream" } }, 422, { error: "kind cannot change once a webhook is created" })
    const deleted = await host.request("DELETE", path)
    assert.deepStrictEqual([deleted.status, deleted.text], [204, ""])
    await refused("GET", path, undefined, 404, { error: "Webhook not found" })
    await refused("DELETE", path, undefined, 404, { error: "Webhook not found" })
  })

  it("keeps number-level webhooks under their number's path", async () => {
    const base = `/platform/v1/msg/phone_numbers/${PNID}/webhooks`
    await refused("POST", "/platform/v1/msg/phone_numbers/999/webhooks", { msg_webhook: hook({ events: ["msg.message.received"] }) }, 404, {
      error: "Phone number not found"
    })
    await refused("GET", "/platform/v1/msg/phone_numbers/999/webhooks", undefined, 404, { error: "Phone number not found" })
    // Another project's number is not this project's.
    await refused("GET", `/platform/v1/msg/phone_numbers/${OTHER_PNID}/webhooks`, undefined, 404, { error: "Phone number not found" })
    const numbered = await create(hook({ url: `${receiver.url}/num-a`, events: ["msg.message.received"] }), base)
    assert.strictEqual(numbered.phone_number_id, PNID)
    const viaProject = await create(hook({ url: `${receiver.url}/num-b`, events: ["msg.conversation.created"], phone_number_id: PNID }))
    assert.strictEqual(viaProject.phone_number_id, PNID)
    const got = await host.request("GET", `${base}/${viaProject.id}`)
    assert.deepStrictEqual(got.body, { data: viaProject })
    const projectLevel = await create(hook({ url: `${receiver.url}/num-c` }))
    await refused("GET", `${base}/${projectLevel.id}`, undefined, 404, { error: "Webhook not found" })
    await refused("POST", "/platform/v1/msg/webhooks", { msg_webhook: hook({ events: ["msg.message.read"], phone_number_id: "777" }) }, 422, {
      error: "Phone number not found"
    })

    const listed = await host.request("GET", `${base}?url_contains=NUM-`)
    assert.strictEqual(listed.status, 200, listed.text)
    assert.deepStrictEqual(Object.keys(listed.body), ["data", "paging"])
    assert.deepStrictEqual(listed.body.data.map((w: any) => w.id), [viaProject.id, numbered.id])
    const paged = await host.request("GET", `${base}?url_contains=num-&limit=1`)
    assert.deepStrictEqual(paged.body.data.map((w: any) => w.id), [viaProject.id])
    assert.isString(paged.body.paging.next)
    const next = await host.request("GET", new URL(paged.body.paging.next).pathname + new URL(paged.body.paging.next).search)
    assert.deepStrictEqual(next.body.data.map((w: any) => w.id), [numbered.id])
    const byKind = await host.request("GET", `/platform/v1/msg/webhooks?phone_number_id=${PNID}&kind=ext&url_contains=num-`)
    assert.deepStrictEqual(byKind.body.data.map((w: any) => w.id), [viaProject.id, numbered.id])
    const pageMode = await host.request("GET", `${base}?url_contains=num-&page=1&per_page=1`)
    assert.deepStrictEqual([pageMode.body.meta, pageMode.headers.get("x-total")], [
      { page: 1, per_page: 1, total_pages: 2, total_count: 2 },
      "2"
    ])
    const future = await host.request("GET", `${base}?created_after=2999-01-01T00:00:00Z`)
    assert.deepStrictEqual(future.body.data, [])
    await refused("GET", `${base}?created_after=yesterday`, undefined, 422, {
      error: "created_after must be an ISO 8601 date-time",
      details: [{ path: "created_after", message: "invalid date-time" }]
    })
  })

  it("refuses every rule break of 2.9 and 4.6 with 422 and the reason", async () => {
    const number = `/platform/v1/msg/phone_numbers/${PNID}/webhooks`
    const project = "/platform/v1/msg/webhooks"
    const cases: Array<[string, Record<string, unknown>, string]> = [
      [project, hook({ events: ["msg.message.received"] }), "msg.message.received is a phone number event: subscribe a phone number webhook to it"],
      [number, hook({ events: ["project.event"] }), "project.event is a project event: phone number webhooks cannot subscribe to it"],
      [number, hook({ events: ["msg.phone_number.created"] }), "msg.phone_number.created is a project event: phone number webhooks cannot subscribe to it"],
      [project, hook({ events: ["order.paid"] }), "Unknown webhook event order.paid"],
      [project, hook({ events: [] }), "events must name at least one event"],
      [project, hook({ events: undefined }), "events must name at least one event"],
      [project, hook({ secret_key: "" }), "secret_key must not be empty"],
      [number, hook({ kind: "upstream", events: ["msg.message.received"] }), "upstream webhooks receive every network payload of their number: events must be empty"],
      [project, hook({ kind: "upstream", events: [] }), "upstream webhooks belong to a phone number: give phone_number_id"],
      [number, hook({ kind: "upstream", events: [], buffer_enabled: true }), "upstream webhooks cannot buffer: buffer_enabled must be false"],
      [number, hook({ events: ["msg.message.received"], buffer_events: ["msg.message.sent"] }), "buffer_events may only contain msg.message.received"],
      [number, hook({ events: ["msg.message.received"], buffer_window_seconds: 61 }), "buffer_window_seconds must be a whole number between 1 and 60"],
      [number, hook({ events: ["msg.message.received"], buffer_window_seconds: 0 }), "buffer_window_seconds must be a whole number between 1 and 60"],
      [number, hook({ events: ["msg.message.received"], max_buffer_size: 101 }), "max_buffer_size must be a whole number between 1 and 100"],
      [number, hook({ events: ["msg.message.received"], inactivity_minutes: 1441 }), "inactivity_minutes must be a whole number between 1 and 1440"],
      [project, hook({ headers: Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`X-H${i}`, "v"])) }), "headers may contain at most 20 entries"],
      [project, hook({ headers: { "Content-Type": "text/plain" } }), "header Content-Type cannot be set on a webhook"],
      [project, hook({ headers: { "x-webhook-signature": "forged" } }), "header x-webhook-signature cannot be set on a webhook"],
      [project, hook({ headers: { "X-Idempotency-Key": "k" } }), "header X-Idempotency-Key cannot be set on a webhook"],
      [project, hook({ headers: { "X-Batch-Size": "1" } }), "header X-Batch-Size cannot be set on a webhook"],
      [project, hook({ headers: { "x-hub-signature-256": "sha256=forged" } }), "header x-hub-signature-256 cannot be set on a webhook"],
      [project, hook({ headers: { "Bad Header": "v" } }), "header Bad Header is not a valid header name"],
      [project, hook({ headers: { "X-Ok": "line\nbreak" } }), "header X-Ok has an invalid value"],
      [project, hook({ url: "not a url" }), "url must be an absolute URL"],
      [project, hook({ url: "ftp://example.com/x" }), "url must use https"],
      [project, hook({ url: "https://user:pw@example.com/x" }), "url must not carry credentials"]
    ]
    for (const [path, body, error] of cases) await refused("POST", path, { msg_webhook: body }, 422, { error })
    // Twenty headers are fine.
    await create(hook({ url: `${receiver.url}/twenty`, headers: Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`X-H${i}`, "v"])) }))
  })

  it("keeps one upstream webhook per number", async () => {
    const number = `/platform/v1/msg/phone_numbers/${PNID}/webhooks`
    const upstream = await create({ kind: "upstream", url: `${receiver.url}/upstream-1`, secret_key: SECRET }, number)
    assert.deepStrictEqual([upstream.kind, upstream.events, upstream.buffer_events], ["upstream", [], []])
    await refused("POST", number, { msg_webhook: { kind: "upstream", url: `${receiver.url}/upstream-2`, secret_key: SECRET } }, 422, {
      error: `Phone number ${PNID} already has an upstream webhook`
    })
    // Any number of the service's own format.
    await create(hook({ url: `${receiver.url}/ext-1`, events: ["msg.message.received"] }), number)
    await create(hook({ url: `${receiver.url}/ext-2`, events: ["msg.message.received"] }), number)
    await host.request("DELETE", `${number}/${upstream.id}`)
  })

  it("answers the envelope and field errors of 1.1", async () => {
    await refused("POST", "/platform/v1/msg/webhooks", { url: "https://x.example.com" }, 400, {
      error: "Missing msg_webhook envelope in the request body",
      code: "missing_envelope"
    })
    const missing = await host.request("POST", "/platform/v1/msg/webhooks", { body: { msg_webhook: { url: "https://x.example.com", events: ["project.event"] } } })
    assert.strictEqual(missing.status, 422)
    assert.strictEqual(missing.body.error, "msg_webhook.secret_key: Missing key")
    const wrongKind = await host.request("POST", "/platform/v1/msg/webhooks", { body: { msg_webhook: hook({ kind: "raw" }) } })
    assert.strictEqual(wrongKind.status, 422)
    assert.match(wrongKind.body.error, /^msg_webhook\.kind: /)
  })

  it("answers 402 for project.event without project events on the plan (create and PATCH)", async () => {
    const planRequired = { error: "Project events are not included in this project's plan", code: "plan_required" }
    await Effect.runPromise(plans.set(projectB, { events_enabled: false }))
    try {
      const res = await host.request("POST", "/platform/v1/msg/webhooks", { body: { msg_webhook: hook() }, key: host.otherKey })
      assert.deepStrictEqual([res.status, res.body], [402, planRequired])
      const other = await host.request("POST", "/platform/v1/msg/webhooks", {
        body: { msg_webhook: hook({ events: ["workflow.execution.failed"] }) },
        key: host.otherKey
      })
      assert.strictEqual(other.status, 201, "other project events need no plan")
      const patched = await host.request("PATCH", `/platform/v1/msg/webhooks/${other.body.data.id}`, {
        body: { msg_webhook: { events: ["workflow.execution.failed", "project.event"] } },
        key: host.otherKey
      })
      assert.deepStrictEqual([patched.status, patched.body], [402, planRequired])
    } finally {
      await Effect.runPromise(plans.set(projectB, { events_enabled: true }))
    }
  })
})

describe("private targets", () => {
  it("refuses plain http and names that resolve to private, loopback or link-local addresses", async () => {
    const path = "/platform/v1/msg/webhooks"
    const cases: Array<[string, string]> = [
      ["http://example.com/hook", "url must use https"],
      [`${receiver.url}/x`, "url must use https"],
      ["https://127.0.0.1/hook", "url host 127.0.0.1 resolves to a private, loopback or link-local address"],
      ["https://10.0.0.8/hook", "url host 10.0.0.8 resolves to a private, loopback or link-local address"],
      ["https://169.254.169.254/latest", "url host 169.254.169.254 resolves to a private, loopback or link-local address"],
      ["https://100.64.1.1/hook", "url host 100.64.1.1 resolves to a private, loopback or link-local address"],
      ["https://[::1]/hook", "url host ::1 resolves to a private, loopback or link-local address"],
      ["https://localhost/hook", "url host localhost resolves to a private, loopback or link-local address"]
    ]
    for (const [url, error] of cases) await refused("POST", path, { msg_webhook: hook({ url }) }, 422, { error }, strict)
    const ok = await strict.request("POST", path, { body: { msg_webhook: hook({ url: "https://93.184.215.14/hook" }) } })
    assert.strictEqual(ok.status, 201, ok.text)
  })
})

describe("deliveries", () => {
  it("delivers a project event signed over the exact bytes, verified by @parley/client, and logs it", async () => {
    const webhook = await create(hook({ url: `${receiver.url}/signed`, headers: { "X-Tenant": "acme" } }))
    const arrived = arrivals("/signed")
    const event = await emit("order.paid", { total: 12.5, note: "café ☕" })
    const [request] = await arrived(1)
    assert.isTrue(verifyWebhookSignature(request!.raw, request!.headers["x-webhook-signature"] as string, SECRET))
    assert.strictEqual(request!.headers["x-webhook-signature"], createHmac("sha256", SECRET).update(request!.raw).digest("hex"))
    assert.isFalse(verifyWebhookSignature(request!.raw, request!.headers["x-webhook-signature"] as string, "another"))
    assert.strictEqual(
      request!.raw.toString("utf8"),
      JSON.stringify({
        event: "project.event",
        project_id: projectA,
        data: { id: event.id, name: "order.paid", occurred_at: event.occurred_at, conversation_id: null, properties: { total: 12.5, note: "café ☕" } }
      })
    )
    assert.deepStrictEqual(parseWebhookBatch(request!.raw.toString("utf8")), [{
      event: "project.event",
      data: { id: event.id, name: "order.paid", occurred_at: event.occurred_at, conversation_id: null, properties: { total: 12.5, note: "café ☕" } }
    }])
    const h = request!.headers
    assert.deepStrictEqual(
      [request!.method, h["content-type"], h["user-agent"], h["x-webhook-event"], h["x-webhook-payload-version"], h["x-tenant"], h["content-length"]],
      ["POST", "application/json", "Parley-Webhooks/0.1.0", "project.event", "v2", "acme", String(request!.raw.length)]
    )
    assert.match(h["x-idempotency-key"] as string, NAME_UUID)
    assert.isUndefined(h["x-webhook-batch"])

    const listed = await eventually("the delivered record", async () => {
      const res = await host.request("GET", `/platform/v1/webhook_deliveries?webhook_id=${webhook.id}`)
      return res.body.data[0]?.status === "delivered" ? res : undefined
    })
    assert.deepStrictEqual(Object.keys(listed.body), ["data", "paging"])
    const record = listed.body.data[0]
    assert.deepStrictEqual(Object.keys(record).sort(), DELIVERY_KEYS)
    assert.deepStrictEqual(
      [record.event, record.response_status, record.attempt_count, record.error_message, record.failed_at, record.next_attempt_at,
        record.webhook_url, record.msg_config_id, record.phone_number_id, record.conversation_phone_number],
      ["project.event", 200, 1, null, null, null, `${receiver.url}/signed`, null, null, null]
    )
    const one = await host.request("GET", `/platform/v1/webhook_deliveries/${record.id}`)
    assert.strictEqual(one.status, 200)
    assert.deepStrictEqual(Object.keys(one.body.data).sort(), [...DELIVERY_KEYS, "attempts", "idempotency_key", "request_body"].sort())
    assert.strictEqual(one.body.data.request_body, request!.raw.toString("utf8"))
    assert.strictEqual(one.body.data.idempotency_key, h["x-idempotency-key"])
    assert.deepStrictEqual(one.body.data.attempts.length, 1)
    assert.deepStrictEqual(Object.keys(one.body.data.attempts[0]).sort(), ["attempted_at", "duration_ms", "error", "response_status"])
    assert.deepStrictEqual([one.body.data.attempts[0].response_status, one.body.data.attempts[0].error], [200, null])
    const elsewhere = await host.request("GET", `/platform/v1/webhook_deliveries/${record.id}`, { key: host.otherKey })
    assert.deepStrictEqual([elsewhere.status, elsewhere.body], [404, { error: "Webhook delivery not found" }])
    await refused("POST", `/platform/v1/webhook_deliveries/${record.id}/retry`, undefined, 422, {
      error: "Only failed deliveries can be retried; this one is delivered"
    })
    await host.request("DELETE", `/platform/v1/msg/webhooks/${webhook.id}`)
  })

  it("retries a failed attempt 10 s later with the same idempotency key and bytes", async () => {
    const webhook = await create(hook({ url: `${receiver.url}/flaky` }))
    let calls = 0
    receiver.answer((r) => r.path === "/flaky" && calls++ === 0 ? { status: 503, body: "try later" } : { status: 200 })
    const arrived = arrivals("/flaky")
    await emit("flaky.event")
    const [first] = await arrived(1)
    const pending = await eventually("the failed first attempt", async () => {
      const res = await host.request("GET", `/platform/v1/webhook_deliveries?webhook_id=${webhook.id}&errors_only=true`)
      return res.body.data[0]?.attempt_count === 1 ? res.body.data[0] : undefined
    })
    assert.deepStrictEqual([pending.status, pending.response_status, pending.error_message], ["pending", 503, "try later"])
    assert.closeTo(Date.parse(pending.next_attempt_at) - Date.parse(pending.last_attempt_at), 10_000, 100)
    const [, second] = await arrived(2)
    assert.isAtLeast(second!.at - first!.at, 9_900)
    assert.strictEqual(second!.headers["x-idempotency-key"], first!.headers["x-idempotency-key"])
    assert.isTrue(second!.raw.equals(first!.raw))
    assert.isTrue(verifyWebhookSignature(second!.raw, second!.headers["x-webhook-signature"] as string, SECRET))
    receiver.answer(() => ({ status: 200 }))
    await host.request("DELETE", `/platform/v1/msg/webhooks/${webhook.id}`)
  }, 30_000)

  it("follows no redirect: a 3xx is a failed attempt", async () => {
    const webhook = await create(hook({ url: `${receiver.url}/moved` }))
    receiver.answer((r) => r.path === "/moved" ? { status: 301, headers: { location: `${receiver.url}/elsewhere` } } : { status: 200 })
    const tested = await host.request("POST", `/platform/v1/msg/webhooks/${webhook.id}/test`, { body: {} })
    assert.deepStrictEqual(tested.body.data, {
      success: false,
      response_status: 301,
      error: "Redirect not followed (HTTP 301)",
      delivery_id: tested.body.data.delivery_id
    })
    assert.isFalse(receiver.requests.some((r) => r.path === "/elsewhere"))
    receiver.answer(() => ({ status: 200 }))
    await host.request("DELETE", `/platform/v1/msg/webhooks/${webhook.id}`)
  })

  it("sends test deliveries: sample payload, X-Webhook-Test, no retries, logged", async () => {
    const webhook = await create(hook({ url: `${receiver.url}/test`, events: ["project.event", "workflow.execution.failed"] }))
    const arrived = arrivals("/test")
    // The body is optional: `{ "event_type"? }`.
    const ok = await host.request("POST", `/platform/v1/msg/webhooks/${webhook.id}/test`)
    assert.strictEqual(ok.status, 200, ok.text)
    assert.deepStrictEqual(Object.keys(ok.body), ["data"])
    assert.deepStrictEqual(ok.body.data, { success: true, response_status: 200, delivery_id: ok.body.data.delivery_id })
    const [request] = await arrived(1)
    assert.deepStrictEqual(
      [request!.headers["x-webhook-test"], request!.headers["x-webhook-event"]],
      ["true", "project.event"]
    )
    assert.isTrue(verifyWebhookSignature(request!.raw, request!.headers["x-webhook-signature"] as string, SECRET))
    const body = JSON.parse(request!.raw.toString("utf8"))
    assert.deepStrictEqual([body.event, body.project_id, Object.keys(body.data)], [
      "project.event",
      projectA,
      ["id", "name", "occurred_at", "conversation_id", "properties"]
    ])
    receiver.answer((r) => r.path === "/test" ? { status: 500, body: "x".repeat(3000) } : { status: 200 })
    const failed = await host.request("POST", `/platform/v1/msg/webhooks/${webhook.id}/test`, {
      body: { event_type: "workflow.execution.failed" }
    })
    assert.deepStrictEqual(failed.body.data, {
      success: false,
      response_status: 500,
      error: "x".repeat(1024),
      delivery_id: failed.body.data.delivery_id
    })
    const logged = await host.request("GET", `/platform/v1/webhook_deliveries/${failed.body.data.delivery_id}`)
    assert.deepStrictEqual([logged.body.data.event, logged.body.data.status, logged.body.data.error_message.length], [
      "workflow.execution.failed",
      "failed",
      1024
    ])
    await refused("POST", `/platform/v1/webhook_deliveries/${failed.body.data.delivery_id}/retry`, undefined, 422, {
      error: "Test deliveries cannot be retried"
    })
    await refused("POST", `/platform/v1/msg/webhooks/${webhook.id}/test`, { event_type: "msg.message.read" }, 422, {
      error: "msg.message.read is a phone number event: subscribe a phone number webhook to it"
    })
    await refused("POST", "/platform/v1/msg/webhooks/nope/test", {}, 404, { error: "Webhook not found" })
    await new Promise((r) => setTimeout(r, 300))
    assert.strictEqual(receiver.requests.filter((r) => r.path === "/test").length, 2, "no retries")
    receiver.answer(() => ({ status: 200 }))
  })

  it("delivers message events and batches to number webhooks; parseWebhookBatch reads both", async () => {
    const number = `/platform/v1/msg/phone_numbers/${PNID}/webhooks`
    await create(hook({ url: `${receiver.url}/single`, events: ["msg.message.received"] }), number)
    await create(hook({ url: `${receiver.url}/batched`, events: ["msg.message.received"], buffer_enabled: true, buffer_window_seconds: 1 }), number)
    const single = arrivals("/single")
    const batched = arrivals("/batched")
    const data = (n: number) => ({
      message: { id: `wamid.${n}`, from: "15550001111", timestamp: "1772625600", type: "text", text: { body: `hi ${n}` } },
      conversation: { id: "conv-http", phone_number: "15550001111" },
      is_new_conversation: false,
      phone_number_id: PNID
    })
    const at = Date.now()
    for (const n of [1, 2]) {
      await Effect.runPromise(transactor.withTransaction(outbox.append({
        id: crypto.randomUUID(),
        project_id: projectA,
        type: "msg.message.received",
        payload: {
          data: data(n),
          msg_config: { id: "cfg", phone_number_id: PNID, display_phone_number: "+1 555", name: "Main" },
          conversation_phone_number: "15550001111"
        },
        // A batch is ordered by these times (its items may be dispatched in any order).
        created_at: new Date(at + n).toISOString()
      })))
    }
    // Deliveries are not ordered (decisions 6.5): read them by message.
    const singles = (await single(2)).sort((a, b) => a.raw.compare(b.raw))
    assert.deepStrictEqual(singles.map((r) => parseWebhookBatch(r.raw.toString("utf8"), r.headers["x-webhook-event"] as string)), [
      [{ event: "msg.message.received", data: data(1) }],
      [{ event: "msg.message.received", data: data(2) }]
    ])
    const [batch] = await batched(1)
    assert.deepStrictEqual(
      [batch!.headers["x-webhook-batch"], batch!.headers["x-batch-size"], batch!.headers["x-webhook-event"]],
      ["true", "2", "msg.message.received"]
    )
    assert.isTrue(verifyWebhookSignature(batch!.raw, batch!.headers["x-webhook-signature"] as string, SECRET))
    assert.deepStrictEqual(JSON.parse(batch!.raw.toString("utf8")), { type: "msg.message.received", batch: true, data: [data(1), data(2)] })
    assert.deepStrictEqual(parseWebhookBatch(batch!.raw.toString("utf8")), [
      { event: "msg.message.received", data: data(1) },
      { event: "msg.message.received", data: data(2) }
    ])
  })

  it("forwards upstream payloads unchanged to the number's upstream webhook", async () => {
    const number = `/platform/v1/msg/phone_numbers/${PNID}/webhooks`
    const upstream = await create({ kind: "upstream", url: `${receiver.url}/raw`, secret_key: SECRET }, number)
    const arrived = arrivals("/raw")
    const raw = Buffer.from(`{ "object":"whatsapp_business_account","entry":[ {"id":"1"} ] }`)
    await Effect.runPromise(outbox.append({
      id: crypto.randomUUID(),
      project_id: projectA,
      type: "upstream.payload",
      payload: { phone_number_ids: [PNID], body_base64: raw.toString("base64") },
      created_at: new Date().toISOString()
    }))
    const [request] = await arrived(1)
    assert.isTrue(request!.raw.equals(raw))
    assert.isTrue(verifyWebhookSignature(request!.raw, request!.headers["x-webhook-signature"] as string, SECRET))
    // The network's own scheme too, keyed with the webhook's secret: what a Cloud API SDK's receiver checks.
    assert.strictEqual(request!.headers["x-hub-signature-256"], `sha256=${createHmac("sha256", SECRET).update(raw).digest("hex")}`)
    assert.isUndefined(request!.headers["x-webhook-event"])
    // Parley's internal tracing stays inside Parley.
    for (const name of ["traceparent", "tracestate", "b3", "x-b3-traceid"]) assert.isUndefined(request!.headers[name], name)
    await host.request("DELETE", `${number}/${upstream.id}`)
  })

  it("lists deliveries with the log's filters and refuses bad ones", async () => {
    const all = await host.request("GET", "/platform/v1/webhook_deliveries?period=24h&limit=100")
    assert.strictEqual(all.status, 200, all.text)
    assert.isAbove(all.body.data.length, 3)
    const failed = await host.request("GET", "/platform/v1/webhook_deliveries?status=failed&limit=100")
    assert.isTrue(failed.body.data.every((d: any) => d.status === "failed"))
    const byEvent = await host.request("GET", "/platform/v1/webhook_deliveries?event=workflow.execution.failed")
    assert.isTrue(byEvent.body.data.length >= 1 && byEvent.body.data.every((d: any) => d.event === "workflow.execution.failed"))
    const paged = await host.request("GET", "/platform/v1/webhook_deliveries?per_page=2&page=1")
    assert.deepStrictEqual(Object.keys(paged.body), ["data", "meta"])
    const otherProject = await host.request("GET", "/platform/v1/webhook_deliveries", { key: host.otherKey })
    assert.deepStrictEqual(otherProject.body.data, [])
    const bad = await host.request("GET", "/platform/v1/webhook_deliveries?period=1y")
    assert.strictEqual(bad.status, 422)
    assert.match(bad.body.error, /^period: /)
    await refused("GET", "/platform/v1/webhook_deliveries?limit=101", undefined, 422, {
      error: "limit must be between 1 and 100",
      details: [{ path: "limit", message: "out of range" }]
    })
    await refused("POST", "/platform/v1/webhook_deliveries/nope/retry", undefined, 404, { error: "Webhook delivery not found" })
  })
})
