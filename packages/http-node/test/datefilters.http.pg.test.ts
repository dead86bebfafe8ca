/**
 * Date filters the store cannot hold (issue 29 §4): every list filter the document marks `date-time`, and log
 * search's `around`, answer 422 naming the parameter for an instant past 9999-12-31 in UTC (PostgreSQL refused the
 * six-digit year JavaScript writes for it, and the lists answered 500), and 200 for one inside the range. The
 * routes come from the served `/openapi.json`, so a new list with a date filter is checked without a line here.
 */
import { Ids } from "@parley/core"
import { layerFromUrl, layerJobQueue, layerStorage } from "@parley/store-pg"
import { Effect, Exit, Layer, Scope } from "effect"
import { afterAll, assert, beforeAll, describe, it } from "vitest"
import { freshDatabase } from "../../store-pg/test/pg.ts"
import { connectSimulatedNumber, type MessagingHost, startMessagingHost } from "./messaging.support.ts"

let host: MessagingHost
let close: () => Promise<void> = () => Promise.resolve()
const ids: Record<string, string> = {}

beforeAll(async () => {
  const scope = Effect.runSync(Scope.make())
  await Effect.runPromise(Effect.gen(function*() {
    const url = yield* freshDatabase
    host = yield* startMessagingHost(
      Layer.mergeAll(layerStorage, layerJobQueue({ pollingIntervalSeconds: 0.5 }), Ids.layer).pipe(Layer.provideMerge(layerFromUrl(url)))
    )
    ids.phone_number_id = (yield* connectSimulatedNumber(host)).phoneNumberId
  }).pipe(Effect.provideService(Scope.Scope, scope)))
  close = () => Effect.runPromise(Scope.close(scope, Exit.void))
  const workflow = await host.request("POST", "/platform/v1/workflows", { body: { workflow: { name: "Dates" } } })
  assert.strictEqual(workflow.status, 201, workflow.text)
  ids.id = workflow.body.data.id
}, 120_000)
afterAll(() => close())

interface DateParameter {
  readonly path: string
  readonly name: string
}

const dateParameters = async (): Promise<ReadonlyArray<DateParameter>> => {
  const document = (await host.request("GET", "/openapi.json")).body
  const found: Array<DateParameter> = []
  for (const [path, item] of Object.entries<any>(document.paths)) {
    for (const parameter of item.get?.parameters ?? []) {
      if (parameter.in === "query" && parameter.schema?.format === "date-time") found.push({ path, name: parameter.name })
    }
  }
  return found
}

const pathOf = (template: string) =>
  template.replace(/\{(\w+)\}/g, (_, name: string) => {
    const id = ids[name]
    if (id === undefined) throw new Error(`no id for {${name}} in ${template}`)
    return id
  })

const withPeriod = (p: DateParameter) => p.name === "around" ? "&period=context" : ""

describe("date filters outside PostgreSQL's range", () => {
  it("every list's date-time filter answers 422 naming it, never 500", async () => {
    const parameters = await dateParameters()
    assert.isAtLeast(parameters.length, 11, "the lists with date filters (workflows, executions, events, webhooks, log search)")
    for (const p of parameters) {
      for (const value of ["9999-12-31T23:59:59-05:00", "+010000-01-01T00:00:00Z", "0000-12-31T00:00:00Z"]) {
        const res = await host.request("GET", `${pathOf(p.path)}?${p.name}=${encodeURIComponent(value)}${withPeriod(p)}`)
        assert.strictEqual(res.status, 422, `${p.path} ${p.name}=${value}: ${res.status} ${res.text}`)
        assert.include(res.body.error, p.name, res.text)
        assert.include(res.body.error, "between 0001-01-01 and 9999-12-31", res.text)
        assert.deepStrictEqual(res.body.details?.map((d: { path: string }) => d.path), [p.name], res.text)
      }
    }
  })

  it("the proxy's read filters answer the network's 400 (code 100) naming the parameter, never 500", async () => {
    for (const [path, name] of [["messages", "since"], ["messages", "until"], ["conversations", "last_active_since"], ["conversations", "last_active_until"]]) {
      const res = await host.request("GET", `/proxy/${ids.phone_number_id}/${path}?${name}=${encodeURIComponent("9999-12-31T23:59:59-05:00")}`)
      assert.strictEqual(res.status, 400, `${path} ${name}: ${res.text}`)
      assert.strictEqual(res.body.error.code, 100, res.text)
      assert.include(res.body.error.message, `${name} must be between 0001-01-01 and 9999-12-31`, res.text)
      const inside = await host.request("GET", `/proxy/${ids.phone_number_id}/${path}?${name}=${encodeURIComponent("9999-12-31T18:00:00-05:00")}`)
      assert.strictEqual(inside.status, 200, `${path} ${name}: ${inside.text}`)
    }
  })

  it("an instant inside the range (any offset) still filters", async () => {
    for (const p of await dateParameters()) {
      const res = await host.request("GET", `${pathOf(p.path)}?${p.name}=${encodeURIComponent("9999-12-31T18:00:00-05:00")}${withPeriod(p)}`)
      assert.strictEqual(res.status, 200, `${p.path} ${p.name}: ${res.text}`)
    }
  })
})
