/**
 * Function runtime (workerd) benchmark, every figure beside its baseline of
 * the same run:
 *
 * - invoke throughput and latency through the `FunctionRuntime` port
 *   (supervisor, dispatcher, Worker Loader, console capture) against the same
 *   function served by a plain workerd process called directly over a unix
 *   socket, both driven from this thread with the same concurrency, in
 *   alternating windows;
 * - another function's latency while a `while(true)` runaway holds a process;
 * - deploy-to-first-answer (a new function deployed, then invoked);
 * - memory per loaded function: resident size of one process before and
 *   after loading `functions` more functions.
 *
 *   node --max-semi-space-size=8 --conditions=@parley/source bench/functions.ts
 */
import { FunctionRuntime, type FunctionLimits, type FunctionRequest } from "@parley/core"
import { layerMemoryFunctionKv } from "@parley/core/testing"
import { Clock, Effect, Fiber, Layer, References } from "effect"
import * as ChildProcess from "node:child_process"
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { layerWorkerdFunctionRuntime, workerdPackage, WorkerdSupervisor } from "../packages/http-node/src/adapters/workerd/Workerd.ts"

export interface FunctionsBenchOptions {
  readonly durationMs?: number | undefined
  /** Invocations in flight at once. */
  readonly concurrency?: number | undefined
  /** Functions loaded for the memory figure. */
  readonly functions?: number | undefined
}

export interface Throughput {
  readonly requests: number
  readonly errors: number
  readonly rps: number
  readonly p50Ms: number
  readonly p99Ms: number
}

export interface FunctionsBenchResult {
  readonly concurrency: number
  readonly port: Throughput
  readonly direct: Throughput
  readonly runaway: { readonly p50Ms: number; readonly p99Ms: number; readonly invocations: number }
  readonly coldDeployToAnswerMs: number
  readonly deployToAnswerP50Ms: number
  readonly deployToAnswerMaxMs: number
  readonly functions: number
  readonly rssBeforeMb: number
  readonly rssAfterMb: number
  readonly perFunctionMb: number
}

export const percentile = (samples: ReadonlyArray<number>, p: number) => {
  const sorted = [...samples].sort((a, b) => a - b)
  return sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!
}

export const code = `export default {
  async fetch(request) {
    const input = await request.json()
    return Response.json({ ok: true, echo: input.n })
  }
}`
const limits: FunctionLimits = { timeoutMs: 5_000, memoryMb: 128 }
const payload = new TextEncoder().encode(JSON.stringify({ n: 42 }))
const invocation: FunctionRequest = {
  method: "POST",
  url: "/invoke",
  headers: { "content-type": "application/json" },
  body: payload
}

interface Window {
  readonly latencies: Array<number>
  errors: number
  seconds: number
}

/** `concurrency` closed loops of `once` for `durationMs`, added to `into`. */
const closedLoop = <E, R>(once: Effect.Effect<unknown, E, R>, durationMs: number, concurrency: number, into: Window) =>
  Effect.gen(function*() {
    const start = performance.now()
    const deadline = start + durationMs
    const worker = Effect.gen(function*() {
      while (performance.now() < deadline) {
        const sent = performance.now()
        const ok = yield* once.pipe(Effect.as(true), Effect.orElseSucceed(() => false))
        if (ok) into.latencies.push(performance.now() - sent)
        else into.errors++
      }
    })
    yield* Effect.all(Array.from({ length: concurrency }, () => worker), { concurrency: "unbounded", discard: true })
    into.seconds += (performance.now() - start) / 1000
  })

const window = (): Window => ({ latencies: [], errors: 0, seconds: 0 })

const summary = (measured: Window): Throughput => ({
  requests: measured.latencies.length,
  errors: measured.errors,
  rps: measured.latencies.length / measured.seconds,
  p50Ms: percentile(measured.latencies, 50),
  p99Ms: percentile(measured.latencies, 99)
})

