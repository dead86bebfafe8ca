/** Workflows, triggers and flows over real HTTP on memory ports: status codes and exact wire shapes. */
import { Ids } from "@parley/core"
import { layerMemoryJobQueue, layerMemoryStorage } from "@parley/core/testing"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { beforeAll, afterAll } from "vitest"
import { startHost, type TestHost } from "./support.ts"

let host: TestHost
let close: () => Promise<void>

beforeAll(async () => {
  const { Scope, Exit } = await import("effect")
  const scope = Effect.runSync(Scope.make())
  host = await Effect.runPromise(
    startHost(Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layer)).pipe(Effect.provideService(Scope.Scope, scope))
  )
  close = () => Effect.runPromise(Scope.close(scope, Exit.void))
})
afterAll(() => close())

const WORKFLOW_KEYS = [
  "agent_default_tools_version",
  "created_at",
  "description",
  "execution_count",
  "id",
  "inbound_message_read_mode",
  "last_executed_at",
  "lock_version",
  "message_debounce_seconds",
  "name",
  "project_id",
  "slug",
  "status",
  "updated_at"
]

const create = async (workflow: Record<string, unknown>) => {
  const res = await host.request("POST", "/platform/v1/workflows", { body: { workflow } })
  assert.strictEqual(res.status, 201, res.text)
  return res.body.data
}

const sendTextGraph = {
  nodes: [
    { id: "start", position: { x: 0, y: 0 }, data: { node_type: "start", config: {} } },
    { id: "hello", position: { x: 100, y: 0 }, data: { node_type: "send_text", config: { message: "Hi {{vars.name}}" } } }
  ],
  edges: [{ source: "start", target: "hello" }]
}

describe("authentication", () => {
  it("answers 401 with an error body without a key, with an unknown key, and with two different keys", async () => {
    for (const options of [{ key: null }, { key: "pk_nope_nope_nope_nope" }]) {
      const res = await host.request("GET", "/platform/v1/workflows", options)
      assert.strictEqual(res.status, 401)
      assert.deepStrictEqual(res.body, { error: "Invalid API key" })
    }
    const two = await host.request("GET", "/platform/v1/workflows", { headers: { authorization: `Bearer ${host.otherKey}` } })
    assert.strictEqual(two.status, 401)
    assert.deepStrictEqual(two.body, { error: "Invalid API key" })
  })

  it("accepts Authorization: Bearer", async () => {
    const res = await host.request("GET", "/platform/v1/workflows", { key: null, headers: { authorization: `Bearer ${host.key}` } })
    assert.strictEqual(res.status, 200)
  })
})

describe("errors", () => {
  it("unknown routes answer 404 with an error body", async () => {
    const res = await host.request("GET", "/platform/v1/nope")
    assert.strictEqual(res.status, 404)
    assert.deepStrictEqual(res.body, { error: "Not found" })
  })

  it("unparsable JSON and a missing envelope answer 400", async () => {
    const bad = await host.request("POST", "/platform/v1/workflows", { rawBody: "{not json" })
    assert.strictEqual(bad.status, 400)
    assert.isString(bad.body.error)
    const missing = await host.request("POST", "/platform/v1/workflows", { body: { name: "x" } })
    assert.strictEqual(missing.status, 400)
    assert.strictEqual(missing.body.error, "Missing workflow envelope in the request body")
  })

  it("a field of the wrong type answers 422 naming it", async () => {
    const res = await host.request("POST", "/platform/v1/workflows", { body: { workflow: { name: 42 } } })
    assert.strictEqual(res.status, 422)
    assert.match(res.body.error, /^workflow\.name: /)
    assert.strictEqual(res.body.details[0].path, "workflow.name")
  })
})

