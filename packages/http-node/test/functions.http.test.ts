/**
 * Functions over real HTTP on memory ports and the memory runtime: every
 * endpoint's status codes and exact wire shapes, deploys through the job
 * queue, invoke in both modes, secrets, the invocation log.
 */
import { assert, describe, it } from "@effect/vitest"
import { FunctionInvocationsRepo, Ids, Projects } from "@parley/core"
import { layerMemoryJobQueue, layerMemoryStorage } from "@parley/core/testing"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import { afterAll, beforeAll } from "vitest"
import { startHost, type TestHost } from "./support.ts"

let host: TestHost
let invocationsRepo: FunctionInvocationsRepo["Service"]
let projectA: string
let keyIdA: string
let close: () => Promise<void>

beforeAll(async () => {
  const scope = Effect.runSync(Scope.make())
  await Effect.runPromise(Effect.gen(function*() {
    const ports = yield* Layer.build(Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layer))
    host = yield* startHost(Layer.succeedContext(ports))
    invocationsRepo = Context.get(ports, FunctionInvocationsRepo)
    const projects = Context.get(yield* Layer.build(Projects.layer.pipe(Layer.provide(Layer.succeedContext(ports)))), Projects)
    const principal = yield* projects.authenticate(host.key)
    projectA = principal.project.id
    keyIdA = principal.apiKey.id
  }).pipe(Effect.provideService(Scope.Scope, scope)))
  close = () => Effect.runPromise(Scope.close(scope, Exit.void))
})
afterAll(() => close())

const FUNCTION_KEYS = [
  "alt_function_url",
  "code",
  "created_at",
  "created_by_id",
  "description",
  "edge_worker_url",
  "endpoint_url",
  "function_type",
  "id",
  "invoke_response_mode",
  "last_deploy_error",
  "last_deployed_at",
  "lock_version",
  "name",
  "project_id",
  "public_endpoint",
  "runtime_config",
  "slug",
  "status",
  "updated_at",
  "version"
]
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

const echo = `export default {
  async fetch(request, env) {
    const url = new URL(request.url)
    const headers = Object.fromEntries(request.headers)
    const body = await request.text()
    console.log("echo", request.method, url.pathname)
    return Response.json({ method: request.method, path: url.pathname, query: url.search, headers, body }, { status: 201 })
  }
}`

const create = async (fn: Record<string, unknown>, key?: string) => {
  const res = await host.request("POST", "/platform/v1/functions", { body: { function: fn }, ...(key ? { key } : {}) })
  assert.strictEqual(res.status, 201, res.text)
  return res.body.data
}

const get = async (id: string) => {
  const res = await host.request("GET", `/platform/v1/functions/${id}`)
  assert.strictEqual(res.status, 200, res.text)
  return res.body.data
}