/** The same function as a plain workerd service on a unix socket: workerd with nothing of Parley's in front. */
const directWorkerd = Effect.acquireRelease(
  Effect.promise(async () => {
    const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "parley-bench-workerd-"))
    const socketPath = Path.join(dir, "direct.sock")
    Fs.writeFileSync(Path.join(dir, "function.js"), code)
    Fs.writeFileSync(
      Path.join(dir, "config.capnp"),
      `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [(name = "fn", worker = (
    modules = [(name = "function.js", esModule = embed "function.js")],
    compatibilityDate = ${JSON.stringify(workerdPackage().compatibilityDate)},
  ))],
  sockets = [(name = "http", address = ${JSON.stringify(`unix:${socketPath}`)}, http = (), service = "fn")],
);
`
    )
    const child = ChildProcess.spawn(workerdPackage().default, ["serve", Path.join(dir, "config.capnp")], {
      cwd: dir,
      env: {},
      stdio: "ignore"
    })
    const agent = new Http.Agent({ keepAlive: true })
    const call = () =>
      new Promise<void>((resolve, reject) => {
        const req = Http.request({
          socketPath,
          path: "/invoke",
          method: "POST",
          agent,
          headers: { "content-type": "application/json", "content-length": payload.byteLength }
        }, (res) => {
          res.resume()
          res.on("end", () => (res.statusCode === 200 ? resolve() : reject(new Error(String(res.statusCode)))))
        })
        req.on("error", reject)
        req.end(payload)
      })
    for (let attempt = 0; ; attempt++) {
      try {
        await call()
        break
      } catch (error) {
        if (attempt > 400) throw error
        await new Promise((resolve) => setTimeout(resolve, 10))
      }
    }
    return { child, dir, agent, call }
  }),
  ({ agent, child, dir }) =>
    Effect.sync(() => {
      agent.destroy()
      child.kill("SIGKILL")
      Fs.rmSync(dir, { recursive: true, force: true })
    })
)

const runtimeLayer = (processes: number) =>
  Layer.fresh(layerWorkerdFunctionRuntime({ processes }).pipe(Layer.provideMerge(layerMemoryFunctionKv)))

/**
 * Port and direct workerd, alternating in short windows so both see the same
 * machine (other work on it shifts both alike); then deploy-to-first-answer.
 */
const throughputAndDeploys = (durationMs: number, concurrency: number) =>
  Effect.gen(function*() {
    const runtime = yield* FunctionRuntime
    const direct = yield* directWorkerd
    const coldStart = performance.now()
    yield* runtime.deploy("bench-echo", 1, code, limits)
    yield* runtime.invoke("bench-echo", invocation, { env: { TOKEN: "t" } })
    const coldDeployToAnswerMs = performance.now() - coldStart

    const viaPort = runtime.invoke("bench-echo", invocation, { env: { TOKEN: "t" } })
    const viaDirect = Effect.promise(() => direct.call())
    yield* closedLoop(viaPort, 500, concurrency, window())
    yield* closedLoop(viaDirect, 500, concurrency, window())
    const port = window()
    const straight = window()
    const rounds = 6
    for (let round = 0; round < rounds; round++) {
      yield* closedLoop(viaPort, durationMs / rounds, concurrency, port)
      yield* closedLoop(viaDirect, durationMs / rounds, concurrency, straight)
    }

    const deploys: Array<number> = []
    for (let i = 0; i < 20; i++) {
      const started = performance.now()
      yield* runtime.deploy(`bench-deploy-${i}`, 1, code.replace("ok: true", `ok: ${i}`), limits)
      yield* runtime.invoke(`bench-deploy-${i}`, invocation, { env: {} })
      deploys.push(performance.now() - started)
    }
    return {
      port: summary(port),
      direct: summary(straight),
      coldDeployToAnswerMs,
      deployToAnswerP50Ms: percentile(deploys, 50),
      deployToAnswerMaxMs: Math.max(...deploys)
    }
  }).pipe(Effect.scoped, Effect.provide(runtimeLayer(2)))

const runawayLatency = Effect.gen(function*() {
  const runtime = yield* FunctionRuntime
  yield* runtime.deploy(
    "bench-spinner",
    1,
    `export default { async fetch() { while (true) {} } }`,
    { timeoutMs: 2_000, memoryMb: 128 }
  )
  yield* runtime.deploy("bench-other", 1, code, limits)
  yield* runtime.invoke("bench-other", invocation, { env: {} })
  const spinner = yield* runtime.invoke("bench-spinner", invocation, { env: {} }).pipe(Effect.ignore, Effect.forkChild)
  yield* Effect.sleep(20)
  const latencies: Array<number> = []
  const start = yield* Clock.currentTimeMillis
  while ((yield* Clock.currentTimeMillis) - start < 1_800) {
    const sent = performance.now()
    yield* runtime.invoke("bench-other", invocation, { env: {} })
    latencies.push(performance.now() - sent)
  }
  yield* Fiber.join(spinner)
  return { p50Ms: percentile(latencies, 50), p99Ms: percentile(latencies, 99), invocations: latencies.length }
}).pipe(Effect.provide(runtimeLayer(2)))