describe("workflows", () => {
  it("creates with defaults, a generated slug and a lone start node", async () => {
    const w = await create({ name: "Órder Status Bot!" })
    assert.deepStrictEqual(Object.keys(w).sort(), WORKFLOW_KEYS)
    assert.strictEqual(w.slug, "order-status-bot")
    assert.strictEqual(w.status, "draft")
    assert.strictEqual(w.lock_version, 0)
    assert.strictEqual(w.inbound_message_read_mode, "read_with_typing")
    assert.strictEqual(w.agent_default_tools_version, 2)
    assert.strictEqual(w.execution_count, 0)
    assert.strictEqual(w.last_executed_at, null)
    const def = await host.request("GET", `/platform/v1/workflows/${w.id}/definition`)
    assert.strictEqual(def.status, 200)
    assert.deepStrictEqual(def.body.data.definition, {
      nodes: [{ id: "start", type: "flow-node", position: { x: 0, y: 0 }, data: { node_type: "start", config: {}, display_name: "Start" } }],
      edges: []
    })
  })

  it("appends -2 on slug collision, refuses a taken name (case-insensitive) and a bad or taken slug", async () => {
    const a = await create({ name: "Collide Me" })
    const b = await create({ name: "collide me!" })
    assert.strictEqual(a.slug, "collide-me")
    assert.strictEqual(b.slug, "collide-me-2")
    const dup = await host.request("POST", "/platform/v1/workflows", { body: { workflow: { name: "COLLIDE ME" } } })
    assert.strictEqual(dup.status, 422)
    assert.strictEqual(dup.body.error, "Name has already been taken")
    const badSlug = await host.request("POST", "/platform/v1/workflows", { body: { workflow: { name: "Bad slug", slug: "Not_OK" } } })
    assert.strictEqual(badSlug.status, 422)
    const takenSlug = await host.request("POST", "/platform/v1/workflows", { body: { workflow: { name: "Other", slug: "collide-me" } } })
    assert.strictEqual(takenSlug.status, 422)
    assert.strictEqual(takenSlug.body.error, "Slug has already been taken")
  })

  it("updates partially, bumps lock_version, keeps the slug on rename, and answers 409 on a stale lock", async () => {
    const w = await create({ name: "Lock Me" })
    const ok = await host.request("PATCH", `/platform/v1/workflows/${w.id}`, { body: { workflow: { name: "Renamed", lock_version: 0 } } })
    assert.strictEqual(ok.status, 200)
    assert.strictEqual(ok.body.data.lock_version, 1)
    assert.strictEqual(ok.body.data.slug, "lock-me")
    assert.strictEqual(ok.body.data.name, "Renamed")
    const stale = await host.request("PATCH", `/platform/v1/workflows/${w.id}`, { body: { workflow: { description: "x", lock_version: 0 } } })
    assert.strictEqual(stale.status, 409)
    assert.deepStrictEqual(stale.body, { error: "lock_version is stale; reload and retry", code: "stale_lock_version" })
    const alias = await host.request("PATCH", `/platform/v1/workflows/${w.id}`, { body: { flow: { description: "via alias" } } })
    assert.strictEqual(alias.status, 200)
    assert.strictEqual(alias.body.data.description, "via alias")
    assert.strictEqual(alias.body.data.lock_version, 2)
  })

  it("replaces the definition only when present and validates it (422 with details)", async () => {
    const w = await create({ name: "Graph", definition: sendTextGraph })
    const def1 = (await host.request("GET", `/platform/v1/workflows/${w.id}/definition`)).body.data.definition
    assert.strictEqual(def1.nodes.length, 2)
    assert.strictEqual(def1.edges[0].label, "next")
    assert.strictEqual(def1.edges[0].type, "default")
    await host.request("PATCH", `/platform/v1/workflows/${w.id}`, { body: { workflow: { description: "no graph change" } } })
    const def2 = (await host.request("GET", `/platform/v1/workflows/${w.id}/definition`)).body.data.definition
    assert.deepStrictEqual(def2, def1)
    const bad = await host.request("PATCH", `/platform/v1/workflows/${w.id}`, {
      body: { workflow: { definition: { nodes: [{ id: "start", position: { x: 0, y: 0 }, data: { node_type: "start", config: { extra: 1 } } }], edges: [] } } }
    })
    assert.strictEqual(bad.status, 422)
    assert.isString(bad.body.error)
    assert.isArray(bad.body.details)
    assert.isString(bad.body.details[0].path)
    const carousel = await host.request("POST", "/platform/v1/workflows", {
      body: {
        workflow: {
          name: "Carousel",
          definition: {
            nodes: [
              { id: "start", position: { x: 0, y: 0 }, data: { node_type: "start", config: {} } },
              { id: "c", position: { x: 0, y: 0 }, data: { node_type: "send_interactive", config: { interactive_type: "carousel", body_text: "x" } } }
            ],
            edges: [{ source: "start", target: "c" }]
          }
        }
      }
    })
    assert.strictEqual(carousel.status, 422)
  })

  it("moves status draft → active → archived → draft and refuses archived → active and deleting an active workflow", async () => {
    const w = await create({ name: "Lifecycle", definition: sendTextGraph })
    const patch = (body: unknown) => host.request("PATCH", `/platform/v1/workflows/${w.id}`, { body: { workflow: body } })
    assert.strictEqual((await patch({ status: "active" })).body.data.status, "active")
    const del = await host.request("DELETE", `/platform/v1/workflows/${w.id}`)
    assert.strictEqual(del.status, 422)
    assert.strictEqual(del.body.error, "Archive or unpublish the workflow before deleting it")
    assert.strictEqual((await patch({ status: "archived" })).body.data.status, "archived")
    const refused = await patch({ status: "active" })
    assert.strictEqual(refused.status, 422)
    assert.strictEqual(refused.body.error, "Restore the workflow to draft first")
    assert.strictEqual((await patch({ status: "draft" })).body.data.status, "draft")
    const gone = await host.request("DELETE", `/platform/v1/workflows/${w.id}`)
    assert.strictEqual(gone.status, 204)
    assert.strictEqual(gone.text, "")
    assert.strictEqual((await host.request("GET", `/platform/v1/workflows/${w.id}`)).status, 404)
  })

  it("DELETE answers 422 naming an active workflow that calls it; a draft caller, a changed graph or an archive lets it go", async () => {
    const callee = await create({ name: "Called Child" })
    const callGraph = {
      nodes: [
        { id: "start", position: { x: 0, y: 0 }, data: { node_type: "start", config: {} } },
        { id: "call", position: { x: 100, y: 0 }, data: { node_type: "call", config: { workflow_id: callee.id } } }
      ],
      edges: [{ source: "start", target: "call" }]
    }
    const caller = await create({ name: "Calling Parent", definition: callGraph, status: "active" })
    const patch = (id: string, body: unknown) => host.request("PATCH", `/platform/v1/workflows/${id}`, { body: { workflow: body } })
    const del = () => host.request("DELETE", `/platform/v1/workflows/${callee.id}`)
    const refused = await del()
    assert.strictEqual(refused.status, 422)
    assert.deepStrictEqual(refused.body, { error: "Workflow is called by active workflow Calling Parent" })
    // A draft caller does not hold it; published again, it does.
    assert.strictEqual((await patch(caller.id, { status: "draft" })).status, 200)
    assert.strictEqual((await host.request("GET", `/platform/v1/workflows/${caller.id}`)).body.data.status, "draft")
    assert.strictEqual((await patch(caller.id, { status: "active" })).status, 200)
    assert.strictEqual((await del()).status, 422)
    // A graph that no longer calls it lets it go, as does archiving the caller.
    assert.strictEqual((await patch(caller.id, { definition: sendTextGraph })).status, 200)
    assert.strictEqual((await del()).status, 204)
    const other = await create({ name: "Called Other" })
    const again = await create({
      name: "Calling Again",
      status: "active",
      definition: { ...callGraph, nodes: [callGraph.nodes[0], { ...callGraph.nodes[1], data: { node_type: "call", config: { workflow_id: other.id } } }] }
    })
    assert.strictEqual((await host.request("DELETE", `/platform/v1/workflows/${other.id}`)).status, 422)
    assert.strictEqual((await patch(again.id, { status: "archived" })).status, 200)
    assert.strictEqual((await host.request("DELETE", `/platform/v1/workflows/${other.id}`)).status, 204)
  })

  it("hides archived workflows from the default list and filters by status, name and creation time", async () => {
    const w = await create({ name: "Filter Archived One" })
    await host.request("PATCH", `/platform/v1/workflows/${w.id}`, { body: { workflow: { status: "archived" } } })
    const all = await host.request("GET", "/platform/v1/workflows?name_contains=filter%20archived&limit=100")
    assert.strictEqual(all.status, 200)
    assert.strictEqual(all.body.data.length, 0)
    const archived = await host.request("GET", "/platform/v1/workflows?status=archived&name_contains=FILTER")
    assert.deepStrictEqual(archived.body.data.map((x: any) => x.id), [w.id])
    const future = await host.request("GET", "/platform/v1/workflows?created_after=2999-01-01T00:00:00Z")
    assert.strictEqual(future.body.data.length, 0)
    const badDate = await host.request("GET", "/platform/v1/workflows?created_after=yesterday")
    assert.strictEqual(badDate.status, 422)
  })

  it("pages with cursors (newest first, next/previous links) and with pages (meta and X-Total headers)", async () => {
    const ids: Array<string> = []
    for (let i = 0; i < 5; i++) ids.push((await create({ name: `Paging ${i}` })).id)
    const first = await host.request("GET", "/platform/v1/workflows?name_contains=paging&limit=2")
    assert.deepStrictEqual(first.body.data.map((x: any) => x.id), [ids[4], ids[3]])
    assert.deepStrictEqual(Object.keys(first.body).sort(), ["data", "paging"])
    assert.isString(first.body.paging.next)
    assert.strictEqual(first.body.paging.previous, null)
    const nextUrl = new URL(first.body.paging.next)
    assert.strictEqual(nextUrl.searchParams.get("name_contains"), "paging")
    const second = await host.request("GET", `/platform/v1/workflows${nextUrl.search}`)
    assert.deepStrictEqual(second.body.data.map((x: any) => x.id), [ids[2], ids[1]])
    assert.isString(second.body.paging.previous)
    const back = await host.request("GET", `/platform/v1/workflows${new URL(second.body.paging.previous).search}`)
    assert.deepStrictEqual(back.body.data.map((x: any) => x.id), [ids[4], ids[3]])
    const third = await host.request("GET", `/platform/v1/workflows${new URL(second.body.paging.next).search}`)
    assert.deepStrictEqual(third.body.data.map((x: any) => x.id), [ids[0]])
    assert.strictEqual(third.body.paging.next, null)

    const page = await host.request("GET", "/platform/v1/workflows?name_contains=paging&page=2&per_page=2")
    assert.deepStrictEqual(page.body.meta, { page: 2, per_page: 2, total_pages: 3, total_count: 5 })
    assert.deepStrictEqual(page.body.data.map((x: any) => x.id), [ids[2], ids[1]])
    assert.strictEqual(page.headers.get("x-total"), "5")
    assert.strictEqual(page.headers.get("x-total-pages"), "3")
    assert.strictEqual(page.headers.get("x-page"), "2")
    assert.strictEqual(page.headers.get("x-per-page"), "2")
    assert.match(page.headers.get("link")!, /rel="next"/)
  })

  it("enforces paging bounds and refuses undecodable cursors", async () => {
    for (const q of ["limit=0", "limit=101", "per_page=0", "per_page=101", "page=0"]) {
      const res = await host.request("GET", `/platform/v1/workflows?${q}`)
      assert.strictEqual(res.status, 422, q)
      assert.isString(res.body.error)
    }
    const res = await host.request("GET", "/platform/v1/workflows?after=%%%")
    assert.strictEqual(res.status, 400)
    assert.strictEqual(res.body.error, "Invalid pagination cursor")
  })

  it("keeps projects apart: another project's ids answer 404", async () => {
    const w = await create({ name: "Private to A" })
    const other = { key: host.otherKey }
    assert.strictEqual((await host.request("GET", `/platform/v1/workflows/${w.id}`, other)).status, 404)
    assert.strictEqual((await host.request("PATCH", `/platform/v1/workflows/${w.id}`, { ...other, body: { workflow: { name: "hijack" } } })).status, 404)
    assert.strictEqual((await host.request("DELETE", `/platform/v1/workflows/${w.id}`, other)).status, 404)
    assert.strictEqual((await host.request("GET", `/platform/v1/workflows/${w.id}/triggers`, other)).status, 404)
    const list = await host.request("GET", "/platform/v1/workflows?name_contains=private%20to%20a", other)
    assert.strictEqual(list.body.data.length, 0)
    assert.strictEqual((await host.request("GET", `/api/v1/flows/${w.id}`, other)).status, 404)
    // The same name is free in project B.
    const inB = await host.request("POST", "/platform/v1/workflows", { ...other, body: { workflow: { name: "Private to A" } } })
    assert.strictEqual(inB.status, 201)
  })
})