const eventually = async <A>(what: string, check: () => Promise<A | undefined>): Promise<A> => {
  const deadline = Date.now() + 10_000
  while (true) {
    const value = await check()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`still waiting for: ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

/** Deploys and waits for the deploy to end; answers the function. */
const deploy = async (id: string) => {
  const res = await host.request("POST", `/platform/v1/functions/${id}/deploy`)
  assert.strictEqual(res.status, 202, res.text)
  assert.deepStrictEqual(res.body, { message: "Function deployment started", function_id: id, status: "deploying" })
  return eventually(`deploy of ${id}`, async () => {
    const fn = await get(id)
    return fn.status === "deploying" ? undefined : fn
  })
}

const deployed = async (fn: Record<string, unknown>) => {
  const created = await create(fn)
  const done = await deploy(created.id)
  assert.strictEqual(done.status, "deployed", done.last_deploy_error)
  return done
}

const invoke = (id: string, options: Parameters<TestHost["request"]>[2] = {}, query = "") =>
  host.request("POST", `/platform/v1/functions/${id}/invoke${query}`, options)

describe("function records", () => {
  it("creates a draft with every field of the spec and the defaults of decisions 2.7", async () => {
    const fn = await create({ name: "Order Lookup!", code: echo })
    assert.deepStrictEqual(Object.keys(fn).sort(), FUNCTION_KEYS)
    assert.match(fn.id, UUID)
    assert.deepStrictEqual(
      { ...fn, id: undefined, created_at: undefined, updated_at: undefined },
      {
        id: undefined,
        name: "Order Lookup!",
        slug: "order-lookup",
        description: null,
        code: echo,
        function_type: "edge_worker",
        version: 0,
        status: "draft",
        last_deployed_at: null,
        last_deploy_error: null,
        runtime_config: { timeout: 30, memory: 128 },
        project_id: projectA,
        created_by_id: keyIdA,
        endpoint_url: `http://127.0.0.1/platform/v1/functions/${fn.id}/invoke`,
        edge_worker_url: null,
        alt_function_url: null,
        lock_version: 0,
        public_endpoint: false,
        invoke_response_mode: "passthrough",
        created_at: undefined,
        updated_at: undefined
      }
    )
    assert.strictEqual(fn.created_at, fn.updated_at)
    const again = await create({ name: "order lookup", code: echo })
    assert.strictEqual(again.slug, "order-lookup-2")
    const given = await create({
      name: "Given",
      code: "async function handler(request, env) { return new Response('ok') }",
      slug: "my-fn",
      description: "Looks orders up",
      public_endpoint: true,
      runtime_config: { timeout: 5 },
      invoke_response_mode: "wrapped",
      function_type: "edge_worker"
    })
    assert.strictEqual(given.slug, "my-fn")
    assert.strictEqual(given.description, "Looks orders up")
    assert.strictEqual(given.public_endpoint, true)
    assert.deepStrictEqual(given.runtime_config, { timeout: 5, memory: 128 })
    assert.strictEqual(given.invoke_response_mode, "wrapped")
  })

  it("refuses code of neither shape, code over 1 MB and out-of-range fields with the exact messages", async () => {
    const refused = async (fn: Record<string, unknown>, error: string) => {
      const res = await host.request("POST", "/platform/v1/functions", { body: { function: fn } })
      assert.strictEqual(res.status, 422, res.text)
      assert.strictEqual(res.body.error, error)
    }
    await refused(
      { name: "x", code: "const answer = 42" },
      "Code must define async function handler(request, env) or export default { fetch }"
    )
    await refused(
      { name: "x", code: `export default { fetch() {} }\n//${"x".repeat(1024 * 1024)}` },
      "Code must be at most 1 MB"
    )
    await refused({ name: "x", code: echo, runtime_config: { timeout: 31 } }, "runtime_config.timeout must be a whole number of seconds from 1 to 30")
    await refused({ name: "x", code: echo, runtime_config: { timeout: 0 } }, "runtime_config.timeout must be a whole number of seconds from 1 to 30")
    await refused({ name: "x", code: echo, runtime_config: { memory: 256 } }, "runtime_config.memory must be 128")
    await refused({ name: "x", code: echo, function_type: "lambda" }, "function_type must be edge_worker")
    await refused({ name: "x", code: echo, slug: "Not_OK" }, "slug must match ^[a-z0-9-]+$ and be at most 100 characters")
    await refused({ name: " ", code: echo }, "name must be 1-200 characters")
    await create({ name: "taken", code: echo, slug: "taken-slug" })
    await refused({ name: "x", code: echo, slug: "taken-slug" }, "Slug has already been taken")
    const missing = await host.request("POST", "/platform/v1/functions", { body: { name: "x" } })
    assert.strictEqual(missing.status, 400)
    assert.deepStrictEqual(missing.body, { error: "Missing function envelope in the request body", code: "missing_envelope" })
    const noCode = await host.request("POST", "/platform/v1/functions", { body: { function: { name: "x" } } })
    assert.strictEqual(noCode.status, 422)
    assert.strictEqual(noCode.body.details[0].path, "function.code")
  })

  it("reads, lists in both paging modes, and hides other projects' functions", async () => {
    const mine = await create({ name: "Listed", code: echo })
    const theirs = await create({ name: "Theirs", code: echo }, host.otherKey)
    assert.deepStrictEqual(await get(mine.id), mine)
    const other = await host.request("GET", `/platform/v1/functions/${theirs.id}`)
    assert.strictEqual(other.status, 404)
    assert.deepStrictEqual(other.body, { error: "Function not found" })

    const cursor = await host.request("GET", "/platform/v1/functions?limit=1")
    assert.strictEqual(cursor.status, 200)
    assert.deepStrictEqual(Object.keys(cursor.body).sort(), ["data", "paging"])
    assert.strictEqual(cursor.body.data.length, 1)
    assert.strictEqual(cursor.body.data[0].id, mine.id, "newest first")
    assert.isString(cursor.body.paging.next)

    const page = await host.request("GET", "/platform/v1/functions?page=1&per_page=2")
    assert.deepStrictEqual(Object.keys(page.body).sort(), ["data", "meta"])
    assert.strictEqual(page.body.meta.per_page, 2)
    assert.isFalse(page.body.data.some((f: any) => f.id === theirs.id))
    assert.strictEqual(page.headers.get("x-total"), String(page.body.meta.total_count))

    const legacy = await host.request("GET", "/api/v1/functions")
    assert.strictEqual(legacy.status, 200)
    assert.deepStrictEqual(Object.keys(legacy.body).sort(), ["data", "meta"])
    assert.deepStrictEqual(legacy.body.data.find((f: any) => f.id === mine.id), mine)
    assert.strictEqual(legacy.body.meta.page, 1)
    assert.strictEqual(legacy.body.meta.per_page, 20)
  })

  it("updates partially, bumps lock_version and answers 409 with the exact body on a stale one", async () => {
    const fn = await create({ name: "Lock Me", code: echo })
    const ok = await host.request("PATCH", `/platform/v1/functions/${fn.id}`, {
      body: { function: { description: "now described", runtime_config: { timeout: 10 }, lock_version: 0 } }
    })
    assert.strictEqual(ok.status, 200, ok.text)
    assert.strictEqual(ok.body.data.lock_version, 1)
    assert.strictEqual(ok.body.data.description, "now described")
    assert.deepStrictEqual(ok.body.data.runtime_config, { timeout: 10, memory: 128 })
    assert.strictEqual(ok.body.data.name, "Lock Me")
    assert.strictEqual(ok.body.data.slug, "lock-me")
    const stale = await host.request("PATCH", `/platform/v1/functions/${fn.id}`, {
      body: { function: { name: "Renamed", lock_version: 0 } }
    })
    assert.strictEqual(stale.status, 409)
    assert.deepStrictEqual(stale.body, { error: "lock_version is stale; reload and retry", code: "stale_lock_version" })
    const without = await host.request("PATCH", `/platform/v1/functions/${fn.id}`, { body: { function: { name: "Renamed" } } })
    assert.strictEqual(without.status, 200)
    assert.strictEqual(without.body.data.lock_version, 2)
    const badCode = await host.request("PATCH", `/platform/v1/functions/${fn.id}`, { body: { function: { code: "nope" } } })
    assert.strictEqual(badCode.status, 422)
    assert.strictEqual(badCode.body.error, "Code must define async function handler(request, env) or export default { fetch }")
    const missing = await host.request("PATCH", "/platform/v1/functions/00000000-0000-4000-8000-000000000000", {
      body: { function: { name: "x" } }
    })
    assert.strictEqual(missing.status, 404)
  })
})

