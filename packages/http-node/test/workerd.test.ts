/**
 * What only real workerd processes can show: containment of runaway and
 * memory-hungry code, and what function code cannot reach.
 */
import { assert, describe, it } from "@effect/vitest"
import { type FunctionLimits, type FunctionRequest, type FunctionResponse, FunctionRuntime } from "@parley/core"
import { layerMemoryFunctionKv } from "@parley/core/testing"
import { Clock, Effect, Fiber, Layer } from "effect"
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Os from "node:os"
import * as Path from "node:path"
import { layerWorkerdFunctionRuntime, type WorkerdRuntimeOptions, WorkerdSupervisor } from "../src/adapters/workerd/Workerd.ts"

const runtime = (options: WorkerdRuntimeOptions = {}) =>
  Layer.fresh(layerWorkerdFunctionRuntime(options).pipe(Layer.provideMerge(layerMemoryFunctionKv)))

const limits: FunctionLimits = { timeoutMs: 5_000, memoryMb: 128 }
const request = (url = "/", body = ""): FunctionRequest => ({
  method: "POST",
  url,
  headers: {},
  body: new TextEncoder().encode(body)
})
const text = (response: FunctionResponse) => new TextDecoder().decode(response.body)
const percentile = (samples: ReadonlyArray<number>, p: number) => {
  const sorted = [...samples].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!
}
const linux = process.platform === "linux"

const spinning = `export default {
  async fetch(request) {
    if (new URL(request.url).pathname === "/spin") { while (true) {} }
    return new Response("spinner ok")
  }
}`
const answering = (answer: string) => `async function handler() { return new Response(${JSON.stringify(answer)}) }`

