/**
 * What one request costs the host, in terms a shared machine's load does not move much: the host thread's CPU per
 * request (`process.threadCpuUsage` of the main thread: the load generator runs in a thread of its own, PostgreSQL
 * in its own processes), the bytes it allocated per request (the host heap's growth between collections, summed
 * over the run by V8's `GCProfiler`), PostgreSQL statements (`pg_stat_statements`, top-level) and commits per
 * request, and the host's writes to PostgreSQL's sockets during the requests (round trips: each one a hop a loaded
 * machine makes a request wait for), and PostgreSQL's CPU per request (its process tree, background work included)
 * and its statements' execution time. Parts (`REQUEST_COST_PARTS`, default `get,get-unrecorded,list,send`):
 * - `get`: the authenticated `GET /platform/v1/workflows/<id>` of `bench/http.ts` (log search recording on), and
 *   its baseline: a bare `node:http` server in the same thread answering the same bytes;
 * - `get-unrecorded`: the same on a host with `PARLEY_LOG_API_REQUESTS=false` (what recording costs, by difference);
 * - `list`: `GET /platform/v1/workflows?per_page=50` over 50 workflows of 51-node graphs (`REQUEST_COST_LIST_N`
 *   requests, default 1000), and the same on a host whose list reads the graphs and drops them (`list, graphs read`:
 *   the list before its summary read);
 * - `send`: a proxied text send (`POST /proxy/v24.0/<pnid>/messages`) with the in-process network's webhooks muted,
 *   so the send's own request path is counted, not its status reports (the inbound path's work).
 *
 *   node --max-semi-space-size=8 --conditions=@parley/source bench/requestCost.ts   (REQUEST_COST_N requests, default 3000)
 *
 * With `REQUEST_COST_PROFILE=<dir>`, each part's measured requests are also profiled: `<part>.cpuprofile` (CPU) and
 * `<part>.heapprofile` (sampled allocations, collected ones included); `bench/profileByFile.ts` sums either by file.
 */
import { Simulator } from "@parley/core/simulators"
import { WorkflowsRepo } from "@parley/core"
import { layerStorage } from "@parley/store-pg"
import { Context, Effect, Layer, Option, References } from "effect"
import { SqlClient } from "effect/sql"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Inspector from "node:inspector/promises"
import * as V8 from "node:v8"
import { processTreeCpuMicros } from "./cpu.ts"
import { chainDefinition, countDatabaseWrites } from "./executions.ts"
import { startBenchHost } from "./host.ts"
import { load } from "./load.ts"

export interface RequestCost {
  readonly part: string
  readonly requests: number
  readonly errors: number
  /** The host thread's CPU per request, ms. */
  readonly cpuMs: number
  /** Bytes the host allocated per request (young and old generation alike). */
  readonly allocatedBytes: number
  readonly statements: number
  readonly commits: number
  /** PostgreSQL's CPU per request, ms (its whole process tree; undefined without `/proc`). */
  readonly postgresCpuMs: number | undefined
  /** The execution time of PostgreSQL's statements per request, ms (`pg_stat_statements`). */
  readonly postgresExecMs: number
  /** The host's writes to PostgreSQL's sockets (round trips, or pipelined batches): what latency pays per hop. */
  readonly writes: number
}

const KEY = "pk_bench_cost_0123456789abcdef0123"
const SIM_NUMBER = { phoneNumberId: "100000000000001", businessAccountId: "200000000000001", token: "parley-simulator-token" }
const CONTACTS = Array.from({ length: 256 }, (_, i) => `1555200${String(i).padStart(4, "0")}`)

/**
 * Bytes allocated on the host's heap while `run` runs: each collection's heap before it, less the heap the previous
 * one left (or the start's), plus the growth since the last one.
 */
const allocatedDuring = async <A>(run: () => Promise<A>): Promise<[A, number]> => {
  const profiler = new V8.GCProfiler()
  const start = V8.getHeapStatistics().used_heap_size
  profiler.start()
  const result = await run()
  const end = V8.getHeapStatistics().used_heap_size
  const { statistics } = profiler.stop()
  let allocated = 0
  let left = start
  for (const gc of statistics) {
    allocated += gc.beforeGC.heapStatistics.usedHeapSize - left
    left = gc.afterGC.heapStatistics.usedHeapSize
  }
  return [result, allocated + end - left]
}