describe("deploys", () => {
  it("deploys through the job queue: deploying, then deployed at version 1, with a deployments list", async () => {
    const fn = await create({ name: "Deploy Me", code: echo })
    const done = await deploy(fn.id)
    assert.strictEqual(done.status, "deployed")
    assert.strictEqual(done.version, 1)
    assert.isString(done.last_deployed_at)
    assert.strictEqual(done.last_deploy_error, null)
    assert.strictEqual(done.edge_worker_url, `workerd://functions/${fn.id}/v1`)
    assert.strictEqual(done.lock_version, 2, "deploying and deployed are writes")

    // A code edit keeps the status; the deployed version keeps serving until the next deploy.
    const edited = await host.request("PATCH", `/platform/v1/functions/${fn.id}`, {
      body: { function: { code: `async function handler() { return new Response("v2") }` } }
    })
    assert.strictEqual(edited.body.data.status, "deployed")
    assert.strictEqual((await invoke(fn.id, { body: {} })).status, 201)
    const second = await deploy(fn.id)
    assert.strictEqual(second.version, 2)
    assert.strictEqual((await invoke(fn.id)).text, "v2")

    const list = await host.request("GET", `/platform/v1/functions/${fn.id}/deployments`)
    assert.strictEqual(list.status, 200)
    assert.deepStrictEqual(Object.keys(list.body).sort(), ["data", "paging"])
    const [latest, first] = list.body.data
    assert.deepStrictEqual(Object.keys(latest).sort(), ["code_sha256", "error", "finished_at", "id", "started_at", "status", "version"])
    assert.strictEqual(latest.version, 2)
    assert.strictEqual(latest.status, "deployed")
    assert.strictEqual(first.version, 1)
    assert.match(first.code_sha256, /^[0-9a-f]{64}$/)
    assert.notStrictEqual(first.code_sha256, latest.code_sha256)
    assert.isString(latest.finished_at)
    const paged = await host.request("GET", `/platform/v1/functions/${fn.id}/deployments?page=1&per_page=1`)
    assert.strictEqual(paged.body.meta.total_count, 2)
  })

  it("a syntax error ends the deploy in error with last_deploy_error; the previous version keeps serving", async () => {
    const fn = await deployed({ name: "Fragile", code: `async function handler() { return new Response("v1") }` })
    await host.request("PATCH", `/platform/v1/functions/${fn.id}`, {
      body: { function: { code: `export default { async fetch() { return new Response("v2" } }` } }
    })
    const failed = await deploy(fn.id)
    assert.strictEqual(failed.status, "error")
    assert.match(failed.last_deploy_error, /SyntaxError/)
    assert.strictEqual(failed.version, 1)
    const served = await invoke(fn.id)
    assert.strictEqual(served.status, 200)
    assert.strictEqual(served.text, "v1")
    const list = await host.request("GET", `/platform/v1/functions/${fn.id}/deployments`)
    assert.strictEqual(list.body.data[0].status, "failed")
    assert.match(list.body.data[0].error, /SyntaxError/)
    assert.strictEqual(list.body.data[0].version, 2)
  })

  it("unknown and other projects' functions answer 404 to deploy and deployments", async () => {
    const theirs = await create({ name: "Not yours", code: echo }, host.otherKey)
    for (const path of [`/platform/v1/functions/${theirs.id}/deploy`]) {
      const res = await host.request("POST", path)
      assert.strictEqual(res.status, 404)
    }
    assert.strictEqual((await host.request("GET", `/platform/v1/functions/${theirs.id}/deployments`)).status, 404)
  })
})

