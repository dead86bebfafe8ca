/**
 * Functions through Parley's HTTP API (Postgres storage, pg-boss, workerd
 * under the supervisor), every figure beside its baseline of the same run:
 *
 * - `POST /platform/v1/functions/<id>/invoke` (private, API key) requests/s
 *   and p50/p99, against the same function served by a plain workerd process
 *   called directly over loopback HTTP, with the same load generator
 *   (`load.ts`, a worker thread) and the same connections, alternating;
 * - deploy to first answer: `POST .../deploy` until the first 200 of invoke;
 * - memory per loaded function: resident size of the workerd process before
 *   and after deploying and invoking `functions` more functions.
 *
 *   node --max-semi-space-size=8 --conditions=@parley/source bench/functionsHttp.ts
 *
 * `BENCH_FUNCTIONS_HEAP_PROFILE=<path>` writes V8's sampling heap profile of the measured invokes (both surfaces'
 * runs: the direct one allocates little in this process) for Chrome's DevTools.
 */
import { NodeHttpServer } from "@effect/platform-node"
import { Ids, Projects } from "@parley/core"
import { Host } from "@parley/http-node"
import { EmbeddedPostgres, layerFromUrl, layerJobQueue, layerStorage } from "@parley/store-pg"
import { Context, Effect, Layer, References } from "effect"
import { HttpServer } from "effect/http"
import * as ChildProcess from "node:child_process"
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Net from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { layerWorkerdFunctionRuntime, workerdPackage, WorkerdSupervisor } from "../packages/http-node/src/adapters/workerd/Workerd.ts"
import { allocationCounter, sampleAllocations } from "./allocation.ts"
import { code, percentile } from "./functions.ts"
import { benchConfig } from "./host.ts"
import { load, type LoadResult } from "./load.ts"

export interface FunctionsHttpBenchResult {
  readonly connections: number
  /** One connection: the latency Parley adds. */
  readonly parleySerial: LoadResult
  readonly directSerial: LoadResult
  /** `connections` connections: throughput. */
  readonly parley: LoadResult
  readonly direct: LoadResult
  /** The host's CPU (its threads, the load generator's taken out) per invoke at `connections`, in ms. */
  readonly hostCpuMs: number
  /** Bytes the host allocated per invoke at `connections` (counted by its collections: steady on a busy machine). */
  readonly allocatedKb: number
  readonly deployToAnswerFirstMs: number
  readonly deployToAnswerP50Ms: number
  readonly deployToAnswerMaxMs: number
  readonly functions: number
  readonly rssBeforeMb: number
  readonly rssAfterMb: number
  readonly perFunctionMb: number
}

const KEY = "pk_bench_functions_0123456789abcdef"
const body = JSON.stringify({ n: 42 })

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = Net.createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as Net.AddressInfo
      server.close(() => resolve(port))
    })
  })

/** The bench function as a plain workerd service on a loopback port: workerd with nothing of Parley's in front. */
const directWorkerd = Effect.acquireRelease(
  Effect.promise(async () => {
    const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "parley-bench-direct-"))
    const port = await freePort()
    Fs.writeFileSync(Path.join(dir, "function.js"), code)
    Fs.writeFileSync(
      Path.join(dir, "config.capnp"),
      `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [(name = "fn", worker = (
    modules = [(name = "function.js", esModule = embed "function.js")],
    compatibilityDate = ${JSON.stringify(workerdPackage().compatibilityDate)},
  ))],
  sockets = [(name = "http", address = "127.0.0.1:${port}", http = (), service = "fn")],
);
`
    )
    const child = ChildProcess.spawn(workerdPackage().default, ["serve", Path.join(dir, "config.capnp")], {
      cwd: dir,
      env: {},
      stdio: "ignore"
    })
    const url = `http://127.0.0.1:${port}/platform/v1/functions/direct/invoke`
    for (let attempt = 0;; attempt++) {
      const ok = await fetch(url, { method: "POST", body, headers: { "content-type": "application/json" } })
        .then((r) => r.ok, () => false)
      if (ok) break
      if (attempt > 400) throw new Error("workerd did not start")
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    return { child, dir, url }
  }),
  ({ child, dir }) =>
    Effect.sync(() => {
      child.kill("SIGKILL")
      Fs.rmSync(dir, { recursive: true, force: true })
    })
)

