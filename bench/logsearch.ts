/**
 * What recording every API request for log search costs: the authenticated `GET /platform/v1/workflows/<id>` of
 * `bench/http.ts` against two hosts in the same run, one recording requests (the default) and one with
 * `PARLEY_LOG_API_REQUESTS=false`, each over its own embedded PostgreSQL. Two pairs, one started each way round,
 * each measured in three alternating rounds, so neither the start order nor drift of a shared machine favours one;
 * the figures are the sums.
 *
 * And what the recorder drains at a burst (`benchRecorderCapacity`, `BENCH_ONLY=recorder`): 20,000 entries shaped as
 * an engine's step events queued at once (the buffer's bound) and written to the host's PostgreSQL, by recorders of
 * one and of two writers (batches of 500 and of 1,000) in alternating rounds: entries per second, and the host's
 * and PostgreSQL's CPU per 1,000 entries; then, to tell what the indexes and the words cost a row, the indexes as
 * migrated, the entries without words, and the indexes without the times' BRIN index, without the words' GIN index and
 * with other pending lists, in alternating rounds (the bench's throwaway database). An engine's peak hands over about 3 entries per step; the recorder keeps
 * up where it drains more than that.
 */
import { Ids, type LogDraft, LogRecorder, LogSearch, MAX_BUFFERED } from "@parley/core"
import { Context, Effect, Layer } from "effect"
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
  /**
   * The host's CPU (this process but the load generator's thread) per 1,000 requests, recording and not, less what
   * the process burns idle. Both hosts of a pair share this process: a round also counts both hosts' timers and
   * pollers, which cost by the second, not by the request, and so weighed more per request on the slower host (the
   * recording one): measured alone for `IDLE_MS` before the rounds and taken off each round by its length.
   */
  readonly hostCpuMsPer1000: { readonly logged: number; readonly unlogged: number }
  /** What the process (and its main thread) burnt per second of the idle windows, both hosts started, no requests. */
  readonly idleCpuMsPerSecond: { readonly process: number; readonly mainThread: number }
  /**
   * The main thread's CPU alone per 1,000 requests (what `bench/requestCost.ts` counts): the requests' and the
   * recorder's JavaScript, without V8's helper threads (the collection of what recording allocated runs partly there),
   * less the main thread's idle share as above.
   */
  readonly mainThreadCpuMsPer1000: { readonly logged: number; readonly unlogged: number }
}

const KEY = "pk_bench_logsearch_0123456789abcdef"
/** The idle window of a pair, before its rounds. */
const IDLE_MS = 3000

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
    const idleProcess = process.cpuUsage()
    const idleMain = process.threadCpuUsage()
    yield* Effect.sleep(IDLE_MS)
    const idleP = process.cpuUsage(idleProcess)
    const idleM = process.threadCpuUsage(idleMain)
    // Microseconds a millisecond.
    const idle = { process: (idleP.user + idleP.system) / IDLE_MS, main: (idleM.user + idleM.system) / IDLE_MS }
    const cpu = { logged: 0, unlogged: 0 }
    const hostCpu = { logged: 0, unlogged: 0 }
    const mainCpu = { logged: 0, unlogged: 0 }
    // A round's server CPU: from its start to its end plus whatever the recorder still writes for it.
    const measured = (host: typeof logged, into: "logged" | "unlogged") =>
      Effect.gen(function*() {
        const before = processTreeCpuMicros(host.postgresPid) ?? 0
        const hostBefore = process.cpuUsage()
        const mainBefore = process.threadCpuUsage()
        const start = performance.now()
        const result = yield* run(host.target)
        yield* Context.get(host.context, LogRecorder).flush
        cpu[into] += (processTreeCpuMicros(host.postgresPid) ?? 0) - before
        const used = process.cpuUsage(hostBefore)
        const main = process.threadCpuUsage(mainBefore)
        const elapsed = performance.now() - start
        hostCpu[into] += used.user + used.system - result.generatorCpuMicros - idle.process * elapsed
        mainCpu[into] += main.user + main.system - idle.main * elapsed
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
    return { recorded, notRecorded, entries, cpu, hostCpu, mainCpu, idle }
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
      },
      idleCpuMsPerSecond: {
        process: (first.idle.process + second.idle.process) / 2,
        mainThread: (first.idle.main + second.idle.main) / 2
      },
      mainThreadCpuMsPer1000: {
        logged: per1000(first.mainCpu.logged + second.mainCpu.logged, withLog.requests),
        unlogged: per1000(first.mainCpu.unlogged + second.mainCpu.unlogged, without.requests)
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
    `  host CPU per 1,000 requests, less the idle hosts' ${r.idleCpuMsPerSecond.process.toFixed(0)} ms a second (main thread ${
      r.idleCpuMsPerSecond.mainThread.toFixed(0)
    }):`,
    `    the process: ${r.hostCpuMsPer1000.logged.toFixed(0)} ms recorded, ${r.hostCpuMsPer1000.unlogged.toFixed(0)} ms not (recording: ${
      (r.hostCpuMsPer1000.logged - r.hostCpuMsPer1000.unlogged).toFixed(0)
    } ms)`,
    `    the main thread: ${r.mainThreadCpuMsPer1000.logged.toFixed(0)} ms recorded, ${r.mainThreadCpuMsPer1000.unlogged.toFixed(0)} ms not (recording: ${
      (r.mainThreadCpuMsPer1000.logged - r.mainThreadCpuMsPer1000.unlogged).toFixed(0)
    } ms)`,
    ""
  ].join("\n")
}