const memoryPerFunction = (functions: number) =>
  Effect.gen(function*() {
    const runtime = yield* FunctionRuntime
    const supervisor = yield* WorkerdSupervisor
    yield* runtime.deploy("bench-memory-0", 1, code, limits)
    yield* runtime.invoke("bench-memory-0", invocation, { env: {} })
    yield* Effect.sleep(200)
    const before = (yield* supervisor.measure)[0]?.rssKb ?? 0
    for (let i = 1; i <= functions; i++) {
      yield* runtime.deploy(`bench-memory-${i}`, 1, code.replace("ok: true", `ok: ${i}`), limits)
      yield* runtime.invoke(`bench-memory-${i}`, invocation, { env: {} })
    }
    yield* Effect.sleep(200)
    const after = (yield* supervisor.measure)[0]?.rssKb ?? 0
    return {
      functions,
      rssBeforeMb: before / 1024,
      rssAfterMb: after / 1024,
      perFunctionMb: (after - before) / 1024 / functions
    }
  }).pipe(Effect.provide(runtimeLayer(1)))

/** Runs every measurement, prints the table and answers the figures. */
export const benchFunctions = (options: FunctionsBenchOptions = {}): Effect.Effect<FunctionsBenchResult> =>
  Effect.gen(function*() {
    const durationMs = options.durationMs ?? 5_000
    const concurrency = options.concurrency ?? 16
    const measured = yield* throughputAndDeploys(durationMs, concurrency)
    const runaway = yield* runawayLatency
    const memory = yield* memoryPerFunction(options.functions ?? 50)
    const result: FunctionsBenchResult = {
      concurrency,
      port: measured.port,
      direct: measured.direct,
      runaway,
      coldDeployToAnswerMs: measured.coldDeployToAnswerMs,
      deployToAnswerP50Ms: measured.deployToAnswerP50Ms,
      deployToAnswerMaxMs: measured.deployToAnswerMaxMs,
      ...memory
    }
    console.log(formatFunctionsBench(result))
    return result
  }).pipe(
    Effect.orDie,
    // The runaway is killed on purpose: its warnings would only clutter the table.
    Effect.provideService(References.MinimumLogLevel, "Error")
  )

export const formatFunctionsBench = (result: FunctionsBenchResult): string => {
  const row = (name: string, r: Throughput) =>
    `  ${name.padEnd(40)} ${r.rps.toFixed(0).padStart(7)} inv/s   p50 ${r.p50Ms.toFixed(2)} ms   p99 ${
      r.p99Ms.toFixed(2)
    } ms   errors ${r.errors}`
  return [
    `Functions (workerd ${workerdPackage().version}, ${result.concurrency} invocations in flight)`,
    row("FunctionRuntime.invoke (supervisor)", result.port),
    row("workerd called directly (same function)", result.direct),
    `  added at p50: ${(result.port.p50Ms - result.direct.p50Ms).toFixed(2)} ms (target <= 2 ms through the HTTP API)`,
    `  another function during a while(true) runaway: p50 ${result.runaway.p50Ms.toFixed(2)} ms, p99 ${
      result.runaway.p99Ms.toFixed(2)
    } ms over ${result.runaway.invocations} invocations (target p99 < 100 ms)`,
    `  deploy to first answer: first (starts the process) ${result.coldDeployToAnswerMs.toFixed(1)} ms, then p50 ${
      result.deployToAnswerP50Ms.toFixed(1)
    } ms, max ${result.deployToAnswerMaxMs.toFixed(1)} ms`,
    `  memory per loaded function: ${result.perFunctionMb.toFixed(2)} MB (RSS ${result.rssBeforeMb.toFixed(0)} -> ${
      result.rssAfterMb.toFixed(0)
    } MB over ${result.functions} functions)`
  ].join("\n")
}

if (process.argv[1] !== undefined && Path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  Effect.runPromise(benchFunctions({ durationMs: Number(process.env.BENCH_SECONDS ?? 5) * 1000 })).catch((error) => {
    console.error(error)
    process.exitCode = 1
  })
}