describe("invoke", () => {
  it("private: the owning project's key (X-API-Key or Bearer) runs it; anything else is the 404 of an unknown function", async () => {
    const fn = await deployed({ name: "Private", code: echo })
    const ok = await invoke(fn.id, { body: { n: 1 }, headers: { "x-custom": "kept" } }, "?q=1")
    assert.strictEqual(ok.status, 201, ok.text)
    assert.strictEqual(ok.headers.get("content-type"), "application/json")
    assert.match(ok.headers.get("x-invocation-id") ?? "", UUID)
    assert.strictEqual(ok.body.method, "POST")
    assert.strictEqual(ok.body.path, `/platform/v1/functions/${fn.id}/invoke`)
    assert.strictEqual(ok.body.query, "?q=1")
    assert.strictEqual(ok.body.body, `{"n":1}`)
    assert.strictEqual(ok.body.headers["x-custom"], "kept")
    assert.isUndefined(ok.body.headers["x-api-key"], "the key never reaches code")

    const bearer = await invoke(fn.id, { key: null, headers: { authorization: `Bearer ${host.key}` } })
    assert.strictEqual(bearer.status, 201)
    assert.isUndefined(bearer.body.headers.authorization)

    const unknown = await invoke("00000000-0000-4000-8000-00000000dead", { key: null })
    const refusals = [
      await invoke(fn.id, { key: null }),
      await invoke(fn.id, { key: "pk_wrong_wrong_wrong_wrong" }),
      await invoke(fn.id, { key: host.otherKey }),
      await invoke(fn.id, { key: null, headers: { authorization: `Bearer ${host.otherKey}` } }),
      await invoke("00000000-0000-4000-8000-00000000dead"),
      unknown
    ]
    for (const res of refusals) {
      assert.strictEqual(res.status, 404)
      assert.strictEqual(res.text, unknown.text, "byte-identical bodies")
      assert.strictEqual(res.headers.get("content-type"), unknown.headers.get("content-type"))
    }
    assert.deepStrictEqual(unknown.body, { error: "Function not found" })
  })

  it("public: no key needed; a key sent anyway and other inbound headers are sanitised (decisions 5)", async () => {
    const fn = await deployed({ name: "Public", code: echo, public_endpoint: true })
    const res = await invoke(fn.id, {
      body: { hello: "world" },
      headers: {
        authorization: "Bearer secret-token",
        cookie: "session=1",
        "x-forwarded-for": "1.2.3.4",
        "x-real-ip": "1.2.3.4",
        forwarded: "for=1.2.3.4",
        via: "1.1 proxy",
        "x-parley-internal": "1",
        "x-hub-signature-256": "sha256=abc",
        "stripe-signature": "t=1,v1=abc",
        "x-custom": "kept",
        "user-agent": "tests/1",
        accept: "application/json",
        "accept-language": "fr",
        referer: "https://example.com"
      }
    })
    assert.strictEqual(res.status, 201, res.text)
    const seen = res.body.headers
    assert.deepStrictEqual(Object.keys(seen).sort(), [
      "accept",
      "accept-encoding",
      "accept-language",
      "content-type",
      "stripe-signature",
      "user-agent",
      "x-custom",
      "x-hub-signature-256"
    ])
    assert.strictEqual(res.headers.get("x-ratelimit-limit"), "600")
    assert.isString(res.headers.get("x-ratelimit-remaining"))
    assert.match(res.headers.get("x-ratelimit-reset") ?? "", /^\d+$/)
    const withKey = await invoke(fn.id, { key: host.otherKey })
    assert.strictEqual(withKey.status, 201)
    assert.isUndefined(withKey.body.headers["x-api-key"])
  })

  it("passthrough answers the function's status, body and Content-Type unchanged; wrapped puts 2xx under data", async () => {
    const code = `export default {
      async fetch(request) {
        const kind = new URL(request.url).searchParams.get("kind")
        if (kind === "json") return Response.json({ total: 3 }, { status: 200 })
        if (kind === "text") return new Response("plain words", { status: 202, headers: { "content-type": "text/plain" } })
        if (kind === "missing") return Response.json({ error: "no such order" }, { status: 404 })
        if (kind === "empty") return new Response(null, { status: 204 })
        return new Response("<b>html</b>", { headers: { "content-type": "text/html", "x-answer": "42", "set-cookie": "a=b" } })
      }
    }`
    const pass = await deployed({ name: "Modes pass", code })
    const wrap = await deployed({ name: "Modes wrap", code, invoke_response_mode: "wrapped" })

    const pj = await invoke(pass.id, {}, "?kind=json")
    assert.strictEqual(pj.status, 200)
    assert.strictEqual(pj.text, `{"total":3}`)
    assert.strictEqual(pj.headers.get("content-type"), "application/json")
    const pt = await invoke(pass.id, {}, "?kind=text")
    assert.strictEqual(pt.status, 202)
    assert.strictEqual(pt.text, "plain words")
    assert.strictEqual(pt.headers.get("content-type"), "text/plain")
    const ph = await invoke(pass.id, {}, "?kind=html")
    assert.strictEqual(ph.text, "<b>html</b>")
    assert.strictEqual(ph.headers.get("content-type"), "text/html")
    assert.strictEqual(ph.headers.get("x-answer"), "42")
    assert.strictEqual(ph.headers.get("set-cookie"), null, "no cookies on the API's domain")
    const pm = await invoke(pass.id, {}, "?kind=missing")
    assert.strictEqual(pm.status, 404)
    assert.deepStrictEqual(pm.body, { error: "no such order" })
    const pe = await invoke(pass.id, {}, "?kind=empty")
    assert.strictEqual(pe.status, 204)
    assert.strictEqual(pe.text, "")

    const wj = await invoke(wrap.id, {}, "?kind=json")
    assert.strictEqual(wj.status, 200)
    assert.strictEqual(wj.text, `{"data":{"total":3}}`)
    assert.strictEqual(wj.headers.get("content-type"), "application/json")
    const wt = await invoke(wrap.id, {}, "?kind=text")
    assert.strictEqual(wt.status, 202)
    assert.deepStrictEqual(wt.body, { data: "plain words" })
    const wm = await invoke(wrap.id, {}, "?kind=missing")
    assert.strictEqual(wm.status, 404)
    assert.deepStrictEqual(wm.body, { error: "no such order" }, "status >= 400 unchanged in both modes")
    const we = await invoke(wrap.id, {}, "?kind=empty")
    assert.strictEqual(we.status, 204)
  })

  it("422 before the first deploy, 400 for invalid JSON sent as JSON, other bodies forwarded as they are", async () => {
    const fn = await create({ name: "Not yet", code: echo })
    const early = await invoke(fn.id, { body: { a: 1 } })
    assert.strictEqual(early.status, 422)
    assert.deepStrictEqual(early.body, { error: "Function has no deployed version" })

    const live = await deployed({ name: "Bodies", code: echo })
    const bad = await invoke(live.id, { rawBody: "{not json" })
    assert.strictEqual(bad.status, 400)
    assert.deepStrictEqual(bad.body, { error: "Request body is not valid JSON" })
    const badVendor = await invoke(live.id, { rawBody: "{", headers: { "content-type": "application/vnd.api+json" } })
    assert.strictEqual(badVendor.status, 400)
    const text = await invoke(live.id, { rawBody: "{not json", headers: { "content-type": "text/plain" } })
    assert.strictEqual(text.status, 201)
    assert.strictEqual(text.body.body, "{not json")
    assert.strictEqual(text.body.headers["content-type"], "text/plain")
    const empty = await invoke(live.id, { rawBody: "", headers: { "content-type": "application/json" } })
    assert.strictEqual(empty.status, 201, "an empty body is no body")
  })

  it("a thrown error or a timeout answers 500 with detail (<= 512) and the invocation id", async () => {
    const fn = await deployed({
      name: "Thrower",
      runtime_config: { timeout: 1 },
      code: `export default {
        async fetch(request) {
          const kind = new URL(request.url).searchParams.get("kind")
          console.log("about to fail")
          if (kind === "long") throw new Error("x".repeat(2000))
          if (kind === "slow") await new Promise((resolve) => setTimeout(resolve, 5000))
          throw new TypeError("order service unreachable")
        }
      }`
    })
    const thrown = await invoke(fn.id)
    assert.strictEqual(thrown.status, 500)
    assert.deepStrictEqual(Object.keys(thrown.body).sort(), ["detail", "error", "invocation_id"])
    assert.strictEqual(thrown.body.error, "Function invocation failed")
    assert.strictEqual(thrown.body.detail, "TypeError: order service unreachable")
    assert.match(thrown.body.invocation_id, UUID)
    const long = await invoke(fn.id, {}, "?kind=long")
    assert.strictEqual(long.body.detail.length, 512)
    const slow = await invoke(fn.id, {}, "?kind=slow")
    assert.strictEqual(slow.status, 500)
    assert.strictEqual(slow.body.detail, "Function timed out after 1 s")

    const log = await host.request("GET", `/platform/v1/functions/${fn.id}/invocations?status=failed`)
    const record = log.body.data.invocations.find((i: any) => i.id === thrown.body.invocation_id)
    assert.strictEqual(record.status_code, 500)
    assert.strictEqual(record.error_message, "TypeError: order service unreachable")
    assert.deepStrictEqual(record.console_logs.map((l: any) => l.message), ["about to fail"])
  })

  it("rate-limits public invokes to 600 a minute per function (decisions 8.1)", async () => {
    const fn = await deployed({ name: "Popular", code: `async function handler() { return new Response("ok") }`, public_endpoint: true })
    const other = await deployed({ name: "Popular too", code: `async function handler() { return new Response("ok") }`, public_endpoint: true })
    // Near a minute boundary the window could reset mid-run: start in a fresh minute's first 40 s.
    if (Date.now() % 60_000 > 40_000) await new Promise((resolve) => setTimeout(resolve, 60_000 - (Date.now() % 60_000) + 50))
    const statuses = new Map<number, number>()
    for (let i = 0; i < 60; i++) {
      const batch = await Promise.all(Array.from({ length: 10 }, () => invoke(fn.id, { key: null })))
      for (const res of batch) statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1)
    }
    assert.deepStrictEqual([...statuses], [[200, 600]])
    const over = await invoke(fn.id, { key: null })
    assert.strictEqual(over.status, 429)
    assert.deepStrictEqual(over.body, { error: "Rate limit exceeded" })
    assert.strictEqual(over.headers.get("x-ratelimit-limit"), "600")
    assert.strictEqual(over.headers.get("x-ratelimit-remaining"), "0")
    const retryAfter = Number(over.headers.get("retry-after"))
    assert.isAtLeast(retryAfter, 1)
    assert.isAtMost(retryAfter, 60)
    assert.strictEqual(Number(over.headers.get("x-ratelimit-reset")) - Math.floor(Date.now() / 1000) <= 60, true)
    assert.strictEqual((await invoke(other.id, { key: null })).status, 200, "per function")
  }, 120_000)
})

