/**
 * What recording every API request for log search costs: the authenticated `GET /platform/v1/workflows/<id>` of
 * `bench/http.ts` against two hosts in the same run, one recording requests (the default) and one with
 * `PARLEY_LOG_API_REQUESTS=false`, each over its own embedded PostgreSQL. Two pairs, one started each way round,
 * each measured in three alternating rounds, so neither the start order nor drift of a shared machine favours one;
 * the figures are the sums.
 */
import { LogRecorder } from "@parley/core"
import { Context, Effect } from "effect"
import { SqlClient } from "effect/sql"
import { processTreeCpuMicros } from "./cpu.ts"
import { startBenchHost } from "./host.ts"
import { load, type LoadResult } from "./load.ts"

export interface LogSearchBenchResult {
  readonly logged: LoadResult
  readonly unlogged: LoadResult
  /** Requests per second with recording over without. */
  readonly ratio: number
  /** Entries the recording host wrote. */
  readonly entries: number
  /**
   * PostgreSQL's CPU (every server process) per 1,000 requests measured, recording and not: steadier than req/s on
   * a shared machine; the difference is what recording costs the database. Undefined without Linux's `/proc`.
   */
  readonly postgresCpuMsPer1000: { readonly logged: number; readonly unlogged: number } | undefined
  /** The host's CPU (this process but the load generator's thread) per 1,000 requests, recording and not. */
  readonly hostCpuMsPer1000: { readonly logged: number; readonly unlogged: number }
}

const KEY = "pk_bench_logsearch_0123456789abcdef"

const combine = (a: LoadResult, b: LoadResult): LoadResult => ({
  connections: a.connections,
  requests: a.requests + b.requests,
  errors: a.errors + b.errors,
  seconds: a.seconds + b.seconds,
  rps: (a.requests + b.requests) / (a.seconds + b.seconds),
  // Percentiles of the rounds: the mean of their medians, the worst of their tails.
  p50Ms: (a.p50Ms * a.requests + b.p50Ms * b.requests) / (a.requests + b.requests),
  p99Ms: Math.max(a.p99Ms, b.p99Ms),
  generatorCpuMicros: a.generatorCpuMicros + b.generatorCpuMicros
})

/** One pair of hosts started in the given order, measured in alternating rounds. */
const measurePair = (loggedFirst: boolean, options: { readonly durationMs: number; readonly connections: number }) =>
  Effect.gen(function*() {
    const target = (env: Record<string, string>) =>
      Effect.gen(function*() {
        const host = yield* startBenchHost(KEY, { env })
        const created = yield* Effect.promise(() =>
          fetch(`${host.url}/platform/v1/workflows`, {
            method: "POST",
            headers: { "x-api-key": KEY, "content-type": "application/json" },
            body: JSON.stringify({ workflow: { name: "Bench" } })
          }).then((r) => r.json() as Promise<{ data: { id: string } }>)
        )
        return { ...host, target: `${host.url}/platform/v1/workflows/${created.data.id}` }
      })
    const off = { PARLEY_LOG_API_REQUESTS: "false" }
    const started = [yield* target(loggedFirst ? {} : off), yield* target(loggedFirst ? off : {})]
    const [logged, unlogged] = loggedFirst ? [started[0]!, started[1]!] : [started[1]!, started[0]!]
    const run = (url: string) => Effect.promise(() => load({ url, headers: { "x-api-key": KEY }, ...options }))
    // Warm both up (JIT, connection pools) before measuring.
    yield* run(logged.target).pipe(Effect.andThen(run(unlogged.target)))
    const recorded: Array<LoadResult> = []
    const notRecorded: Array<LoadResult> = []
    const cpu = { logged: 0, unlogged: 0 }
    const hostCpu = { logged: 0, unlogged: 0 }
    // A round's server CPU: from its start to its end plus whatever the recorder still writes for it.
    const measured = (host: typeof logged, into: "logged" | "unlogged") =>
      Effect.gen(function*() {
        const before = processTreeCpuMicros(host.postgresPid) ?? 0
        const hostBefore = process.cpuUsage()
        const result = yield* run(host.target)
        yield* Context.get(host.context, LogRecorder).flush
        cpu[into] += (processTreeCpuMicros(host.postgresPid) ?? 0) - before
        const used = process.cpuUsage(hostBefore)
        hostCpu[into] += used.user + used.system - result.generatorCpuMicros
        return result
      })
    for (const recordedFirst of [loggedFirst, !loggedFirst, loggedFirst]) {
      for (const recording of recordedFirst ? [true, false] : [false, true]) {
        if (recording) recorded.push(yield* measured(logged, "logged"))
        else notRecorded.push(yield* measured(unlogged, "unlogged"))
      }
    }
    const sql = Context.get(logged.context, SqlClient.SqlClient)
    const [{ entries }] = yield* sql<{ readonly entries: number }>`SELECT count(*)::int AS entries FROM log_entries`.pipe(Effect.orDie)
    return { recorded, notRecorded, entries, cpu, hostCpu }
  }).pipe(Effect.scoped)

