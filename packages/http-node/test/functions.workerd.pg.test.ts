/**
 * Functions end to end on the production pieces: real workerd processes under
 * the supervisor, PostgreSQL storage and the pg-boss job queue, over real
 * HTTP. Two hosts share one database, each with its own workerd runtime, as
 * a cluster runs: a deploy run by one host serves from the other, which
 * loads the stored code of the deployed version on its first invoke.
 */
import { NodeHttpServer } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Ids } from "@parley/core"
import { layerJobQueue, layerStorage } from "@parley/store-pg"
import { Effect, Exit, Layer, References, Scope } from "effect"
import { HttpServer } from "effect/http"
import { createServer } from "node:http"
import { afterAll, beforeAll } from "vitest"
import { layerFromUrl } from "../../store-pg/src/Database.ts"
import { emptyDatabase } from "../../store-pg/test/pg.ts"
import * as Host from "../src/Host.ts"
import { layerWorkerdFunctionRuntime } from "../src/adapters/workerd/Workerd.ts"
import { startHost, type TestHost } from "./support.ts"

let a: TestHost
/** The second host: same database, its own workerd processes and job workers. */
let b: TestHost
let close: () => Promise<void>

const runtime = () => layerWorkerdFunctionRuntime({ processes: 2 })

beforeAll(async () => {
  const scope = Effect.runSync(Scope.make())
  await Effect.runPromise(Effect.gen(function*() {
    const url = yield* emptyDatabase
    const ports = () =>
      Layer.mergeAll(layerStorage, layerJobQueue({ pollingIntervalSeconds: 0.5 }), Ids.layer).pipe(
        Layer.provideMerge(layerFromUrl(url))
      )
    a = yield* startHost(ports(), { functionRuntime: runtime() })
    const context = yield* Layer.build(
      Host.serve({ publicUrl: "http://127.0.0.1", functionRuntime: runtime() }).pipe(
        Layer.provideMerge(NodeHttpServer.layer(createServer, { port: 0, host: "127.0.0.1" })),
        Layer.provideMerge(ports()),
        Layer.provideMerge(Layer.succeed(References.MinimumLogLevel, "Error"))
      )
    )
    const urlB = yield* HttpServer.addressFormattedWith(Effect.succeed).pipe(Effect.provideContext(context))
    b = { ...a, url: urlB, request: requester(urlB, a.key) }
  }).pipe(Effect.provideService(Scope.Scope, scope)))
  close = () => Effect.runPromise(Scope.close(scope, Exit.void))
}, 120_000)
afterAll(() => close())