describe("secrets", () => {
  const envReader = `export default {
    async fetch(request, env) {
      return Response.json({ token: env.API_TOKEN ?? null, config: env.CONFIG ?? null, names: Object.keys(env).sort() })
    }
  }`

  it("before the first deploy: [] and 422 with the exact message", async () => {
    const fn = await create({ name: "Secretless", code: envReader })
    const list = await host.request("GET", `/platform/v1/functions/${fn.id}/secrets`)
    assert.strictEqual(list.status, 200)
    assert.deepStrictEqual(list.body, { data: [] })
    const save = await host.request("POST", `/platform/v1/functions/${fn.id}/secrets`, {
      body: { secret: { name: "API_TOKEN", value: "x" } }
    })
    assert.strictEqual(save.status, 422)
    assert.deepStrictEqual(save.body, { error: "Deploy the function before adding secrets" })
    const remove = await host.request("DELETE", `/platform/v1/functions/${fn.id}/secrets/API_TOKEN`)
    assert.strictEqual(remove.status, 422)
    assert.deepStrictEqual(remove.body, { error: "Deploy the function before adding secrets" })
  })

  it("saves (201), lists names and types only, overwrites, rotates without a redeploy, deletes (204)", async () => {
    const fn = await deployed({ name: "Secretive", code: envReader })
    const path = `/platform/v1/functions/${fn.id}/secrets`
    const save = async (name: string, value: unknown) => {
      const res = await host.request("POST", path, { body: { secret: { name, value } } })
      assert.strictEqual(res.status, 201, res.text)
      assert.deepStrictEqual(res.body, { message: "Secret saved" })
    }
    await save("API_TOKEN", "first-value")
    await save("CONFIG", { region: "eu", retries: 3 })
    const list = await host.request("GET", path)
    assert.deepStrictEqual(list.body, { data: [{ name: "API_TOKEN", type: "text" }, { name: "CONFIG", type: "json" }] })
    assert.notInclude(list.text, "first-value")

    const first = await invoke(fn.id)
    assert.deepStrictEqual(first.body, {
      token: "first-value",
      config: { region: "eu", retries: 3 },
      names: ["API_TOKEN", "CONFIG", "KV"]
    })
    await save("API_TOKEN", "rotated-value")
    assert.strictEqual((await invoke(fn.id)).body.token, "rotated-value", "no redeploy needed")
    const fnAfter = await get(fn.id)
    assert.strictEqual(fnAfter.version, 1)
    assert.notInclude(JSON.stringify(fnAfter), "rotated-value")

    const removed = await host.request("DELETE", `${path}/CONFIG`)
    assert.strictEqual(removed.status, 204)
    assert.strictEqual(removed.text, "")
    assert.strictEqual((await invoke(fn.id)).body.config, null)
    const unknown = await host.request("DELETE", `${path}/CONFIG`)
    assert.strictEqual(unknown.status, 404)
    assert.deepStrictEqual(unknown.body, { error: "Secret not found" })
  })

  it("refuses bad names and values with the exact messages", async () => {
    const fn = await deployed({ name: "Strict secrets", code: envReader })
    const path = `/platform/v1/functions/${fn.id}/secrets`
    const refused = async (secret: unknown, error: string) => {
      const res = await host.request("POST", path, { body: { secret } })
      assert.strictEqual(res.status, 422, res.text)
      assert.strictEqual(res.body.error, error)
    }
    await refused({ name: "api-token", value: "x" }, "Secret names may contain only A-Z, 0-9 and _")
    await refused({ name: "lower", value: "x" }, "Secret names may contain only A-Z, 0-9 and _")
    await refused({ name: "A".repeat(65), value: "x" }, "Secret names may be at most 64 characters")
    await refused({ name: "LIST", value: [1, 2] }, "Secret values must be a string or an object")
    await refused({ name: "NUM", value: 3 }, "Secret values must be a string or an object")
    await refused({ name: "BIG", value: "x".repeat(32 * 1024 + 1) }, "Secret values may be at most 32 KB")
    const missing = await host.request("POST", path, { body: { name: "X" } })
    assert.strictEqual(missing.status, 400)
    assert.strictEqual(missing.body.error, "Missing secret envelope in the request body")
  })

  it("a function cannot read another function's secrets", async () => {
    const a = await deployed({ name: "Holder", code: envReader })
    const b = await deployed({ name: "Snoop", code: envReader })
    await host.request("POST", `/platform/v1/functions/${a.id}/secrets`, { body: { secret: { name: "API_TOKEN", value: "a-only" } } })
    assert.strictEqual((await invoke(a.id)).body.token, "a-only")
    assert.deepStrictEqual((await invoke(b.id)).body, { token: null, config: null, names: ["KV"] })
  })
})