export const benchFunctionsHttp = (
  options: { readonly durationMs: number; readonly connections: number; readonly functions?: number | undefined }
): Effect.Effect<FunctionsHttpBenchResult> =>
  Effect.gen(function*() {
    const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "parley-bench-functions-"))
    yield* Effect.addFinalizer(() => Effect.sync(() => Fs.rmSync(dataDir, { recursive: true, force: true })))
    const pg = yield* EmbeddedPostgres.start({ dataDir, throwaway: true })
    // Built like `Parley.make` builds it (its contexts deep, `ContextDepth.ts`), so the figure is the host users run.
    const context = yield* Host.deepContexts(Layer.build(
      Host.serve({ publicUrl: "http://127.0.0.1", functionRuntime: layerWorkerdFunctionRuntime({ processes: 1 }) }).pipe(
        Layer.provideMerge(NodeHttpServer.layer(Http.createServer, { port: 0, host: "127.0.0.1" })),
        Layer.provideMerge(Layer.mergeAll(layerStorage, layerJobQueue(), Ids.layer)),
        Layer.provideMerge(layerFromUrl(pg.url)),
        Layer.provideMerge(benchConfig())
      )
    ))
    const url = yield* HttpServer.addressFormattedWith(Effect.succeed).pipe(Effect.provideContext(context))
    const projects = Context.get(context, Projects)
    const project = yield* projects.create("Bench")
    yield* projects.createKey(project.id, "bench", KEY)
    // The host was given the workerd layer, which also provides its diagnostics.
    const supervisor = Context.get(context as unknown as Context.Context<WorkerdSupervisor>, WorkerdSupervisor)
    const headers = { "x-api-key": KEY, "content-type": "application/json" }
    const call = (method: string, path: string, payload?: unknown) =>
      Effect.promise(() =>
        fetch(`${url}${path}`, {
          method,
          headers,
          ...(payload === undefined ? {} : { body: typeof payload === "string" ? payload : JSON.stringify(payload) })
        }).then(async (r) => ({ status: r.status, body: await r.json().catch(() => undefined) as any }))
      )

    /** Creates a function and answers the time from the deploy request to its first 200 through invoke. */
    const deployToAnswer = (name: string, source: string) =>
      Effect.gen(function*() {
        const created = yield* call("POST", "/platform/v1/functions", { function: { name, code: source } })
        const id = created.body.data.id as string
        const started = performance.now()
        yield* call("POST", `/platform/v1/functions/${id}/deploy`)
        while ((yield* call("POST", `/platform/v1/functions/${id}/invoke`, body)).status !== 200) {
          yield* Effect.sleep(1)
        }
        return { id, ms: performance.now() - started }
      })

    // The first deploy also starts the workerd process.
    const first = yield* deployToAnswer("bench-echo", code)
    const deploys: Array<number> = []
    for (let i = 0; i < 10; i++) deploys.push((yield* deployToAnswer(`bench-deploy-${i}`, code.replace("ok: true", `ok: ${i}`))).ms)

    const direct = yield* directWorkerd
    const target = `${url}/platform/v1/functions/${first.id}/invoke`
    const run = (u: string, h: Record<string, string>, connections: number) =>
      Effect.promise(() => load({ url: u, method: "POST", body, headers: h, connections, durationMs: options.durationMs / 6 }))
    const viaParley = (connections: number) => run(target, headers, connections)
    const viaDirect = (connections: number) => run(direct.url, { "content-type": "application/json" }, connections)
    // Warm both up (JIT, pools), then alternate so both see the same machine.
    yield* viaParley(options.connections).pipe(Effect.andThen(viaDirect(options.connections)))
    const runs = { parley: [] as Array<LoadResult>, direct: [] as Array<LoadResult>, parleySerial: [] as Array<LoadResult>, directSerial: [] as Array<LoadResult> }
    // CPU per request is steadier than requests/s on a shared machine: other work slows the rate, not the work per request.
    let hostCpuMicros = 0
    let allocatedBytes = 0
    const profile = yield* sampleAllocations(process.env.BENCH_FUNCTIONS_HEAP_PROFILE)
    for (let round = 0; round < 2; round++) {
      runs.parleySerial.push(yield* viaParley(1))
      runs.directSerial.push(yield* viaDirect(1))
      const before = process.cpuUsage()
      const allocated = allocationCounter()
      const loaded = yield* viaParley(options.connections)
      allocatedBytes += allocated()
      const used = process.cpuUsage(before)
      hostCpuMicros += used.user + used.system - loaded.generatorCpuMicros
      runs.parley.push(loaded)
      runs.direct.push(yield* viaDirect(options.connections))
    }
    yield* profile

    // Memory: one process; resident size before and after loading more functions.
    const functions = options.functions ?? 30
    yield* Effect.sleep(200)
    const before = (yield* supervisor.measure)[0]?.rssKb ?? 0
    for (let i = 0; i < functions; i++) yield* deployToAnswer(`bench-memory-${i}`, code.replace("ok: true", `ok: ${i + 100}`))
    yield* Effect.sleep(200)
    const after = (yield* supervisor.measure)[0]?.rssKb ?? 0

    return {
      connections: options.connections,
      parleySerial: merge(runs.parleySerial),
      directSerial: merge(runs.directSerial),
      parley: merge(runs.parley),
      direct: merge(runs.direct),
      hostCpuMs: hostCpuMicros / 1000 / runs.parley.reduce((n, r) => n + r.requests, 0),
      allocatedKb: allocatedBytes / 1024 / runs.parley.reduce((n, r) => n + r.requests, 0),
      deployToAnswerFirstMs: first.ms,
      deployToAnswerP50Ms: percentile(deploys, 50),
      deployToAnswerMaxMs: Math.max(...deploys),
      functions,
      rssBeforeMb: before / 1024,
      rssAfterMb: after / 1024,
      perFunctionMb: (after - before) / 1024 / functions
    } satisfies FunctionsHttpBenchResult
  }).pipe(Effect.scoped, Effect.orDie, Effect.provideService(References.MinimumLogLevel, "Error"))