export interface RecorderCapacity {
  readonly label: string
  readonly entries: number
  readonly entriesPerSecond: number
  readonly hostCpuMsPer1000: number
  readonly postgresCpuMsPer1000: number | undefined
}

/** A step event's entry as the engine hands it over (`stepEventEntry`): a chain run's step with a small payload. */
const stepDraft = (projectId: string, n: number): LogDraft => {
  const execution = `00000000-0000-4000-8000-${String(Math.floor(n / 4)).padStart(12, "0")}`
  return {
    project_id: projectId,
    source: "flow_event",
    occurred_at: new Date(Date.now() + n).toISOString(),
    problem: false,
    level: "info",
    message: `step_completed at send_${n % 4} (Chain)`,
    status: "running",
    resource_type: "workflow_execution",
    resource_id: execution,
    event_type: "step_completed",
    flow_name: "Chain",
    flow_id: "00000000-0000-4000-8000-000000000001",
    flow_execution_id: execution,
    flow_event_id: `00000000-0000-4000-9000-${String(n).padStart(12, "0")}`,
    step_identifier: `send_${n % 4}`,
    step_type: "send_text",
    attributes: { seq: n % 4, direction: "outbound", edge_label: null },
    payload: { text: `Hello number ${n}, your order is on its way`, phone_number_id: "100000000000001", message_id: `wamid.${n}` }
  }
}