/** `run` under V8's CPU profiler and sampling heap profiler, written to `dir` as `<part>.cpuprofile`/`.heapprofile`. */
const profiled = async <A>(dir: string | undefined, part: string, run: () => Promise<A>): Promise<A> => {
  if (dir === undefined) return run()
  const session = new Inspector.Session()
  session.connect()
  await session.post("Profiler.enable")
  await session.post("Profiler.setSamplingInterval", { interval: 100 })
  await session.post("HeapProfiler.enable")
  await session.post("HeapProfiler.startSampling", {
    samplingInterval: 4096,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true
  })
  await session.post("Profiler.start")
  const result = await run()
  const { profile } = await session.post("Profiler.stop")
  const heap = await session.post("HeapProfiler.stopSampling")
  Fs.mkdirSync(dir, { recursive: true })
  Fs.writeFileSync(Path.join(dir, `${part}.cpuprofile`), JSON.stringify(profile))
  Fs.writeFileSync(Path.join(dir, `${part}.heapprofile`), JSON.stringify(heap.profile))
  session.disconnect()
  return result
}

const measure = (
  part: string,
  sql: SqlClient.SqlClient | undefined,
  options: {
    readonly url: string
    readonly method?: string
    readonly bodies?: ReadonlyArray<string>
    readonly n: number
    readonly writes?: () => number
    readonly postgresPid?: number
  }
) =>
  Effect.gen(function*() {
    const counts = sql === undefined ? Effect.succeed({ calls: 0, commits: 0, execMs: 0 }) : Effect.map(
      sql<{ calls: string; commits: string; exec_ms: string }>`SELECT
        (SELECT coalesce(sum(calls), 0) FROM pg_stat_statements)::text AS calls,
        (SELECT coalesce(sum(total_exec_time), 0) FROM pg_stat_statements)::text AS exec_ms,
        (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database())::text AS commits`,
      (rows) => ({ calls: Number(rows[0]!.calls), commits: Number(rows[0]!.commits), execMs: Number(rows[0]!.exec_ms) })
    )
    const postgresCpu = () => options.postgresPid === undefined ? undefined : processTreeCpuMicros(options.postgresPid)
    const headers = { "x-api-key": KEY, "content-type": "application/json" }
    const run = (requests: number) =>
      load({ url: options.url, method: options.method, bodies: options.bodies, headers, connections: 4, durationMs: 600_000, requests })
    // Warm up (JIT, pools, caches) first.
    yield* Effect.promise(() => run(Math.min(1000, options.n)))
    if (sql !== undefined) yield* sql`SELECT pg_stat_statements_reset()`
    const before = yield* counts
    const writesBefore = options.writes?.() ?? 0
    const postgresBefore = postgresCpu()
    const cpuBefore = process.threadCpuUsage()
    const [result, allocated] = yield* Effect.promise(() => allocatedDuring(() => run(options.n)))
    const cpu = process.threadCpuUsage(cpuBefore)
    const postgresAfter = postgresCpu()
    const writes = (options.writes?.() ?? 0) - writesBefore
    // What the request queued (log entries, a rate-limit lease) is written within a second.
    yield* Effect.sleep("1500 millis")
    if (sql !== undefined) yield* sql`SELECT pg_stat_clear_snapshot()`
    const after = yield* counts
    // `REQUEST_COST_TOP=n`: the statements that ran most often, per request.
    const top = Number(process.env.REQUEST_COST_TOP ?? 0)
    if (sql !== undefined && top > 0) {
      const rows = yield* sql<{ calls: string; query: string }>`
        SELECT s.calls::text AS calls, s.query FROM pg_stat_statements AS s ORDER BY s.calls DESC LIMIT ${top}`
      for (const row of rows) console.log(`  ${part}: ${(Number(row.calls) / options.n).toFixed(2)}  ${row.query.replace(/\s+/g, " ").slice(0, 160)}`)
    }
    // Profiled apart, after the counted run: the profilers' own cost stays out of the figures.
    yield* Effect.promise(() => profiled(process.env.REQUEST_COST_PROFILE, part, () => run(options.n)))
    const per = (x: number) => x / result.requests
    return {
      part,
      requests: result.requests,
      errors: result.errors,
      cpuMs: per((cpu.user + cpu.system) / 1000),
      allocatedBytes: per(allocated),
      // The two counting statements of `after` are left out.
      statements: sql === undefined ? 0 : per(after.calls - before.calls - 2),
      commits: sql === undefined ? 0 : per(after.commits - before.commits - 2),
      postgresCpuMs: postgresBefore === undefined || postgresAfter === undefined ? undefined : per((postgresAfter - postgresBefore) / 1000),
      postgresExecMs: per(after.execMs - before.execMs),
      // Counted over the requests only: what they queued (log batches, leases) after their answers is left out.
      writes: per(writes)
    } satisfies RequestCost
  })