/** Runs of the same load, pooled: their requests per second added up over their time, the worse percentiles kept. */
const merge = (runs: ReadonlyArray<LoadResult>): LoadResult => {
  const requests = runs.reduce((n, r) => n + r.requests, 0)
  const seconds = runs.reduce((n, r) => n + r.seconds, 0)
  return {
    connections: runs[0]?.connections ?? 0,
    requests,
    errors: runs.reduce((n, r) => n + r.errors, 0),
    seconds,
    rps: requests / seconds,
    p50Ms: runs.reduce((m, r) => m + r.p50Ms, 0) / runs.length,
    p99Ms: Math.max(...runs.map((r) => r.p99Ms)),
    generatorCpuMicros: runs.reduce((n, r) => n + r.generatorCpuMicros, 0)
  }
}

export const formatFunctionsHttpBench = (result: FunctionsHttpBenchResult): string => {
  const row = (name: string, r: LoadResult) =>
    `  ${name.padEnd(40)} ${r.rps.toFixed(0).padStart(7)} req/s   p50 ${r.p50Ms.toFixed(2)} ms   p99 ${
      r.p99Ms.toFixed(2)
    } ms   errors ${r.errors}`
  return [
    `Function invoke through the HTTP API (Postgres storage, pg-boss, workerd ${workerdPackage().version})`,
    "  1 connection (latency):",
    row("POST /platform/v1/functions/<id>/invoke", result.parleySerial),
    row("workerd called directly (same function)", result.directSerial),
    `  added by Parley at p50: ${(result.parleySerial.p50Ms - result.directSerial.p50Ms).toFixed(2)} ms (target <= 2 ms)`,
    `  ${result.connections} connections (throughput):`,
    row("POST /platform/v1/functions/<id>/invoke", result.parley),
    row("workerd called directly (same function)", result.direct),
    `  ratio Parley / direct: ${(result.parley.rps / result.direct.rps).toFixed(2)}; added at p50 under load ${
      (result.parley.p50Ms - result.direct.p50Ms).toFixed(2)
    } ms; host CPU per invoke ${result.hostCpuMs.toFixed(3)} ms, allocated ${
      result.allocatedKb.toFixed(0)
    } KB`,
    `  deploy to first answer (POST deploy, pg-boss, load, first invoke): first (starts workerd) ${
      result.deployToAnswerFirstMs.toFixed(1)
    } ms, then p50 ${result.deployToAnswerP50Ms.toFixed(1)} ms, max ${result.deployToAnswerMaxMs.toFixed(1)} ms`,
    `  memory per loaded function: ${result.perFunctionMb.toFixed(2)} MB (workerd RSS ${result.rssBeforeMb.toFixed(0)} -> ${
      result.rssAfterMb.toFixed(0)
    } MB over ${result.functions} functions deployed and invoked through the API)`
  ].join("\n")
}

if (process.argv[1] !== undefined && Path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const seconds = Number(process.env.BENCH_SECONDS ?? 5)
  Effect.runPromise(benchFunctionsHttp({ durationMs: seconds * 1000, connections: 16 })).then(
    (result) => console.log(formatFunctionsHttpBench(result)),
    (error) => {
      console.error(error)
      process.exitCode = 1
    }
  )
}