describe("triggers", () => {
  it("creates, lists, toggles and deletes triggers; one api_call per workflow", async () => {
    const w = await create({ name: "Triggered" })
    const base = `/platform/v1/workflows/${w.id}/triggers`
    const api = await host.request("POST", base, { body: { trigger: { trigger_type: "api_call" } } })
    assert.strictEqual(api.status, 201)
    assert.strictEqual(api.body.data.display_name, "API Call Trigger")
    assert.strictEqual(api.body.data.active, true)
    const again = await host.request("POST", base, { body: { trigger: { trigger_type: "api_call" } } })
    assert.strictEqual(again.status, 422)
    const ev = await host.request("POST", base, {
      body: { trigger: { trigger_type: "project_event", event_name: "order.paid", property_key: "amount", operator: "gte", property_value: 100 } }
    })
    assert.strictEqual(ev.status, 201)
    assert.strictEqual(ev.body.data.display_name, "Event: order.paid")
    const off = await host.request("PATCH", `/platform/v1/triggers/${ev.body.data.id}`, { body: { trigger: { active: false } } })
    assert.strictEqual(off.body.data.active, false)
    const list = await host.request("GET", base)
    assert.deepStrictEqual(list.body.data.map((t: any) => t.trigger_type), ["api_call", "project_event"])
    assert.strictEqual((await host.request("DELETE", `/platform/v1/triggers/${api.body.data.id}`)).status, 204)
    assert.strictEqual((await host.request("DELETE", `/platform/v1/triggers/${api.body.data.id}`)).status, 404)
  })

  it("validates project-event filters and msg_event names", async () => {
    const w = await create({ name: "Trigger Rules" })
    const base = `/platform/v1/workflows/${w.id}/triggers`
    const cases = [
      { trigger_type: "project_event", event_name: "Order.Paid" },
      { trigger_type: "project_event", event_name: "order.paid", property_key: "amount" },
      { trigger_type: "project_event", event_name: "order.paid", property_key: "amount", operator: "gt", property_value: "abc" },
      { trigger_type: "project_event", event_name: "order.paid", property_key: "amount", operator: "like", property_value: 1 },
      { trigger_type: "msg_event", event: "msg.message.delivered" },
      { trigger_type: "inbound_message" },
      { trigger_type: "inbound_message", phone_number_id: "999" },
      { trigger_type: "nonsense" }
    ]
    for (const trigger of cases) {
      const res = await host.request("POST", base, { body: { trigger } })
      assert.strictEqual(res.status, 422, JSON.stringify(trigger))
      assert.isString(res.body.error)
    }
  })

  it("PUT replaces the whole set atomically, keeps ids of equal items, and changes nothing on an invalid item", async () => {
    const w = await create({ name: "Replace Set" })
    const base = `/platform/v1/workflows/${w.id}/triggers`
    const first = await host.request("PUT", base, {
      body: { triggers: [{ trigger_type: "api_call" }, { trigger_type: "project_event", event_name: "a.b" }] }
    })
    assert.strictEqual(first.status, 200)
    assert.strictEqual(first.body.data.length, 2)
    const keptId = first.body.data[1].id
    const bad = await host.request("PUT", base, {
      body: { triggers: [{ trigger_type: "project_event", event_name: "a.b" }, { trigger_type: "msg_event", event: "nope" }] }
    })
    assert.strictEqual(bad.status, 422)
    assert.match(bad.body.error, /triggers\[1\]/)
    assert.strictEqual((await host.request("GET", base)).body.data.length, 2)
    const second = await host.request("PUT", base, { body: { triggers: [{ trigger_type: "project_event", event_name: "a.b" }] } })
    assert.deepStrictEqual(second.body.data.map((t: any) => t.id), [keptId])
    const cleared = await host.request("PUT", base, { body: { triggers: [] } })
    assert.deepStrictEqual(cleared.body.data, [])
  })
})