export const benchLogSearch = (options: { readonly durationMs: number; readonly connections: number }) =>
  Effect.gen(function*() {
    // Which host of a pair starts first shifted the figures by up to 20 % with recording off on both: each order once.
    const first = yield* measurePair(true, options)
    const second = yield* measurePair(false, options)
    const withLog = [...first.recorded, ...second.recorded].reduce(combine)
    const without = [...first.notRecorded, ...second.notRecorded].reduce(combine)
    const per1000 = (micros: number, requests: number) => micros / requests
    const postgresCpuMsPer1000 = processTreeCpuMicros(process.pid) === undefined ? undefined : {
      logged: per1000(first.cpu.logged + second.cpu.logged, withLog.requests),
      unlogged: per1000(first.cpu.unlogged + second.cpu.unlogged, without.requests)
    }
    return {
      logged: withLog,
      unlogged: without,
      ratio: withLog.rps / without.rps,
      entries: first.entries + second.entries,
      postgresCpuMsPer1000,
      hostCpuMsPer1000: {
        logged: per1000(first.hostCpu.logged + second.hostCpu.logged, withLog.requests),
        unlogged: per1000(first.hostCpu.unlogged + second.hostCpu.unlogged, without.requests)
      }
    } satisfies LogSearchBenchResult
  })

export const formatLogSearchBench = (r: LogSearchBenchResult): string => {
  const row = (name: string, s: LoadResult) =>
    `  ${name.padEnd(34)} ${s.rps.toFixed(0).padStart(7)} req/s   p50 ${s.p50Ms.toFixed(2)} ms   p99 ${s.p99Ms.toFixed(2)} ms   errors ${s.errors}`
  return [
    "Authenticated GET /platform/v1/workflows/<id>, requests recorded for log search or not (Postgres storage)",
    row("recorded (default)", r.logged),
    row("PARLEY_LOG_API_REQUESTS=false", r.unlogged),
    `  ratio recorded / not: ${r.ratio.toFixed(3)} (target >= 0.90); ${r.entries} entries written`,
    ...(r.postgresCpuMsPer1000 === undefined ? [] : [
      `  PostgreSQL CPU per 1,000 requests: ${r.postgresCpuMsPer1000.logged.toFixed(0)} ms recorded, ${
        r.postgresCpuMsPer1000.unlogged.toFixed(0)
      } ms not (recording: ${(r.postgresCpuMsPer1000.logged - r.postgresCpuMsPer1000.unlogged).toFixed(0)} ms)`
    ]),
    `  host CPU per 1,000 requests: ${r.hostCpuMsPer1000.logged.toFixed(0)} ms recorded, ${r.hostCpuMsPer1000.unlogged.toFixed(0)} ms not (recording: ${
      (r.hostCpuMsPer1000.logged - r.hostCpuMsPer1000.unlogged).toFixed(0)
    } ms)`,
    ""
  ].join("\n")
}
