/**
 * Project events over real HTTP on the production ports: PostgreSQL storage
 * and the pg-boss job queue. What only a real database can show: counting
 * the allowance under concurrent requests, one auto definition from
 * concurrent first emissions, deletion run by a pg-boss worker, and the
 * domain event committed with each event (seen through the relay: a
 * `project.event` webhook gets one delivery per recorded event).
 */
import { assert, describe, it } from "@effect/vitest"
import { EventPlans, Ids, Projects } from "@parley/core"
import { layerJobQueue, layerStorage } from "@parley/store-pg"
import { ConfigProvider, Context, Effect, Exit, Layer, Scope } from "effect"
import { afterAll, beforeAll } from "vitest"
import { layerTestDatabase } from "../../store-pg/test/pg.ts"
import { type Receiver, startReceiver } from "./receiver.ts"
import { startHost, type TestHost } from "./support.ts"

let host: TestHost
let plans: EventPlans["Service"]
let receiver: Receiver
let projectB: string
let close: () => Promise<void>

beforeAll(async () => {
  const scope = Effect.runSync(Scope.make())
  await Effect.runPromise(Effect.gen(function*() {
    const ports = yield* Layer.build(
      Layer.mergeAll(layerStorage, layerJobQueue({ pollingIntervalSeconds: 0.5 }), Ids.layer).pipe(
        Layer.provideMerge(layerTestDatabase)
      )
    )
    receiver = yield* startReceiver
    // Webhooks to the loopback receiver need private targets allowed.
    const environment = ConfigProvider.fromEnv({ env: { ...process.env, PARLEY_ALLOW_PRIVATE_WEBHOOK_URLS: "true" } })
    host = yield* startHost(Layer.succeedContext(Context.add(ports, ConfigProvider.ConfigProvider, environment)))
    const services = yield* Layer.build(
      EventPlans.layer.pipe(Layer.provideMerge(Projects.layer), Layer.provide(Layer.succeedContext(ports)))
    )
    plans = Context.get(services, EventPlans)
    projectB = (yield* Context.get(services, Projects).authenticate(host.otherKey)).project.id
  }).pipe(Effect.provideService(Scope.Scope, scope)))
  close = () => Effect.runPromise(Scope.close(scope, Exit.void))
}, 120_000)
afterAll(() => close())

const emit = (body: unknown, key?: string) =>
  host.request("POST", "/platform/v1/events", { body, ...(key !== undefined ? { key } : {}) })

const eventually = async (what: string, check: () => Promise<boolean>) => {
  const deadline = Date.now() + 20_000
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`still waiting for: ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

describe("project events (postgres)", () => {
  it("counts the allowance exactly under concurrent requests", async () => {
    await Effect.runPromise(plans.set(projectB, { monthly_allowance: 5 }))
    const subscribed = await host.request("POST", "/platform/v1/msg/webhooks", {
      body: { msg_webhook: { url: `${receiver.url}/events`, events: ["project.event"], secret_key: "s" } },
      key: host.otherKey
    })
    assert.strictEqual(subscribed.status, 201, subscribed.text)
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => emit({ name: `burst.${i % 4}` }, host.otherKey)))
    const statuses = answers.map((a) => a.status).sort()
    assert.deepStrictEqual(statuses, [...Array(5).fill(201), ...Array(15).fill(402)])
    for (const refused of answers.filter((a) => a.status === 402)) {
      assert.deepStrictEqual(refused.body, { error: "Monthly project event allowance exceeded", code: "allowance_exceeded" })
    }
    assert.strictEqual((await Effect.runPromise(plans.get(projectB))).used_this_period, 5)
    const listed = await host.request("GET", "/platform/v1/events", { key: host.otherKey })
    assert.strictEqual(listed.body.meta.total_count, 5)
    // Each recorded event, and only those, has its domain event: the relay hands each to the webhook once.
    const delivered = await receiver.received(5)
    await new Promise((resolve) => setTimeout(resolve, 500))
    assert.strictEqual(receiver.requests.length, 5)
    const mine = delivered.map((r) => JSON.parse(r.raw.toString("utf8")).data.id).sort()
    assert.deepStrictEqual(mine, listed.body.data.map((e: any) => e.id).sort())
  })

  it("creates one auto definition from concurrent first emissions of a name, learning every key", async () => {
    const answers = await Promise.all(
      Array.from({ length: 10 }, (_, i) => emit({ name: "race.first", properties: { [`k${i}`]: i } }))
    )
    assert.deepStrictEqual(answers.map((a) => a.status), Array(10).fill(201))
    const defs = (await host.request("GET", "/platform/v1/event-definitions")).body.data.filter((d: any) => d.name === "race.first")
    assert.strictEqual(defs.length, 1)
    assert.strictEqual(defs[0].source, "auto")
    assert.sameMembers(Object.keys(defs[0].property_schema), Array.from({ length: 10 }, (_, i) => `k${i}`))
  })

  it("deletes a definition and its events through a pg-boss worker", async () => {
    for (let i = 0; i < 3; i++) assert.strictEqual((await emit({ name: "pg.doomed", properties: { i } })).status, 201)
    assert.strictEqual((await emit({ name: "pg.kept" })).status, 201)
    const def = (await host.request("GET", "/platform/v1/event-definitions")).body.data.find((d: any) => d.name === "pg.doomed")
    const res = await host.request("DELETE", `/platform/v1/event-definitions/${def.id}`)
    assert.strictEqual(res.status, 202, res.text)
    assert.deepStrictEqual(res.body, { data: { id: def.id, status: "deletion_pending" } })
    assert.strictEqual((await host.request("GET", `/platform/v1/event-definitions/${def.id}`)).status, 404)
    await eventually("the definition's events to go", async () =>
      (await host.request("GET", "/platform/v1/events?name=pg.doomed")).body.meta.total_count === 0)
    await eventually("the definition to go", async () => {
      // Gone for good: the name is free, so emitting makes a new definition.
      const again = await emit({ name: "pg.doomed" })
      if (again.status === 422) return false
      assert.strictEqual(again.status, 201, again.text)
      return true
    })
    const fresh = (await host.request("GET", "/platform/v1/event-definitions")).body.data.find((d: any) => d.name === "pg.doomed")
    assert.notStrictEqual(fresh.id, def.id)
    assert.strictEqual((await host.request("GET", "/platform/v1/events?name=pg.kept")).body.meta.total_count, 1)
  })
})