describe("trigger uniqueness across active workflows", () => {
  it("refuses a second active msg_event trigger for the same event, on create and on activation", async () => {
    const event = "msg.conversation.ended"
    const a = await create({ name: "Unique A", definition: sendTextGraph })
    const b = await create({ name: "Unique B", definition: sendTextGraph })
    const t = (id: string) => `/platform/v1/workflows/${id}/triggers`
    assert.strictEqual((await host.request("POST", t(a.id), { body: { trigger: { trigger_type: "msg_event", event } } })).status, 201)
    assert.strictEqual((await host.request("PATCH", `/platform/v1/workflows/${a.id}`, { body: { workflow: { status: "active" } } })).status, 200)
    // B is a draft: its trigger is kept (it never fires), so no conflict yet.
    const draftTrigger = await host.request("POST", t(b.id), { body: { trigger: { trigger_type: "msg_event", event } } })
    assert.strictEqual(draftTrigger.status, 201)
    const activate = await host.request("PATCH", `/platform/v1/workflows/${b.id}`, { body: { workflow: { status: "active" } } })
    assert.strictEqual(activate.status, 422)
    assert.include(activate.body.error, "Unique A")
    // Once A is unpublished, B may go live, and then A's trigger conflicts on A's activation.
    assert.strictEqual((await host.request("PATCH", `/platform/v1/workflows/${a.id}`, { body: { workflow: { status: "draft" } } })).status, 200)
    assert.strictEqual((await host.request("PATCH", `/platform/v1/workflows/${b.id}`, { body: { workflow: { status: "active" } } })).status, 200)
    const back = await host.request("PATCH", `/platform/v1/workflows/${a.id}`, { body: { workflow: { status: "active" } } })
    assert.strictEqual(back.status, 422)
    assert.include(back.body.error, "Unique B")
    // Creating a conflicting trigger on an active workflow is refused too.
    const c = await create({ name: "Unique C", definition: sendTextGraph, status: "active" })
    const conflict = await host.request("POST", t(c.id), { body: { trigger: { trigger_type: "msg_event", event } } })
    assert.strictEqual(conflict.status, 422)
    assert.include(conflict.body.error, "Unique B")
    // An inactive trigger does not count.
    const inactive = await host.request("POST", t(c.id), { body: { trigger: { trigger_type: "msg_event", event, active: false } } })
    assert.strictEqual(inactive.status, 201)
  })
})