describe("invocation log", () => {
  it("records every invoke with bodies (<= 16 KB), console output, status and duration; filters and limits", async () => {
    const fn = await deployed({
      name: "Logged",
      code: `export default {
        async fetch(request) {
          const body = await request.text()
          console.info("got", body.length)
          if (body === "fail") return new Response("bad input", { status: 400 })
          return new Response("é".repeat(10000), { headers: { "content-type": "text/plain" } })
        }
      }`
    })
    await invoke(fn.id, { rawBody: "x".repeat(20000), headers: { "content-type": "text/plain" } })
    await invoke(fn.id, { rawBody: "fail", headers: { "content-type": "text/plain" } })
    const res = await host.request("GET", `/platform/v1/functions/${fn.id}/invocations`)
    assert.strictEqual(res.status, 200, res.text)
    assert.deepStrictEqual(Object.keys(res.body), ["data"])
    assert.deepStrictEqual(Object.keys(res.body.data).sort(), ["function_id", "function_name", "invocations", "total"])
    assert.strictEqual(res.body.data.function_id, fn.id)
    assert.strictEqual(res.body.data.function_name, "Logged")
    assert.strictEqual(res.body.data.total, 2)
    const [failed, ok] = res.body.data.invocations
    assert.deepStrictEqual(Object.keys(ok).sort(), [
      "console_logs",
      "created_at",
      "duration_ms",
      "error_message",
      "id",
      "request_body",
      "response_body",
      "source",
      "status_code"
    ])
    assert.strictEqual(ok.status_code, 200)
    assert.strictEqual(ok.source, "api")
    assert.strictEqual(ok.request_body.length, 16 * 1024)
    assert.isAtMost(new TextEncoder().encode(ok.response_body).byteLength, 16 * 1024)
    assert.match(ok.response_body, /^é+$/)
    assert.strictEqual(ok.error_message, null)
    assert.isAtLeast(ok.duration_ms, 0)
    assert.deepStrictEqual(ok.console_logs.map((l: any) => [l.level, l.message, l.stack]), [["info", "got 20000", null]])
    assert.isString(ok.console_logs[0].logged_at)
    assert.strictEqual(failed.status_code, 400)
    assert.strictEqual(failed.response_body, "bad input")

    const onlyFailed = await host.request("GET", `/platform/v1/functions/${fn.id}/invocations?status=failed`)
    assert.deepStrictEqual(onlyFailed.body.data.invocations.map((i: any) => i.id), [failed.id])
    assert.strictEqual(onlyFailed.body.data.total, 1)
    const onlySuccess = await host.request("GET", `/platform/v1/functions/${fn.id}/invocations?status=success&limit=1`)
    assert.deepStrictEqual(onlySuccess.body.data.invocations.map((i: any) => i.id), [ok.id])
    for (const limit of ["0", "21", "x"]) {
      const bad = await host.request("GET", `/platform/v1/functions/${fn.id}/invocations?limit=${limit}`)
      assert.strictEqual(bad.status, 422)
      assert.strictEqual(bad.body.error, "limit must be between 1 and 20")
    }
    const badStatus = await host.request("GET", `/platform/v1/functions/${fn.id}/invocations?status=maybe`)
    assert.strictEqual(badStatus.status, 422)
  })
})

