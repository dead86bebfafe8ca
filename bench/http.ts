/**
 * Authenticated `GET /platform/v1/workflows/<id>` through Parley (Postgres
 * storage, real HTTP) against a bare `node:http` server answering the same
 * JSON bytes, measured in the same run with the same load generator. Beside the rates, the CPU each answer took:
 * this process's (the host, or the bare server; the load generator's thread left out) and PostgreSQL's server
 * processes' — steadier than req/s on a shared machine, and what bounds the ratio.
 */
import { Effect } from "effect"
import * as Http from "node:http"
import { processTreeCpuMicros } from "./cpu.ts"
import { startEffectFloor } from "./effectFloor.ts"
import { startBenchHost } from "./host.ts"
import { load, type LoadResult } from "./load.ts"

/** CPU per request in ms: the serving process's, and PostgreSQL's (undefined without `/proc`). */
export interface RequestCpu {
  readonly host: number
  readonly postgres: number | undefined
}

export interface HttpBenchResult {
  readonly parley: LoadResult
  readonly bare: LoadResult
  readonly ratio: number
  readonly parleyCpu: RequestCpu
  readonly bareCpu: RequestCpu
  /** effect's `HttpApi` on `@effect/platform-node` with one endpoint and the same JSON (`effectFloor.ts`). */
  readonly floor: LoadResult
  readonly floorCpu: RequestCpu
  /** The same with one pass-through `HttpApiMiddleware`. */
  readonly floorMiddleware: LoadResult
  readonly floorMiddlewareCpu: RequestCpu
  /**
   * Rungs between the floor and the GET, on the same Parley host: `GET /healthz` (a router route through the
   * host's global middleware, request log and input limits, no HttpApi), and the GET without a key (the HttpApi
   * route, its middleware and a 401 encoded, no storage).
   */
  readonly health: LoadResult
  readonly healthCpu: RequestCpu
  readonly noKey: LoadResult
  readonly noKeyCpu: RequestCpu
}

const KEY = "pk_bench_0123456789abcdef0123456789"

export const benchHttp = (options: { readonly durationMs: number; readonly connections: number }) =>
  Effect.gen(function*() {
    const { url, postgresPid } = yield* startBenchHost(KEY)
    const headers = { "x-api-key": KEY, "content-type": "application/json" }
    const created = yield* Effect.promise(() =>
      fetch(`${url}/platform/v1/workflows`, { method: "POST", headers, body: JSON.stringify({ workflow: { name: "Bench" } }) })
        .then((r) => r.json() as Promise<{ data: { id: string } }>)
    )
    const target = `${url}/platform/v1/workflows/${created.data.id}`
    const body = yield* Effect.promise(() => fetch(target, { headers }).then((r) => r.text()))

    const bare = Http.createServer((_req, res) => {
      res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
      res.end(body)
    })
    yield* Effect.acquireRelease(
      Effect.promise(() => new Promise<void>((resolve) => bare.listen(0, "127.0.0.1", resolve))),
      () => Effect.promise(() => new Promise<void>((resolve) => bare.close(() => resolve())))
    )
    const address = bare.address() as { port: number }
    const bareUrl = `http://127.0.0.1:${address.port}/platform/v1/workflows/${created.data.id}`

    const floorUrl = `${yield* startEffectFloor({ body, middleware: false })}/platform/v1/workflows/${created.data.id}`
    const floorMiddlewareUrl = `${yield* startEffectFloor({ body, middleware: true })}/platform/v1/workflows/${created.data.id}`

    const run = (u: string, key = true) => Effect.promise(() => load({ url: u, headers: key ? { "x-api-key": KEY } : {}, ...options }))
    const measured = (u: string, key = true) =>
      Effect.gen(function*() {
        const postgresBefore = processTreeCpuMicros(postgresPid)
        const hostBefore = process.cpuUsage()
        const result = yield* run(u, key)
        const used = process.cpuUsage(hostBefore)
        const postgresAfter = processTreeCpuMicros(postgresPid)
        const perRequest = (micros: number) => micros / 1000 / result.requests
        const cpu: RequestCpu = {
          host: perRequest(used.user + used.system - result.generatorCpuMicros),
          postgres: postgresBefore === undefined || postgresAfter === undefined ? undefined : perRequest(postgresAfter - postgresBefore)
        }
        return [result, cpu] as const
      })
    // Warm both up (JIT, connection pools) before measuring.
    for (const u of [target, bareUrl, floorUrl, floorMiddlewareUrl, `${url}/healthz`]) yield* run(u)
    const [parley, parleyCpu] = yield* measured(target)
    const [bareResult, bareCpu] = yield* measured(bareUrl)
    const [floor, floorCpu] = yield* measured(floorUrl)
    const [floorMiddleware, floorMiddlewareCpu] = yield* measured(floorMiddlewareUrl)
    const [health, healthCpu] = yield* measured(`${url}/healthz`)
    const [noKey, noKeyCpu] = yield* measured(target, false)
    return {
      parley,
      bare: bareResult,
      ratio: parley.rps / bareResult.rps,
      parleyCpu,
      bareCpu,
      floor,
      floorCpu,
      floorMiddleware,
      floorMiddlewareCpu,
      health,
      healthCpu,
      noKey,
      noKeyCpu
    } satisfies HttpBenchResult
  }).pipe(Effect.scoped)

const cpuText = (cpu: RequestCpu) =>
  `host ${cpu.host.toFixed(3)} ms` + (cpu.postgres === undefined ? "" : `, PostgreSQL ${cpu.postgres.toFixed(3)} ms`)

export const formatHttpBench = (r: HttpBenchResult): string => {
  const row = (name: string, x: LoadResult) =>
    `  ${name.padEnd(34)} ${x.rps.toFixed(0).padStart(7)} req/s   p50 ${x.p50Ms.toFixed(2)} ms   p99 ${x.p99Ms.toFixed(2)} ms   errors ${x.errors}`
  return [
    "Authenticated GET /platform/v1/workflows/<id> (Postgres storage)",
    row("Parley", r.parley),
    row("bare node:http, same JSON", r.bare),
    row("effect HttpApi, 1 endpoint (floor)", r.floor),
    row("floor + 1 pass-through middleware", r.floorMiddleware),
    `  ratio Parley / bare: ${r.ratio.toFixed(2)} (target >= 0.5)`,
    `  ratio floor / bare: ${(r.floor.rps / r.bare.rps).toFixed(2)}, with middleware ${(r.floorMiddleware.rps / r.bare.rps).toFixed(2)};` +
    ` Parley / floor: ${(r.parley.rps / r.floor.rps).toFixed(2)}`,
    `  CPU per request: Parley ${cpuText(r.parleyCpu)}; bare ${cpuText(r.bareCpu)}`,
    `  CPU per request: floor host ${r.floorCpu.host.toFixed(3)} ms, with middleware ${r.floorMiddlewareCpu.host.toFixed(3)} ms`,
    `  Parley's rungs, same host: GET /healthz ${r.health.rps.toFixed(0)} req/s, host ${r.healthCpu.host.toFixed(3)} ms;` +
    ` the GET without a key (401, no storage) ${r.noKey.rps.toFixed(0)} req/s, host ${r.noKeyCpu.host.toFixed(3)} ms`,
    ""
  ].join("\n")
}