const host = (env: Record<string, string> = {}, storage?: typeof layerStorage) =>
  startBenchHost(KEY, {
    env,
    storage,
    postgres: { shared_preload_libraries: "pg_stat_statements", "pg_stat_statements.track": "top", "pg_stat_statements.max": "5000" }
  }).pipe(
    Effect.tap(({ context }) => Context.get(context, SqlClient.SqlClient)`CREATE EXTENSION IF NOT EXISTS pg_stat_statements`),
    Effect.flatMap((started) =>
      Effect.map(
        Effect.acquireRelease(Effect.sync(() => countDatabaseWrites()), (w) => Effect.sync(w.restore)),
        (writes) => ({ ...started, writes: writes.count })
      )
    )
  )

const post = (url: string, body: unknown) =>
  Effect.promise(() =>
    fetch(url, { method: "POST", headers: { "x-api-key": KEY, "content-type": "application/json" }, body: JSON.stringify(body) })
      .then(async (r) => ({ status: r.status, body: await r.json() as any }))
  )

const getPart = (part: string, env: Record<string, string>, n: number) =>
  Effect.gen(function*() {
    const { context, postgresPid, url, writes } = yield* host(env)
    const created = yield* post(`${url}/platform/v1/workflows`, { workflow: { name: "Bench" } })
    const target = `${url}/platform/v1/workflows/${created.body.data.id}`
    const parley = yield* measure(part, Context.get(context, SqlClient.SqlClient), { url: target, n, writes, postgresPid })
    if (part !== "get") return [parley]
    // The baseline of the same run: a bare `node:http` server in this thread answering the same bytes.
    const body = yield* Effect.promise(() => fetch(target, { headers: { "x-api-key": KEY } }).then((r) => r.text()))
    const bare = Http.createServer((_req, res) => {
      res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
      res.end(body)
    })
    yield* Effect.acquireRelease(
      Effect.promise(() => new Promise<void>((resolve) => bare.listen(0, "127.0.0.1", resolve))),
      () => Effect.promise(() => new Promise<void>((resolve) => bare.close(() => resolve())))
    )
    const port = (bare.address() as { port: number }).port
    return [parley, yield* measure("bare node:http", undefined, { url: `http://127.0.0.1:${port}/`, n })]
  }).pipe(Effect.scoped)

/** The storage of a list that reads every graph and drops it, as `GET /platform/v1/workflows` did before `listSummaries`. */
const graphsRead = Layer.merge(
  layerStorage,
  Layer.effect(
    WorkflowsRepo,
    Effect.gen(function*() {
      const repo = yield* WorkflowsRepo
      return WorkflowsRepo.of({
        ...repo,
        listSummaries: (projectId, filter, window) =>
          Effect.map(repo.list(projectId, filter, window), (slice) => ({
            ...slice,
            items: slice.items.map(({ definition: _, ...summary }) => summary)
          }))
      })
    })
  ).pipe(Layer.provide(layerStorage))
)

const LISTED = 50

const listPart = (part: string, storage: typeof layerStorage, n: number) =>
  Effect.gen(function*() {
    const { context, postgresPid, url, writes } = yield* host({}, storage)
    for (let i = 0; i < LISTED; i++) {
      const created = yield* post(`${url}/platform/v1/workflows`, { workflow: { name: `Bench ${i}`, definition: chainDefinition(50) } })
      if (created.status !== 201) return yield* Effect.die(new Error(`create: ${created.status} ${JSON.stringify(created.body)}`))
    }
    const target = `${url}/platform/v1/workflows?per_page=${LISTED}`
    const listed = yield* Effect.promise(() => fetch(target, { headers: { "x-api-key": KEY } }).then((r) => r.json() as any))
    if (listed.data.length !== LISTED) return yield* Effect.die(new Error(`listed ${listed.data.length} workflows`))
    return yield* measure(part, Context.get(context, SqlClient.SqlClient), { url: target, n, writes, postgresPid })
  }).pipe(Effect.scoped)