describe("bad input", () => {
  it("never answers 500 or an empty body, whatever the body", async () => {
    const w = await create({ name: "Fuzz Target" })
    const bodies = ["null", "[]", "\"text\"", "42", "{}", "{\"workflow\":null}", "{\"workflow\":[]}", "{\"workflow\":{\"name\":null}}",
      "{\"workflow\":{\"name\":\"x\",\"definition\":\"nope\"}}", "{\"workflow\":{\"name\":\"x\",\"definition\":{\"nodes\":{}}}}",
      "{\"workflow\":{\"name\":\"x\",\"definition\":{\"nodes\":[null,1,\"a\",{}],\"edges\":[null]}}}",
      "{\"workflow\":{\"message_debounce_seconds\":1.5}}", "{\"trigger\":{\"trigger_type\":[]}}", "{\"triggers\":{}}", "{\"flow\":7}", "\u0000", "{\"a\":" ]
    const targets: Array<[string, string]> = [
      ["POST", "/platform/v1/workflows"],
      ["PATCH", `/platform/v1/workflows/${w.id}`],
      ["POST", `/platform/v1/workflows/${w.id}/triggers`],
      ["PUT", `/platform/v1/workflows/${w.id}/triggers`],
      ["PATCH", `/api/v1/flows/${w.id}`]
    ]
    for (const [method, path] of targets) {
      for (const rawBody of bodies) {
        const res = await host.request(method, path, { rawBody })
        assert.isBelow(res.status, 500, `${method} ${path} ${rawBody}: ${res.text}`)
        if (res.status >= 400) assert.isString(res.body?.error, `${method} ${path} ${rawBody}: ${res.text}`)
      }
    }
    for (const q of ["status=nope", "created_before=%ZZ", "limit=abc", "page=1e3", "before=", "after=W10="]) {
      const res = await host.request("GET", `/platform/v1/workflows?${q}`)
      assert.isBelow(res.status, 500, q)
    }
  })
})

