/** Project events and event definitions over real HTTP on memory ports: status codes and exact wire shapes. */
import { assert, describe, it } from "@effect/vitest"
import { EventDefinitionsRepo, EventPlans, Ids, Projects } from "@parley/core"
import { layerMemoryJobQueue, layerMemoryStorage } from "@parley/core/testing"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import { afterAll, beforeAll } from "vitest"
import { startHost, type TestHost } from "./support.ts"

let host: TestHost
let plans: EventPlans["Service"]
let definitionsRepo: EventDefinitionsRepo["Service"]
let projectA: string
let projectB: string
let close: () => Promise<void>

beforeAll(async () => {
  const scope = Effect.runSync(Scope.make())
  await Effect.runPromise(Effect.gen(function*() {
    // The ports are built here once, so the test reaches the very store the host uses (to set plans).
    const ports = yield* Layer.build(Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layer))
    host = yield* startHost(Layer.succeedContext(ports))
    const services = yield* Layer.build(
      EventPlans.layer.pipe(Layer.provideMerge(Projects.layer), Layer.provide(Layer.succeedContext(ports)))
    )
    plans = Context.get(services, EventPlans)
    definitionsRepo = Context.get(ports, EventDefinitionsRepo)
    const projects = Context.get(services, Projects)
    projectA = (yield* projects.authenticate(host.key)).project.id
    projectB = (yield* projects.authenticate(host.otherKey)).project.id
  }).pipe(Effect.provideService(Scope.Scope, scope)))
  close = () => Effect.runPromise(Scope.close(scope, Exit.void))
})
afterAll(() => close())

const EVENT_KEYS = ["conversation_id", "created_at", "id", "name", "occurred_at", "properties"]
const DEFINITION_KEYS = [
  "archived_at",
  "created_at",
  "description",
  "id",
  "last_seen_at",
  "name",
  "property_schema",
  "source",
  "updated_at"
]
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

const emit = async (body: unknown, key?: string) => {
  const res = await host.request("POST", "/platform/v1/events", { body, ...(key !== undefined ? { key } : {}) })
  assert.strictEqual(res.status, 201, res.text)
  return res.body.data
}

const refused = async (method: string, path: string, body: unknown, status: number, expected: unknown, key?: string) => {
  const res = await host.request(method, path, { body, ...(key !== undefined ? { key } : {}) })
  assert.strictEqual(res.status, status, res.text)
  assert.deepStrictEqual(res.body, expected)
}

const definitions = async (query = "") => {
  const res = await host.request("GET", `/platform/v1/event-definitions${query}`)
  assert.strictEqual(res.status, 200, res.text)
  assert.deepStrictEqual(Object.keys(res.body), ["data"])
  return res.body.data as Array<any>
}

const definitionNamed = async (name: string) => (await definitions("?include_archived=true")).find((d) => d.name === name)