const sendPart = (n: number) =>
  Effect.gen(function*() {
    const { context, postgresPid, url, writes } = yield* host()
    const simulator = Option.getOrThrow(Context.getOption(context, Simulator.NetworkSimulator))
    const connected = yield* post(`${url}/platform/v1/msg/phone_numbers`, {
      msg_config: { phone_number_id: SIM_NUMBER.phoneNumberId, business_account_id: SIM_NUMBER.businessAccountId, access_token: SIM_NUMBER.token }
    })
    if (connected.status !== 201) return yield* Effect.die(new Error(`connect: ${connected.status}`))
    yield* simulator.updateNumber(SIM_NUMBER.phoneNumberId, { throughputPerSecond: 1_000_000, pairBurst: 1_000_000, pairIntervalMs: 1 })
    // Each contact writes first (its 24-hour window open), then the network's webhooks stop.
    yield* Effect.forEach(CONTACTS, (from) => simulator.inbound(SIM_NUMBER.phoneNumberId, { from, message: { type: "text", text: { body: "hi" } } }), {
      discard: true
    })
    yield* Effect.promise(async () => {
      for (let i = 0; i < 300; i++) {
        const page = await fetch(`${url}/platform/v1/msg/conversations?per_page=1`, { headers: { "x-api-key": KEY } }).then((x) => x.json()) as any
        if (page.meta.total_count >= CONTACTS.length) return
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
      throw new Error("the contacts' first messages were not all stored")
    })
    yield* simulator.setSink(undefined)
    const bodies = CONTACTS.map((to) => JSON.stringify({ messaging_product: "whatsapp", to, type: "text", text: { body: "hello" } }))
    return yield* measure("send", Context.get(context, SqlClient.SqlClient), {
      url: `${url}/proxy/v24.0/${SIM_NUMBER.phoneNumberId}/messages`,
      method: "POST",
      bodies,
      n,
      writes,
      postgresPid
    })
  }).pipe(Effect.scoped)

export const benchRequestCost = (options: { readonly n: number; readonly listN: number; readonly parts: ReadonlyArray<string> }) =>
  Effect.gen(function*() {
    const results: Array<RequestCost> = []
    for (const part of options.parts) {
      if (part === "get") results.push(...yield* getPart(part, {}, options.n))
      if (part === "get-unrecorded") results.push(...yield* getPart(part, { PARLEY_LOG_API_REQUESTS: "false" }, options.n))
      if (part === "list") {
        // Before (the graphs read) and after, on hosts of their own, twice in alternation: the load moves between them.
        for (let round = 0; round < 2; round++) {
          results.push(yield* listPart("list, graphs read", graphsRead, options.listN))
          results.push(yield* listPart("list", layerStorage, options.listN))
        }
      }
      if (part === "send") results.push(yield* sendPart(options.n))
    }
    return results
  })

export const formatRequestCost = (results: ReadonlyArray<RequestCost>): string => {
  const get = results.find((r) => r.part === "get")
  const bare = results.find((r) => r.part === "bare node:http")
  return [
    "Per request, counted (the host thread's CPU, bytes it allocated, PostgreSQL statements and commits)",
    ...results.map((r) =>
      `  ${r.part.padEnd(17)} ${String(r.requests).padStart(6)} requests (errors ${r.errors})   CPU ${r.cpuMs.toFixed(3)} ms   allocated ${
        (r.allocatedBytes / 1024).toFixed(1)
      } KB   statements ${r.statements.toFixed(2)}   commits ${r.commits.toFixed(2)}   writes to PostgreSQL ${r.writes.toFixed(2)}   PostgreSQL CPU ${
        r.postgresCpuMs === undefined ? "n/a" : `${r.postgresCpuMs.toFixed(3)} ms`
      } (statements ${r.postgresExecMs.toFixed(3)} ms)`
    ),
    ...(get === undefined || bare === undefined ? [] : [
      // The GET target (>= 0.5x bare node:http's rate) in CPU terms: on a busy machine the rate follows the CPU.
      `  GET host CPU / bare node:http's: ${(get.cpuMs / bare.cpuMs).toFixed(2)}x (the rate target >= 0.5x needs <= 2x)`
    ]),
    ""
  ].join("\n")
}

if (process.argv[1] !== undefined && Path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const parts = (process.env.REQUEST_COST_PARTS ?? "get,get-unrecorded,list,send").split(",").map((p) => p.trim())
  const n = Number(process.env.REQUEST_COST_N ?? 3000)
  Effect.runPromise(benchRequestCost({ n, listN: Number(process.env.REQUEST_COST_LIST_N ?? 1000), parts }).pipe(
    Effect.map((r) => console.log(formatRequestCost(r))),
    Effect.provideService(References.MinimumLogLevel, "Warn")
  )).catch((error) => {
    console.error(error)
    process.exitCode = 1
  })
}