export const benchRecorderCapacity = (options: { readonly rounds: number }) =>
  Effect.gen(function*() {
    const host = yield* startBenchHost(KEY, { workers: false, env: { PARLEY_LOG_API_REQUESTS: "false" } })
    const base = Layer.succeedContext(Context.pick(LogSearch, Ids)(host.context))
    // The same entries without words (an empty `search_text`, so an empty vector): what the words cost, by difference.
    const logs = Context.get(host.context, LogSearch)
    const wordless = Layer.succeedContext(Context.add(Context.pick(Ids)(host.context), LogSearch, LogSearch.of({
      ...logs,
      append: (entries) => logs.append(entries.map((e) => ({ ...e, search_text: "" })))
    })))
    const variants = [{ writers: 1, maxBatch: 500 }, { writers: 2, maxBatch: 500 }, { writers: 2, maxBatch: 1000 }]
    const totals = variants.map(() => ({ entries: 0, ms: 0, host: 0, postgres: 0 }))
    let serial = 0
    const drain = (
      variant: (typeof variants)[number],
      total: (typeof totals)[number],
      settle: Effect.Effect<void> = Effect.void,
      store: typeof base = base
    ) =>
      Effect.gen(function*() {
        const recorder = Context.get(yield* Layer.build(LogRecorder.layerWith(variant).pipe(Layer.provide(store))), LogRecorder)
        const drafts = Array.from({ length: MAX_BUFFERED }, () => stepDraft(host.project.id, serial++))
        const postgresBefore = processTreeCpuMicros(host.postgresPid) ?? 0
        const hostBefore = process.cpuUsage()
        const start = performance.now()
        yield* recorder.record(drafts)
        yield* recorder.flush
        yield* settle
        total.ms += performance.now() - start
        const used = process.cpuUsage(hostBefore)
        total.host += used.user + used.system
        total.postgres += (processTreeCpuMicros(host.postgresPid) ?? 0) - postgresBefore
        total.entries += drafts.length
      }).pipe(Effect.scoped)
    for (let round = 0; round < options.rounds; round++) {
      // Each round in another order, so neither drift nor a warmer cache favours one.
      for (const i of variants.map((_, i) => (i + round) % variants.length)) yield* drain(variants[i]!, totals[i]!)
    }
    // The indexes as they could be (this throwaway database only), in alternating rounds of the default recorder:
    // before its round each variant's indexes are rebuilt as it has them (not timed), and within the round the GIN
    // index's pending list is merged (`gin_clean_pending_list`): a variant that defers the merge pays it here.
    // (Measured once and dropped from the set: the GIN index with `fastupdate = off` cost PostgreSQL 168 ms per
    // 1,000 entries against 67, and with a 32 MB pending list 75.)
    const sql = Context.get(host.context, SqlClient.SqlClient)
    const settle = Effect.flatMap(
      sql<{ name: string }>`
        SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        JOIN pg_class p ON p.oid = i.inhparent WHERE p.relname = 'log_entries_search'`,
      (rows) => Effect.forEach(rows, ({ name }) => sql`SELECT gin_clean_pending_list(${name}::regclass)`, { discard: true })
    )
    const BRIN = "CREATE INDEX IF NOT EXISTS log_entries_occurred_at ON log_entries USING brin (occurred_at)"
    const ginWith = (options: string) => [
      "DROP INDEX IF EXISTS log_entries_search",
      `CREATE INDEX log_entries_search ON log_entries USING gin (search)${options}`,
      BRIN
    ]
    const indexSets: ReadonlyArray<{ readonly label: string; readonly statements: ReadonlyArray<string>; readonly store?: typeof base }> = [
      { label: "2 writers, indexes as migrated", statements: ginWith("") },
      { label: "2 writers, entries without words", statements: ginWith(""), store: wordless },
      { label: "2 writers, GIN pending list 1 MB", statements: ginWith(" WITH (gin_pending_list_limit = 1024)") },
      { label: "2 writers, GIN pending list 256 kB", statements: ginWith(" WITH (gin_pending_list_limit = 256)") },
      { label: "2 writers, no BRIN", statements: [...ginWith(""), "DROP INDEX log_entries_occurred_at"] },
      { label: "2 writers, no GIN", statements: ["DROP INDEX IF EXISTS log_entries_search", BRIN] }
    ]
    const setTotals = indexSets.map(() => ({ entries: 0, ms: 0, host: 0, postgres: 0 }))
    for (let round = 0; round < options.rounds; round++) {
      for (const i of indexSets.map((_, i) => (i + round) % indexSets.length)) {
        for (const statement of indexSets[i]!.statements) yield* Effect.orDie(sql.unsafe(statement))
        yield* drain(variants[1]!, setTotals[i]!, Effect.orDie(settle), indexSets[i]!.store)
      }
    }
    totals.push(...setTotals)
    const withProc = processTreeCpuMicros(host.postgresPid) !== undefined
    return [
      ...variants.map((v) => ({ label: `${v.writers} writer${v.writers === 1 ? "" : "s"}, batches of ${v.maxBatch}` })),
      ...indexSets
    ].map(
      (v, i): RecorderCapacity => ({
        label: v.label,
        entries: totals[i]!.entries,
        entriesPerSecond: totals[i]!.entries / (totals[i]!.ms / 1000),
        hostCpuMsPer1000: totals[i]!.host / totals[i]!.entries,
        postgresCpuMsPer1000: withProc ? totals[i]!.postgres / totals[i]!.entries : undefined
      })
    )
  }).pipe(Effect.scoped)

export const formatRecorderCapacity = (rows: ReadonlyArray<RecorderCapacity>): string =>
  [
    `Log search recorder draining ${MAX_BUFFERED.toLocaleString("en-US")} step entries queued at once (Postgres storage, same run)`,
    ...rows.map((r) =>
      `  ${r.label.padEnd(36)} ${r.entriesPerSecond.toFixed(0).padStart(7)} entries/s` +
      `   host ${r.hostCpuMsPer1000.toFixed(0)} ms` +
      (r.postgresCpuMsPer1000 === undefined ? "" : `, PostgreSQL ${r.postgresCpuMsPer1000.toFixed(0)} ms`) + " CPU per 1,000 entries" +
      `   (${r.entries.toLocaleString("en-US")} entries)`
    ),
    ""
  ].join("\n")