const eventually = async (what: string, check: () => Promise<boolean>) => {
  const deadline = Date.now() + 10_000
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`still waiting for: ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

const setPlan = (projectId: string, changes: Parameters<EventPlans["Service"]["set"]>[1]) =>
  Effect.runPromise(plans.set(projectId, changes))

describe("POST /events", () => {
  it("records an event: 201 with the event, occurred_at defaulting to now", async () => {
    const before = Date.now()
    const res = await host.request("POST", "/platform/v1/events", {
      body: { name: "order.paid", properties: { total: 12.5, currency: "EUR", gift: false, note: null } }
    })
    assert.strictEqual(res.status, 201, res.text)
    assert.deepStrictEqual(Object.keys(res.body), ["data"])
    const event = res.body.data
    assert.deepStrictEqual(Object.keys(event).sort(), EVENT_KEYS)
    assert.match(event.id, UUID)
    assert.strictEqual(event.name, "order.paid")
    assert.strictEqual(event.conversation_id, null)
    assert.deepStrictEqual(event.properties, { total: 12.5, currency: "EUR", gift: false, note: null })
    assert.strictEqual(event.occurred_at, event.created_at)
    assert.isAtLeast(Date.parse(event.occurred_at), before)
    assert.isAtMost(Date.parse(event.occurred_at), Date.now())
  })

  it("keeps a given occurred_at (any offset, answered in UTC) and answers empty properties as {}", async () => {
    const event = await emit({ name: "shipment.sent", occurred_at: "2026-01-02T03:04:05.678+02:00" , properties: null })
    assert.strictEqual(event.occurred_at, "2026-01-02T01:04:05.678Z")
    assert.deepStrictEqual(event.properties, {})
    const bare = await emit({ name: "shipment.sent" })
    assert.deepStrictEqual(bare.properties, {})
  })

  it("refuses every rule break with 422 and the canonical message", async () => {
    const now = Date.now()
    const cases: Array<[unknown, string]> = [
      [{ name: "Order.Paid" }, "name must be lowercase, at most 128 characters"],
      [{ name: "x".repeat(129) }, "name must be lowercase, at most 128 characters"],
      [{ name: "" }, "name must be lowercase, at most 128 characters"],
      [{ name: "e", properties: Object.fromEntries(Array.from({ length: 26 }, (_, i) => [`k${i}`, i])) }, "properties may contain at most 25 keys"],
      [{ name: "e", properties: { ["k".repeat(65)]: 1 } }, `property key ${"k".repeat(65)} is longer than 64 characters`],
      [{ name: "e", properties: { big: "é".repeat(513) } }, "property big exceeds 1 KB"],
      [{ name: "e", properties: Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`p${i}`, "x".repeat(1000)])) }, "properties exceed 8 KB"],
      [{ name: "e", properties: { address: { city: "Lyon" } } }, "property address must be a string, number, boolean or null"],
      [{ name: "e", properties: { tags: ["a"] } }, "property tags must be a string, number, boolean or null"],
      [{ name: "e", occurred_at: new Date(now + 6 * 60_000).toISOString() }, "occurred_at cannot be more than 5 minutes in the future"],
      [{ name: "e", occurred_at: new Date(now - 366 * 86_400_000).toISOString() }, "occurred_at is older than the event retention window"],
      [{ name: "e", occurred_at: "last tuesday" }, "occurred_at must be an ISO 8601 date-time"],
      [{ name: "e", conversation_id: "0f8fad5b-d9cb-469f-a165-70867728950e" }, "Conversation not found"]
    ]
    for (const [body, error] of cases) await refused("POST", "/platform/v1/events", body, 422, { error })
    // Nothing was recorded or defined by the refusals.
    assert.isUndefined(await definitionNamed("e"))
  })

  it("accepts the limits themselves", async () => {
    const event = await emit({
      name: "x".repeat(128),
      occurred_at: new Date(Date.now() + 4 * 60_000).toISOString(),
      properties: {
        ...Object.fromEntries(Array.from({ length: 24 }, (_, i) => [`k${i}`, i])),
        ["k".repeat(64)]: "é".repeat(512)
      }
    })
    assert.strictEqual(Object.keys(event.properties).length, 25)
  })

  it("answers decode failures: 400 for a body that is not JSON, 422 naming a field of the wrong type", async () => {
    const bad = await host.request("POST", "/platform/v1/events", { rawBody: "{nope" })
    assert.strictEqual(bad.status, 400)
    const missing = await host.request("POST", "/platform/v1/events", { body: { properties: {} } })
    assert.strictEqual(missing.status, 422)
    assert.strictEqual(missing.body.error, "name: Missing key")
    const wrong = await host.request("POST", "/platform/v1/events", { body: { name: 42 } })
    assert.strictEqual(wrong.status, 422)
    assert.match(wrong.body.error, /^name: /)
  })

  it("answers 401 without a key", async () => {
    const res = await host.request("POST", "/platform/v1/events", { body: { name: "x" }, key: null })
    assert.strictEqual(res.status, 401)
    assert.deepStrictEqual(res.body, { error: "Invalid API key" })
  })
})

describe("plans (402)", () => {
  it("refuses emission and definition writes when events are not on the plan; reads still work", async () => {
    await setPlan(projectB, { events_enabled: false })
    try {
      const planRequired = { error: "Project events are not included in this project's plan", code: "plan_required" }
      await refused("POST", "/platform/v1/events", { name: "b.event" }, 402, planRequired, host.otherKey)
      await refused("POST", "/platform/v1/event-definitions", { name: "b.event" }, 402, planRequired, host.otherKey)
      await refused("PATCH", "/platform/v1/event-definitions/anything", { description: "x" }, 402, planRequired, host.otherKey)
      const list = await host.request("GET", "/platform/v1/events", { key: host.otherKey })
      assert.strictEqual(list.status, 200)
      const defs = await host.request("GET", "/platform/v1/event-definitions", { key: host.otherKey })
      assert.strictEqual(defs.status, 200)
    } finally {
      await setPlan(projectB, { events_enabled: true })
    }
  })

  it("refuses emission past the monthly allowance without metered overage, and not definition writes", async () => {
    await setPlan(projectB, { monthly_allowance: 0 })
    try {
      const used = (await Effect.runPromise(plans.get(projectB))).used_this_period
      await setPlan(projectB, { monthly_allowance: used + 2 })
      await emit({ name: "b.metered" }, host.otherKey)
      await emit({ name: "b.metered" }, host.otherKey)
      await refused("POST", "/platform/v1/events", { name: "b.metered" }, 402, {
        error: "Monthly project event allowance exceeded",
        code: "allowance_exceeded"
      }, host.otherKey)
      assert.strictEqual((await Effect.runPromise(plans.get(projectB))).used_this_period, used + 2, "refusals do not count")
      const def = await host.request("POST", "/platform/v1/event-definitions", { body: { name: "b.metered", description: "still editable" }, key: host.otherKey })
      assert.strictEqual(def.status, 200, def.text)
      // Project A is untouched by B's allowance.
      await emit({ name: "a.unaffected" })
      await setPlan(projectB, { metered_overage: true })
      await emit({ name: "b.metered" }, host.otherKey)
      assert.strictEqual((await Effect.runPromise(plans.get(projectB))).used_this_period, used + 3, "overage is counted")
    } finally {
      await setPlan(projectB, { monthly_allowance: 100_000, metered_overage: false })
    }
  })
})

describe("GET /events", () => {
  const seed = async () => {
    const tag = `list.${crypto.randomUUID().slice(0, 8)}`
    const base = Date.now() - 10 * 60_000
    const at = (s: number) => new Date(base + s * 1000).toISOString()
    const e1 = await emit({ name: tag, occurred_at: at(1), properties: { n: 1 } })
    const e2 = await emit({ name: tag, occurred_at: at(2), properties: { n: 2 } })
    const other = await emit({ name: `${tag}.other`, occurred_at: at(3) })
    // Emitted last but occurred earliest: lists go by occurred_at, not by emission.
    const e0 = await emit({ name: tag, occurred_at: at(0), properties: { n: 0 } })
    const e4 = await emit({ name: tag, occurred_at: at(4), properties: { n: 4 } })
    return { tag, at, e0, e1, e2, e4, other }
  }
  const ids = (items: Array<any>) => items.map((e) => e.id)

  it("answers in page mode by default: newest first by occurred_at, meta and X-Total headers", async () => {
    const { e0, e1, e2, e4, tag } = await seed()
    const res = await host.request("GET", `/platform/v1/events?name=${tag}&per_page=3`)
    assert.strictEqual(res.status, 200, res.text)
    assert.deepStrictEqual(Object.keys(res.body).sort(), ["data", "meta"])
    assert.deepStrictEqual(ids(res.body.data), ids([e4, e2, e1]))
    assert.deepStrictEqual(Object.keys(res.body.data[0]).sort(), EVENT_KEYS)
    assert.deepStrictEqual(res.body.meta, { page: 1, per_page: 3, total_pages: 2, total_count: 4 })
    assert.strictEqual(res.headers.get("x-total"), "4")
    assert.strictEqual(res.headers.get("x-total-pages"), "2")
    assert.strictEqual(res.headers.get("x-per-page"), "3")
    assert.strictEqual(res.headers.get("x-page"), "1")
    assert.match(res.headers.get("link")!, /rel="next"/)
    const second = await host.request("GET", `/platform/v1/events?name=${tag}&per_page=3&page=2`)
    assert.deepStrictEqual(ids(second.body.data), ids([e0]))
    const bare = await host.request("GET", "/platform/v1/events")
    assert.deepStrictEqual(Object.keys(bare.body).sort(), ["data", "meta"])
    assert.deepStrictEqual(bare.body.meta.page, 1)
    assert.deepStrictEqual(bare.body.meta.per_page, 20)
  })

  it("answers in cursor mode when limit is given, with next/previous links keeping the filters", async () => {
    const { e0, e1, e2, e4, tag } = await seed()
    const first = await host.request("GET", `/platform/v1/events?name=${tag}&limit=2`)
    assert.strictEqual(first.status, 200, first.text)
    assert.deepStrictEqual(Object.keys(first.body).sort(), ["data", "paging"])
    assert.deepStrictEqual(ids(first.body.data), ids([e4, e2]))
    assert.strictEqual(first.body.paging.previous, null)
    assert.isString(first.body.paging.cursors.before)
    assert.isString(first.body.paging.cursors.after)
    const next = new URL(first.body.paging.next)
    assert.strictEqual(next.searchParams.get("name"), tag)
    assert.strictEqual(next.searchParams.get("limit"), "2")
    const second = await host.request("GET", `/platform/v1/events${next.search}`)
    assert.deepStrictEqual(ids(second.body.data), ids([e1, e0]))
    assert.strictEqual(second.body.paging.next, null)
    const back = await host.request("GET", `/platform/v1/events${new URL(second.body.paging.previous).search}`)
    assert.deepStrictEqual(ids(back.body.data), ids([e4, e2]))
    // `after` alone also selects cursor mode (limit 20).
    const after = await host.request("GET", `/platform/v1/events?name=${tag}&after=${encodeURIComponent(first.body.paging.cursors.after)}`)
    assert.deepStrictEqual(ids(after.body.data), ids([e1, e0]))
  })

  it("filters by exact name, conversation and inclusive occurrence bounds", async () => {
    const { at, e1, e2, other, tag } = await seed()
    const list = async (query: string) => {
      const res = await host.request("GET", `/platform/v1/events?${query}&limit=100`)
      assert.strictEqual(res.status, 200, res.text)
      return ids(res.body.data)
    }
    assert.deepStrictEqual(await list(`name=${tag}.other`), ids([other]))
    assert.deepStrictEqual(await list(`name=${tag.slice(0, -1)}`), [])
    assert.deepStrictEqual(
      await list(`name=${tag}&occurred_after=${encodeURIComponent(at(1))}&occurred_before=${encodeURIComponent(at(2))}`),
      ids([e2, e1])
    )
    assert.deepStrictEqual(await list(`conversation_id=0f8fad5b-d9cb-469f-a165-70867728950e`), [])
    const bad = await host.request("GET", "/platform/v1/events?occurred_after=soon")
    assert.strictEqual(bad.status, 422)
    assert.strictEqual(bad.body.error, "occurred_after must be an ISO 8601 date-time")
  })

  it("enforces paging bounds, refuses undecodable cursors, and keeps projects apart", async () => {
    const { tag } = await seed()
    for (const query of ["limit=0", "limit=101", "per_page=0", "page=0"]) {
      const res = await host.request("GET", `/platform/v1/events?${query}`)
      assert.strictEqual(res.status, 422, query)
    }
    const cursor = await host.request("GET", "/platform/v1/events?after=not-a-cursor")
    assert.strictEqual(cursor.status, 400)
    assert.deepStrictEqual(cursor.body, { error: "Invalid pagination cursor", code: "invalid_cursor" })
    const other = await host.request("GET", `/platform/v1/events?name=${tag}`, { key: host.otherKey })
    assert.deepStrictEqual(other.body.data, [])
  })
})

describe("event definitions", () => {
  it("auto-creates a definition on first emission and learns new keys, keeping known types", async () => {
    const first = await emit({ name: "auto.learned", properties: { amount: 3, label: "x", empty: null } })
    const created = await definitionNamed("auto.learned")
    assert.deepStrictEqual(Object.keys(created).sort(), DEFINITION_KEYS)
    assert.strictEqual(created.source, "auto")
    assert.strictEqual(created.description, null)
    assert.strictEqual(created.archived_at, null)
    assert.strictEqual(created.last_seen_at, first.created_at)
    assert.deepStrictEqual(created.property_schema, { amount: { type: "number" }, label: { type: "string" } })
    const second = await emit({ name: "auto.learned", properties: { amount: "three", flag: true, empty: "now typed" } })
    const learned = await definitionNamed("auto.learned")
    assert.strictEqual(learned.id, created.id)
    assert.strictEqual(learned.last_seen_at, second.created_at)
    assert.deepStrictEqual(learned.property_schema, {
      amount: { type: "number" },
      label: { type: "string" },
      flag: { type: "boolean" },
      empty: { type: "string" }
    })
  })

  it("creates (201), updates by name (200), archives, hides, restores by POST, and lists by name", async () => {
    const created = await host.request("POST", "/platform/v1/event-definitions", {
      body: { name: "lifecycle.b", description: "Second", property_schema: { total: { type: "number", description: "cents" } } }
    })
    assert.strictEqual(created.status, 201, created.text)
    const def = created.body.data
    assert.deepStrictEqual(Object.keys(def).sort(), DEFINITION_KEYS)
    assert.deepStrictEqual(
      [def.name, def.description, def.source, def.archived_at, def.last_seen_at],
      ["lifecycle.b", "Second", "manual", null, null]
    )
    assert.deepStrictEqual(def.property_schema, { total: { type: "number", description: "cents" } })
    assert.match(def.id, UUID)
    const a = (await host.request("POST", "/platform/v1/event-definitions", { body: { name: "lifecycle.a" } })).body.data

    const updated = await host.request("POST", "/platform/v1/event-definitions", { body: { name: "lifecycle.b", description: "Changed" } })
    assert.strictEqual(updated.status, 200, updated.text)
    assert.strictEqual(updated.body.data.id, def.id)
    assert.strictEqual(updated.body.data.description, "Changed")
    assert.deepStrictEqual(updated.body.data.property_schema, def.property_schema, "omitted fields keep their value")

    const archived = await host.request("PATCH", `/platform/v1/event-definitions/${def.id}`, { body: { archived: true } })
    assert.strictEqual(archived.status, 200, archived.text)
    assert.isString(archived.body.data.archived_at)
    const active = (await definitions()).map((d) => d.name).filter((n) => n.startsWith("lifecycle."))
    assert.deepStrictEqual(active, ["lifecycle.a"])
    const all = (await definitions("?include_archived=true")).map((d) => d.name).filter((n) => n.startsWith("lifecycle."))
    assert.deepStrictEqual(all, ["lifecycle.a", "lifecycle.b"])
    const got = await host.request("GET", `/platform/v1/event-definitions/${def.id}`)
    assert.strictEqual(got.status, 200)
    assert.strictEqual(got.body.data.archived_at, archived.body.data.archived_at)

    // Archived: emitting still records, and last_seen_at moves.
    const event = await emit({ name: "lifecycle.b" })
    assert.strictEqual((await definitionNamed("lifecycle.b")).last_seen_at, event.created_at)

    const restored = await host.request("POST", "/platform/v1/event-definitions", { body: { name: "lifecycle.b" } })
    assert.strictEqual(restored.status, 200)
    assert.strictEqual(restored.body.data.archived_at, null)
    assert.strictEqual(restored.body.data.description, "Changed")
    const names = (await definitions()).map((d) => d.name)
    assert.deepStrictEqual(names.filter((n) => n.startsWith("lifecycle.")), ["lifecycle.a", "lifecycle.b"])
    assert.deepStrictEqual(names, [...names].sort(), "ordered by name")

    const unarchive = await host.request("PATCH", `/platform/v1/event-definitions/${a.id}`, { body: { archived: true } })
    assert.strictEqual(unarchive.status, 200)
    const back = await host.request("PATCH", `/platform/v1/event-definitions/${a.id}`, { body: { archived: false, description: null } })
    assert.strictEqual(back.body.data.archived_at, null)
  })

  it("renames only while no event has the name, and refuses a taken or invalid name", async () => {
    const def = (await host.request("POST", "/platform/v1/event-definitions", { body: { name: "rename.before" } })).body.data
    await host.request("POST", "/platform/v1/event-definitions", { body: { name: "rename.taken" } })
    const renamed = await host.request("PATCH", `/platform/v1/event-definitions/${def.id}`, { body: { name: "rename.after" } })
    assert.strictEqual(renamed.status, 200, renamed.text)
    assert.strictEqual(renamed.body.data.name, "rename.after")
    await refused("PATCH", `/platform/v1/event-definitions/${def.id}`, { name: "rename.taken" }, 422, {
      error: "An event definition named rename.taken already exists"
    })
    await refused("PATCH", `/platform/v1/event-definitions/${def.id}`, { name: "Rename.Upper" }, 422, {
      error: "name must be lowercase, at most 128 characters"
    })
    await emit({ name: "rename.after" })
    await refused("PATCH", `/platform/v1/event-definitions/${def.id}`, { name: "rename.later" }, 422, {
      error: "name cannot change once events with it have been recorded"
    })
    // The same name is no change.
    const same = await host.request("PATCH", `/platform/v1/event-definitions/${def.id}`, { body: { name: "rename.after", description: "ok" } })
    assert.strictEqual(same.status, 200, same.text)
  })

  it("validates definition bodies", async () => {
    await refused("POST", "/platform/v1/event-definitions", { name: "Bad" }, 422, { error: "name must be lowercase, at most 128 characters" })
    await refused("POST", "/platform/v1/event-definitions", { name: "ok.desc", description: "d".repeat(1001) }, 422, {
      error: "description must be at most 1000 characters"
    })
    await refused("POST", "/platform/v1/event-definitions", { name: "ok.key", property_schema: { ["k".repeat(65)]: { type: "string" } } }, 422, {
      error: `property key ${"k".repeat(65)} is longer than 64 characters`
    })
    const badType = await host.request("POST", "/platform/v1/event-definitions", { body: { name: "ok.type", property_schema: { k: { type: "date" } } } })
    assert.strictEqual(badType.status, 422)
    assert.match(badType.body.error, /^property_schema\.k\.type: /)
    const badFlag = await host.request("GET", "/platform/v1/event-definitions?include_archived=yes")
    assert.strictEqual(badFlag.status, 422)
  })

  it("answers 404 for unknown ids and other projects' definitions", async () => {
    const mine = (await host.request("POST", "/platform/v1/event-definitions", { body: { name: "private.def" } })).body.data
    for (const [method, body] of [["GET", undefined], ["PATCH", { description: "x" }], ["DELETE", undefined]] as const) {
      await refused(method, `/platform/v1/event-definitions/${mine.id}`, body, 404, { error: "Event definition not found" }, host.otherKey)
      await refused(method, "/platform/v1/event-definitions/00000000-0000-4000-8000-000000000000", body, 404, {
        error: "Event definition not found"
      })
    }
  })

  it("refuses a name pending deletion on emission and on POST, and hides the definition", async () => {
    await emit({ name: "pending.event" })
    const def = await definitionNamed("pending.event")
    // Marked as DELETE marks it, without its job: the state while the removal has not run yet.
    const stored = await Effect.runPromise(definitionsRepo.findById(projectA, def.id))
    assert.isTrue(stored._tag === "Some")
    if (stored._tag === "Some") {
      await Effect.runPromise(definitionsRepo.update({ ...stored.value, deletion_requested_at: new Date().toISOString() }))
    }
    const pending = { error: "Event name pending.event is pending deletion" }
    await refused("POST", "/platform/v1/events", { name: "pending.event" }, 422, pending)
    await refused("POST", "/platform/v1/event-definitions", { name: "pending.event" }, 422, pending)
    await refused("GET", `/platform/v1/event-definitions/${def.id}`, undefined, 404, { error: "Event definition not found" })
    await refused("PATCH", `/platform/v1/event-definitions/${def.id}`, { archived: true }, 404, { error: "Event definition not found" })
    assert.isUndefined(await definitionNamed("pending.event"))
    const events = await host.request("GET", "/platform/v1/events?name=pending.event")
    assert.strictEqual(events.body.meta.total_count, 1, "events stay until the removal runs")
  })

  it("deletes asynchronously: 202, pending name refused, then the definition and all its events are gone", async () => {
    for (let i = 0; i < 3; i++) await emit({ name: "doomed.event", properties: { i } })
    await emit({ name: "doomed.survivor" })
    const def = await definitionNamed("doomed.event")
    const res = await host.request("DELETE", `/platform/v1/event-definitions/${def.id}`)
    assert.strictEqual(res.status, 202, res.text)
    assert.deepStrictEqual(res.body, { data: { id: def.id, status: "deletion_pending" } })

    await eventually("the events to go", async () => {
      const list = await host.request("GET", "/platform/v1/events?name=doomed.event")
      return list.body.meta.total_count === 0
    })
    await refused("GET", `/platform/v1/event-definitions/${def.id}`, undefined, 404, { error: "Event definition not found" })
    await refused("DELETE", `/platform/v1/event-definitions/${def.id}`, undefined, 404, { error: "Event definition not found" })
    assert.isUndefined(await definitionNamed("doomed.event"))
    const survivors = await host.request("GET", "/platform/v1/events?name=doomed.survivor")
    assert.strictEqual(survivors.body.meta.total_count, 1)
    // Once removed, the name is free: emitting starts a new auto definition.
    await emit({ name: "doomed.event" })
    const fresh = await definitionNamed("doomed.event")
    assert.notStrictEqual(fresh.id, def.id)
    assert.strictEqual(fresh.source, "auto")
  })
})

describe("contract", () => {
  it("documents the events endpoints in /openapi.json, with both answers of POST /event-definitions", async () => {
    const res = await host.request("GET", "/openapi.json", { key: null })
    assert.strictEqual(res.status, 200)
    const paths = res.body.paths
    assert.containsAllKeys(paths["/platform/v1/events"], ["get", "post"])
    assert.containsAllKeys(paths["/platform/v1/event-definitions"], ["get", "post"])
    assert.containsAllKeys(paths["/platform/v1/event-definitions/{id}"], ["get", "patch", "delete"])
    assert.containsAllKeys(paths["/platform/v1/event-definitions"].post.responses, ["200", "201", "402", "422"])
    assert.containsAllKeys(paths["/platform/v1/event-definitions/{id}"].delete.responses, ["202", "404"])
  })
})