describe("delete and workflow references", () => {
  const graph = (node: Record<string, unknown>) => ({
    nodes: [
      { id: "start", position: { x: 0, y: 0 }, data: { node_type: "start", config: {} } },
      { id: "step", position: { x: 0, y: 100 }, data: node }
    ],
    edges: [{ source: "start", target: "step" }]
  })

  it("workflow definitions referencing a function validate, and read its name", async () => {
    const fn = await create({ name: "Referenced", code: echo })
    const ok = await host.request("POST", "/platform/v1/workflows", {
      body: { workflow: { name: "Uses a function", definition: graph({ node_type: "function", config: { function_id: fn.id } }) } }
    })
    assert.strictEqual(ok.status, 201, ok.text)
    const def = await host.request("GET", `/platform/v1/workflows/${ok.body.data.id}/definition`)
    assert.strictEqual(def.body.data.definition.nodes[1].data.config.function_name, "Referenced")
    const unknown = await host.request("POST", "/platform/v1/workflows", {
      body: {
        workflow: {
          name: "Uses nothing",
          definition: graph({ node_type: "function", config: { function_id: "00000000-0000-4000-8000-0000000000ff" } })
        }
      }
    })
    assert.strictEqual(unknown.status, 422)
  })

  it("DELETE answers 422 while a function node, decide or agent tool references it; 204 after; invocations stay", async () => {
    const fn = await deployed({ name: "In use", code: `async function handler() { return new Response("{}") }` })
    await invoke(fn.id)
    assert.strictEqual((await host.request("GET", `/platform/v1/functions/${fn.id}/invocations`)).body.data.total, 1)
    const workflow = await host.request("POST", "/platform/v1/workflows", {
      body: { workflow: { name: "Calls In use", definition: graph({ node_type: "function", config: { function_id: fn.id } }) } }
    })
    assert.strictEqual(workflow.status, 201, workflow.text)
    const refused = await host.request("DELETE", `/platform/v1/functions/${fn.id}`)
    assert.strictEqual(refused.status, 422)
    assert.deepStrictEqual(refused.body, { error: "Function is used by workflow Calls In use" })

    // An archived workflow still references it.
    const archived = await host.request("PATCH", `/platform/v1/workflows/${workflow.body.data.id}`, { body: { workflow: { status: "archived" } } })
    assert.strictEqual(archived.status, 200, archived.text)
    assert.strictEqual((await host.request("DELETE", `/platform/v1/functions/${fn.id}`)).status, 422)
    assert.strictEqual((await host.request("DELETE", `/platform/v1/workflows/${workflow.body.data.id}`)).status, 204)

    const removed = await host.request("DELETE", `/platform/v1/functions/${fn.id}`)
    assert.strictEqual(removed.status, 204)
    assert.strictEqual((await host.request("GET", `/platform/v1/functions/${fn.id}`)).status, 404)
    assert.strictEqual((await invoke(fn.id)).status, 404)
    const kept = await Effect.runPromise(invocationsRepo.list(projectA, fn.id, { limit: 10 }))
    assert.strictEqual(kept.total, 1, "invocations survive the function")
  })
})