describe("older surface: flows", () => {
  it("lists flows in page mode with q[status_eq], reads one, and updates through the flow envelope", async () => {
    const w = await create({ name: "Legacy Flow", description: "old" })
    const list = await host.request("GET", "/api/v1/flows?q[status_eq]=draft&per_page=100")
    assert.strictEqual(list.status, 200)
    assert.deepStrictEqual(Object.keys(list.body).sort(), ["data", "meta"])
    const flow = list.body.data.find((f: any) => f.id === w.id)
    assert.deepStrictEqual(Object.keys(flow).sort(), [
      "created_at",
      "created_by",
      "description",
      "execution_count",
      "id",
      "last_executed_at",
      "name",
      "project_id",
      "status",
      "updated_at"
    ])
    assert.deepStrictEqual(Object.keys(flow.created_by).sort(), ["id", "name"])
    const active = await host.request("GET", "/api/v1/flows?q[status_eq]=active&per_page=100")
    assert.isFalse(active.body.data.some((f: any) => f.id === w.id))
    const patched = await host.request("PATCH", `/api/v1/flows/${w.id}`, {
      body: { flow: { name: "Legacy Flow 2", description: "new", definition: sendTextGraph } }
    })
    assert.strictEqual(patched.status, 200)
    assert.strictEqual(patched.body.message, "Flow updated successfully")
    assert.strictEqual(patched.body.data.name, "Legacy Flow 2")
    const def = await host.request("GET", `/platform/v1/workflows/${w.id}/definition`)
    assert.strictEqual(def.body.data.definition.nodes.length, 2)
  })
})

describe("OpenAPI and docs", () => {
  it("serves an OpenAPI 3.1 document covering every endpoint and a docs page", async () => {
    const doc = await host.request("GET", "/openapi.json", { key: null })
    assert.strictEqual(doc.status, 200)
    assert.strictEqual(doc.body.openapi, "3.1.0")
    for (const path of ["/platform/v1/workflows", "/platform/v1/workflows/{id}", "/platform/v1/workflows/{id}/definition", "/platform/v1/workflows/{id}/triggers", "/platform/v1/triggers/{id}", "/api/v1/flows", "/api/v1/flows/{id}"]) {
      assert.property(doc.body.paths, path)
    }
    const docs = await host.request("GET", "/docs", { key: null })
    assert.strictEqual(docs.status, 200)
    assert.match(docs.text, /<html/i)
    // Scalar's script is inlined (the page renders on a closed network), loaded on the first request.
    assert.match(docs.text, /Scalar\.createApiReference/)
    assert.isAbove(docs.text.length, 1_000_000)
    assert.strictEqual((await host.request("GET", "/docs", { key: null })).text, docs.text)
  })
})