describe("workerd runtime", () => {
  it.live("starts no process before the first deploy, then one per slot in use", () =>
    Effect.gen(function*() {
      const functions = yield* FunctionRuntime
      const supervisor = yield* WorkerdSupervisor
      assert.deepStrictEqual(yield* supervisor.stats, [])
      yield* functions.deploy("lazy-a", 1, answering("a"), limits)
      assert.strictEqual((yield* supervisor.stats).length, 1)
      yield* functions.deploy("lazy-b", 1, answering("b"), limits)
      const stats = yield* supervisor.stats
      assert.deepStrictEqual(stats.map((proc) => proc.slot).sort(), [0, 1], "functions spread over both processes")
    }).pipe(Effect.provide(runtime({ processes: 2 }))), 30_000)

  it.live("while(true) times out that invocation only; other functions keep answering, the process comes back", () =>
    Effect.gen(function*() {
      const functions = yield* FunctionRuntime
      const supervisor = yield* WorkerdSupervisor
      const spinLimits = { timeoutMs: 1_000, memoryMb: 128 }
      yield* functions.deploy("spinner", 1, spinning, spinLimits) // slot 0
      yield* functions.deploy("echo", 1, answering("echo"), limits) // slot 1
      yield* functions.deploy("neighbour", 1, answering("neighbour"), limits) // slot 0, with the spinner
      const before = yield* supervisor.stats

      const runaway = yield* Effect.flip(functions.invoke("spinner", request("/spin"), { env: {} })).pipe(
        Effect.forkChild
      )
      yield* Effect.sleep(30)
      const latencies: Array<number> = []
      const start = yield* Clock.currentTimeMillis
      while ((yield* Clock.currentTimeMillis) - start < 1_300) {
        const sent = performance.now()
        assert.strictEqual(text(yield* functions.invoke("echo", request(), { env: {} })), "echo")
        latencies.push(performance.now() - sent)
      }
      const error = yield* Fiber.join(runaway)
      assert.strictEqual(error.reason, "timeout")
      assert.isAtLeast(error.durationMs, 1_000)
      assert.isBelow(error.durationMs, 2_500)
      const p99 = percentile(latencies, 99)
      console.log(`echo during the runaway: ${latencies.length} invocations, p50 ${percentile(latencies, 50).toFixed(2)} ms, p99 ${p99.toFixed(2)} ms`)
      assert.isBelow(p99, 1_000)

      // The frozen process was killed and a new one took its slot, with its functions loaded again.
      assert.strictEqual(text(yield* functions.invoke("spinner", request("/ok"), { env: {} })), "spinner ok")
      assert.strictEqual(text(yield* functions.invoke("neighbour", request(), { env: {} })), "neighbour")
      const after = yield* supervisor.stats
      const slot0Before = before.find((proc) => proc.slot === 0)!
      const slot0After = after.find((proc) => proc.slot === 0)!
      assert.notStrictEqual(slot0After.pid, slot0Before.pid, "the spinner's process was replaced")
      assert.strictEqual(
        after.find((proc) => proc.slot === 1)!.pid,
        before.find((proc) => proc.slot === 1)!.pid,
        "the other process was left alone"
      )
    }).pipe(Effect.provide(runtime({ processes: 2 }))), 30_000)

  it.live("a function sharing the runaway's process is served by another process once the stall is seen", () =>
    Effect.gen(function*() {
      const functions = yield* FunctionRuntime
      yield* functions.deploy("spinner", 1, spinning, { timeoutMs: 3_000, memoryMb: 128 }) // slot 0
      yield* functions.deploy("other", 1, answering("other"), limits) // slot 1
      yield* functions.deploy("neighbour", 1, answering("neighbour"), limits) // slot 0
      const runaway = yield* Effect.flip(functions.invoke("spinner", request("/spin"), { env: {} })).pipe(
        Effect.forkChild
      )
      // Past stallMs (500) plus a heartbeat (250): the process is marked stalled.
      yield* Effect.sleep(1_000)
      const sent = performance.now()
      assert.strictEqual(text(yield* functions.invoke("neighbour", request(), { env: {} })), "neighbour")
      const took = performance.now() - sent
      console.log(`neighbour of the runaway answered from the other process in ${took.toFixed(2)} ms`)
      assert.isBelow(took, 500)
      assert.strictEqual((yield* Fiber.join(runaway)).reason, "timeout")
    }).pipe(Effect.provide(runtime({ processes: 2 }))), 30_000)

  it.live("a memory blow-up fails that invocation and the runtime recovers", () =>
    Effect.gen(function*() {
      const functions = yield* FunctionRuntime
      yield* functions.deploy(
        "hog",
        1,
        `export default {
          async fetch(request) {
            if (new URL(request.url).pathname === "/ok") return new Response("hog ok")
            const hog = []
            while (true) hog.push(new Array(1_000_000).fill(Math.random()))
          }
        }`,
        limits
      )
      yield* functions.deploy("other", 1, answering("other"), limits)
      yield* functions.deploy("neighbour", 1, answering("neighbour"), limits) // with the hog

      const error = yield* Effect.flip(functions.invoke("hog", request("/blow-up"), { env: {} }))
      assert.strictEqual(error.reason, "crashed")
      assert.include(error.message, "memory")
      assert.isBelow(error.durationMs, limits.timeoutMs)

      assert.strictEqual(text(yield* functions.invoke("neighbour", request(), { env: {} })), "neighbour")
      assert.strictEqual(text(yield* functions.invoke("hog", request("/ok"), { env: {} })), "hog ok")
      assert.strictEqual(text(yield* functions.invoke("other", request(), { env: {} })), "other")
      // And again: a respawned process is as good as the first.
      assert.strictEqual((yield* Effect.flip(functions.invoke("hog", request("/again"), { env: {} }))).reason, "crashed")
      assert.strictEqual(text(yield* functions.invoke("hog", request("/ok"), { env: {} })), "hog ok")
    }).pipe(Effect.provide(runtime({ processes: 2 }))), 30_000)

  it.live("a top-level busy loop fails the deploy with `timeout`; the runtime recovers", () =>
    Effect.gen(function*() {
      const functions = yield* FunctionRuntime
      yield* functions.deploy("before", 1, answering("before"), limits)
      const error = yield* Effect.flip(
        functions.deploy("stuck", 1, `while (true) {}\nexport default { fetch: () => new Response("never") }`, {
          timeoutMs: 1_000,
          memoryMb: 128
        })
      )
      assert.strictEqual(error.reason, "timeout")
      assert.strictEqual(text(yield* functions.invoke("before", request(), { env: {} })), "before")
      yield* functions.deploy("after", 1, answering("after"), limits)
      assert.strictEqual(text(yield* functions.invoke("after", request(), { env: {} })), "after")
    }).pipe(Effect.provide(runtime({ processes: 1 }))), 30_000)

  it.live("code cannot read host files or environment variables; workerd runs with an empty environment", () => {
    const secretFile = Path.join(Fs.mkdtempSync(Path.join(Os.tmpdir(), "parley-host-")), "secret.txt")
    Fs.writeFileSync(secretFile, "host-file-secret")
    process.env.PARLEY_TEST_HOST_SECRET = "host-env-secret"
    return Effect.gen(function*() {
      const functions = yield* FunctionRuntime
      const supervisor = yield* WorkerdSupervisor
      yield* functions.deploy(
        "snoop",
        1,
        `import * as workers from "cloudflare:workers"
export default {
  async fetch(request, env) {
    const out = { processEnv: typeof process === "undefined" ? null : JSON.stringify(process.env), isolateEnv: Object.keys(workers.env) }
    let fs = null
    try { fs = await import("node:fs") } catch (error) { out.fs = error.message }
    for (const path of ["/etc/passwd", "/etc/hostname", ${JSON.stringify(secretFile)}, "/proc/self/environ"]) {
      try { out[path] = fs.readFileSync(path, "utf8") } catch (error) { out[path] = "unreadable: " + error.message }
    }
    try { out.root = fs.readdirSync("/") } catch (error) { out.root = error.message }
    return Response.json(out)
  }
}`,
        limits
      )
      const answer = text(yield* functions.invoke("snoop", request(), { env: {} }))
      const seen = JSON.parse(answer)
      assert.notInclude(answer, "host-file-secret")
      assert.notInclude(answer, "host-env-secret")
      assert.notInclude(answer, "root:")
      assert.include(seen[secretFile], "unreadable")
      assert.include(seen["/etc/passwd"], "unreadable")
      assert.isTrue(seen.processEnv === null || seen.processEnv === "{}", `process.env: ${seen.processEnv}`)
      assert.deepStrictEqual(seen.isolateEnv, ["KV"])
      if (linux) {
        for (const proc of yield* supervisor.stats) {
          assert.strictEqual(Fs.readFileSync(`/proc/${proc.pid}/environ`, "utf8"), "", "workerd's environment is empty")
        }
      }
    }).pipe(
      Effect.provide(runtime()),
      Effect.ensuring(Effect.sync(() => {
        delete process.env.PARLEY_TEST_HOST_SECRET
        Fs.rmSync(Path.dirname(secretFile), { recursive: true, force: true })
      }))
    )
  }, 30_000)

  it.live("a function cannot see another function's secrets, even in the same process", () =>
    Effect.gen(function*() {
      const functions = yield* FunctionRuntime
      yield* functions.deploy(
        "keeper",
        1,
        `async function handler(request, env) {
          globalThis.leaked = env.SECRET_A
          await env.KV.put("private", env.SECRET_A)
          return new Response("kept")
        }`,
        limits
      ) // slot 0
      yield* functions.deploy("elsewhere", 1, answering("x"), limits) // slot 1
      yield* functions.deploy(
        "thief",
        1,
        `import * as workers from "cloudflare:workers"
export default {
  async fetch(request, env) {
    const found = {
      env: JSON.stringify(env), isolateEnv: Object.keys(workers.env), leaked: String(globalThis.leaked),
      kv: await env.KV.get("private"), globals: Object.keys(globalThis).join(",")
    }
    try { found.raw = await workers.env.KV.call({ op: "get", key: "private" }) } catch (error) { found.raw = error.message }
    return Response.json(found)
  }
}`,
        limits
      ) // slot 0, beside the keeper
      assert.strictEqual(text(yield* functions.invoke("keeper", request(), { env: { SECRET_A: "alpha-secret" } })), "kept")
      const seen = text(yield* functions.invoke("thief", request(), { env: { SECRET_B: "beta" } }))
      assert.notInclude(seen, "alpha-secret")
      assert.include(seen, "beta")
    }).pipe(Effect.provide(runtime({ processes: 2 }))), 30_000)

  describe("outbound fetch", () => {
    const withServer = <A, E, R>(use: (port: number, hits: () => number) => Effect.Effect<A, E, R>) =>
      Effect.acquireUseRelease(
        Effect.callback<{ server: Http.Server; hits: { count: number } }>((resume) => {
          const hits = { count: 0 }
          const server = Http.createServer((_, res) => {
            hits.count++
            res.end("private answer")
          })
          server.listen(0, "127.0.0.1", () => resume(Effect.succeed({ server, hits })))
        }),
        ({ hits, server }) => use((server.address() as { port: number }).port, () => hits.count),
        ({ server }) => Effect.callback<void>((resume) => void server.close(() => resume(Effect.void)))
      )

    const prober = (port: number) =>
      `import { connect } from "cloudflare:sockets"
export default {
  async fetch() {
    const results = {}
    for (const url of ["http://127.0.0.1:${port}/", "http://localhost:${port}/", "http://[::1]:${port}/", "http://0x7f000001:${port}/", "http://169.254.169.254/latest/meta-data/"]) {
      try { results[url] = "reached: " + await (await fetch(url)).text() } catch (error) { results[url] = "refused: " + error.message }
    }
    try {
      // workerd reports a socket as opened before its outbound service answers: only data shows a hole.
      const socket = connect("127.0.0.1:${port}")
      await socket.writable.getWriter().write(new TextEncoder().encode("GET / HTTP/1.1\\r\\nhost: x\\r\\n\\r\\n"))
      const chunk = await socket.readable.getReader().read()
      results.socket = chunk.done ? "refused: closed" : "reached: " + new TextDecoder().decode(chunk.value)
    } catch (error) { results.socket = "refused: " + error.message }
    return Response.json(results)
  }
}`

    it.live("to loopback, private and link-local addresses is refused, raw sockets too", () =>
      withServer((port, hits) =>
        Effect.gen(function*() {
          const functions = yield* FunctionRuntime
          yield* functions.deploy("prober", 1, prober(port), limits)
          const results: Record<string, string> = JSON.parse(
            text(yield* functions.invoke("prober", request(), { env: {} }))
          )
          for (const [target, result] of Object.entries(results)) {
            assert.match(result, /^refused: /, `${target}: ${result}`)
          }
          assert.include(results[`http://127.0.0.1:${port}/`], "refused: fetch to 127.0.0.1")
          assert.strictEqual(hits(), 0, "nothing reached the private server")
        }).pipe(Effect.provide(runtime()))
      ), 30_000)

    it.live("goes through the host, which allows private addresses when the operator does", () =>
      withServer((port, hits) =>
        Effect.gen(function*() {
          const functions = yield* FunctionRuntime
          yield* functions.deploy(
            "caller",
            1,
            `async function handler() {
              const response = await fetch("http://127.0.0.1:${port}/hello", { headers: { "x-from": "function" } })
              return new Response(response.status + " " + await response.text())
            }`,
            limits
          )
          assert.strictEqual(text(yield* functions.invoke("caller", request(), { env: {} })), "200 private answer")
          assert.strictEqual(hits(), 1)
        }).pipe(Effect.provide(runtime({ allowPrivateNetwork: true })))
      ), 30_000)
  })

  it.live("recycles processes by age without failing invocations", () =>
    Effect.gen(function*() {
      const functions = yield* FunctionRuntime
      const supervisor = yield* WorkerdSupervisor
      yield* functions.deploy("steady", 1, answering("steady"), limits)
      const first = (yield* supervisor.stats)[0]!.pid
      const start = yield* Clock.currentTimeMillis
      let answered = 0
      while ((yield* Clock.currentTimeMillis) - start < 1_500) {
        assert.strictEqual(text(yield* functions.invoke("steady", request(), { env: {} })), "steady")
        answered++
        yield* Effect.sleep(5)
      }
      const pids = (yield* supervisor.stats).map((proc) => proc.pid)
      assert.notInclude(pids, first, "the first process was recycled")
      assert.isAbove(answered, 50)
    }).pipe(Effect.provide(runtime({ processes: 1, recycleAfterMs: 400, heartbeatMs: 50 }))), 30_000)
})