/** `TestHost.request` against another address (host B), with host A's projects and keys. */
const requester = (url: string, defaultKey: string): TestHost["request"] => async (method, path, options = {}) => {
  const headers: Record<string, string> = { ...options.headers }
  const key = options.key === undefined ? defaultKey : options.key
  if (key !== null) headers["x-api-key"] = key
  const body = options.rawBody ?? (options.body !== undefined ? JSON.stringify(options.body) : undefined)
  if (body !== undefined) headers["content-type"] ??= "application/json"
  const response = await fetch(`${url}${path}`, { method, headers, ...(body !== undefined ? { body } : {}) })
  const text = await response.text()
  let parsed: unknown = undefined
  try {
    parsed = text.length > 0 ? JSON.parse(text) : undefined
  } catch {
    parsed = undefined
  }
  return { status: response.status, body: parsed, headers: response.headers, text }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

const eventually = async <A>(what: string, check: () => Promise<A | undefined>): Promise<A> => {
  const deadline = Date.now() + 30_000
  while (true) {
    const value = await check()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`still waiting for: ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

const create = async (host: TestHost, fn: Record<string, unknown>) => {
  const res = await host.request("POST", "/platform/v1/functions", { body: { function: fn } })
  assert.strictEqual(res.status, 201, res.text)
  return res.body.data
}

const deploy = async (host: TestHost, id: string) => {
  const res = await host.request("POST", `/platform/v1/functions/${id}/deploy`)
  assert.strictEqual(res.status, 202, res.text)
  return eventually(`deploy of ${id}`, async () => {
    const fn = (await host.request("GET", `/platform/v1/functions/${id}`)).body.data
    return fn.status === "deploying" ? undefined : fn
  })
}

const deployed = async (host: TestHost, fn: Record<string, unknown>) => {
  const created = await create(host, fn)
  const done = await deploy(host, created.id)
  assert.strictEqual(done.status, "deployed", done.last_deploy_error)
  return done
}

const invoke = (host: TestHost, id: string, options: Parameters<TestHost["request"]>[2] = {}, query = "") =>
  host.request("POST", `/platform/v1/functions/${id}/invoke${query}`, options)

const modes = `export default {
  async fetch(request, env) {
    const url = new URL(request.url)
    if (url.searchParams.get("kind") === "text") return new Response("plain", { status: 202, headers: { "content-type": "text/plain" } })
    if (url.searchParams.get("kind") === "missing") return Response.json({ error: "nope" }, { status: 404 })
    const input = await request.json()
    console.log("invoked with", input.n)
    return Response.json({ doubled: input.n * 2, runtime: typeof WebSocketPair === "function" ? "workerd" : "other" })
  }
}`

describe("functions on workerd, Postgres and pg-boss", () => {
  it("a deployed function answers through invoke in both response modes", async () => {
    const pass = await deployed(a, { name: "Doubler", code: modes })
    assert.strictEqual(pass.version, 1)
    const res = await invoke(a, pass.id, { body: { n: 21 } })
    assert.strictEqual(res.status, 200, res.text)
    assert.deepStrictEqual(res.body, { doubled: 42, runtime: "workerd" })
    assert.strictEqual(res.headers.get("content-type"), "application/json")
    const text = await invoke(a, pass.id, {}, "?kind=text")
    assert.strictEqual(text.status, 202)
    assert.strictEqual(text.text, "plain")

    const wrapped = await deployed(a, { name: "Doubler wrapped", code: modes, invoke_response_mode: "wrapped" })
    const w = await invoke(a, wrapped.id, { body: { n: 5 } })
    assert.strictEqual(w.status, 200)
    assert.deepStrictEqual(w.body, { data: { doubled: 10, runtime: "workerd" } })
    assert.deepStrictEqual((await invoke(a, wrapped.id, {}, "?kind=text")).body, { data: "plain" })
    const missing = await invoke(a, wrapped.id, {}, "?kind=missing")
    assert.strictEqual(missing.status, 404)
    assert.deepStrictEqual(missing.body, { error: "nope" })

    const log = await a.request("GET", `/platform/v1/functions/${pass.id}/invocations?limit=20`)
    const first = log.body.data.invocations.find((i: any) => i.request_body === `{"n":21}`)
    assert.strictEqual(first.status_code, 200)
    assert.deepStrictEqual(first.console_logs.map((l: any) => l.message), ["invoked with 21"])
  })

  it("private vs public invoke, and the 404 of a private function is the 404 of an unknown one", async () => {
    const code = `export default { async fetch(request) { return Response.json({ key: request.headers.get("x-api-key"), auth: request.headers.get("authorization") }) } }`
    const priv = await deployed(a, { name: "Private on workerd", code })
    const pub = await deployed(a, { name: "Public on workerd", code, public_endpoint: true })
    assert.deepStrictEqual((await invoke(a, priv.id)).body, { key: null, auth: null })
    assert.deepStrictEqual((await invoke(a, pub.id, { key: null })).body, { key: null, auth: null })
    assert.deepStrictEqual((await invoke(a, pub.id, { headers: { authorization: "Bearer x" } })).body, { key: null, auth: null })
    const unknown = await invoke(a, "00000000-0000-4000-8000-0000000000aa", { key: null })
    assert.strictEqual(unknown.status, 404)
    for (const options of [{ key: null }, { key: a.otherKey }, { key: "pk_unknown_unknown_unknown" }]) {
      const res = await invoke(a, priv.id, options)
      assert.strictEqual(res.status, 404)
      assert.strictEqual(res.text, unknown.text)
    }
  })

  it("409 on a stale lock_version, and on a deploy while one runs", async () => {
    const fn = await create(a, { name: "Locked on workerd", code: modes })
    const ok = await a.request("PATCH", `/platform/v1/functions/${fn.id}`, { body: { function: { description: "v", lock_version: 0 } } })
    assert.strictEqual(ok.status, 200)
    const stale = await a.request("PATCH", `/platform/v1/functions/${fn.id}`, { body: { function: { description: "w", lock_version: 0 } } })
    assert.strictEqual(stale.status, 409)
    assert.deepStrictEqual(stale.body, { error: "lock_version is stale; reload and retry", code: "stale_lock_version" })

    // Loading takes a while (a busy top level), so the second request finds the first deploy running.
    const slow = await create(a, {
      name: "Slow to load",
      code: `let x = 0
for (let i = 0; i < 1.5e8; i++) x += i
export default { fetch: () => new Response(String(x > 0)) }`
    })
    const [first, second] = await Promise.all([
      a.request("POST", `/platform/v1/functions/${slow.id}/deploy`),
      new Promise((resolve) => setTimeout(resolve, 30)).then(() => b.request("POST", `/platform/v1/functions/${slow.id}/deploy`))
    ])
    assert.strictEqual(first.status, 202, first.text)
    assert.strictEqual(second.status, 409, second.text)
    assert.deepStrictEqual(second.body, { error: "A deployment of this function is already in progress", code: "deploy_in_progress" })
    const done = await eventually("the slow deploy", async () => {
      const current = (await a.request("GET", `/platform/v1/functions/${slow.id}`)).body.data
      return current.status === "deploying" ? undefined : current
    })
    assert.strictEqual(done.status, "deployed", done.last_deploy_error)
    assert.strictEqual((await invoke(a, slow.id)).text, "true")
  }, 60_000)

  it("secret rotation reaches the code without a redeploy, on every host; one function cannot read another's", async () => {
    const code = `export default { async fetch(request, env) { return Response.json({ token: env.TOKEN ?? null, keys: Object.keys(env).sort(), host: typeof process === "undefined" ? null : Object.keys(process.env ?? {}).length }) } }`
    const holder = await deployed(a, { name: "Secret holder", code })
    const snoop = await deployed(a, { name: "Secret snoop", code })
    const save = async (value: string) => {
      const res = await a.request("POST", `/platform/v1/functions/${holder.id}/secrets`, { body: { secret: { name: "TOKEN", value } } })
      assert.strictEqual(res.status, 201, res.text)
    }
    await save("one")
    assert.strictEqual((await invoke(a, holder.id)).body.token, "one")
    assert.strictEqual((await invoke(b, holder.id)).body.token, "one")
    await save("two")
    assert.strictEqual((await invoke(a, holder.id)).body.token, "two")
    assert.strictEqual((await invoke(b, holder.id)).body.token, "two")
    const fn = (await a.request("GET", `/platform/v1/functions/${holder.id}`)).body.data
    assert.strictEqual(fn.version, 1, "no redeploy happened")
    const other = (await invoke(a, snoop.id)).body
    assert.strictEqual(other.token, null)
    assert.deepStrictEqual(other.keys, ["KV"])
    assert.include([null, 0], other.host, "no host environment inside")
  })

  it("multi-host: a version deployed by one host serves from the other, and a redeploy reaches it", async () => {
    const fn = await deployed(a, { name: "Roaming", code: `async function handler() { return new Response("v1") }` })
    assert.strictEqual((await invoke(b, fn.id)).text, "v1")
    await a.request("PATCH", `/platform/v1/functions/${fn.id}`, {
      body: { function: { code: `async function handler() { return new Response("v2") }` } }
    })
    const second = await deploy(a, fn.id)
    assert.strictEqual(second.version, 2)
    assert.strictEqual((await invoke(b, fn.id)).text, "v2")
    assert.strictEqual((await invoke(a, fn.id)).text, "v2")

    // A syntax error fails the deploy; v2 keeps serving everywhere.
    await a.request("PATCH", `/platform/v1/functions/${fn.id}`, {
      body: { function: { code: `export default { fetch() { return new Response("v3" } }` } }
    })
    const failed = await deploy(b, fn.id)
    assert.strictEqual(failed.status, "error")
    assert.match(failed.last_deploy_error, /SyntaxError/)
    assert.strictEqual(failed.version, 2)
    assert.strictEqual((await invoke(a, fn.id)).text, "v2")
    assert.strictEqual((await invoke(b, fn.id)).text, "v2")
    const deployments = (await a.request("GET", `/platform/v1/functions/${fn.id}/deployments`)).body.data
    assert.deepStrictEqual(deployments.map((d: any) => [d.version, d.status]), [[3, "failed"], [2, "deployed"], [1, "deployed"]])
  }, 60_000)

  it("a runaway invocation times out with the 500 of decisions 7.2 while other functions keep answering", async () => {
    const spinner = await deployed(a, {
      name: "Spinner",
      runtime_config: { timeout: 1 },
      code: `export default { async fetch() { while (true) {} } }`
    })
    const other = await deployed(a, { name: "Bystander", code: `async function handler() { return new Response("fine") }` })
    const started = Date.now()
    const [spun, fine] = await Promise.all([
      invoke(a, spinner.id),
      new Promise((resolve) => setTimeout(resolve, 100)).then(() => invoke(a, other.id))
    ])
    assert.strictEqual(spun.status, 500)
    assert.strictEqual(spun.body.error, "Function invocation failed")
    assert.strictEqual(spun.body.detail, "Function timed out after 1 s")
    assert.match(spun.body.invocation_id, UUID)
    assert.isBelow(Date.now() - started, 5_000)
    assert.strictEqual(fine.text, "fine")
    assert.strictEqual((await invoke(a, other.id)).text, "fine")
  }, 30_000)

  it("multi-host: the public invoke limit is one 600 a minute across both hosts (decisions 8.1)", async () => {
    const fn = await deployed(a, { name: "Popular on two hosts", code: `export default { fetch: () => new Response("ok") }`, public_endpoint: true })
    // Near a minute boundary the window could reset mid-run: start in a fresh minute's first 40 s.
    if (Date.now() % 60_000 > 40_000) await new Promise((resolve) => setTimeout(resolve, 60_000 - (Date.now() % 60_000) + 50))
    const statuses = new Map<string, number>()
    for (let i = 0; i < 60; i++) {
      // Half of each batch to each host.
      const batch = await Promise.all(Array.from({ length: 10 }, (_, j) => {
        const [name, host] = j % 2 === 0 ? ["a", a] as const : ["b", b] as const
        return invoke(host, fn.id, { key: null }).then((res) => `${name} ${res.status}`)
      }))
      for (const outcome of batch) statuses.set(outcome, (statuses.get(outcome) ?? 0) + 1)
    }
    assert.deepStrictEqual([...statuses].sort(), [["a 200", 300], ["b 200", 300]])
    for (const host of [a, b]) {
      const over = await invoke(host, fn.id, { key: null })
      assert.strictEqual(over.status, 429, over.text)
      assert.strictEqual(over.headers.get("x-ratelimit-remaining"), "0")
    }
  }, 120_000)
})
