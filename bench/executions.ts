/**
 * The workflow execution engine on a real host over embedded PostgreSQL,
 * durable as `npm start` runs it (`fsync` and `synchronous_commit` on: the
 * conditions the engine's targets were set for, docs design engine.md §5),
 * each figure beside a baseline measured in the same run:
 *
 * 1. Step transitions/s: `concurrency` closed loops, each starting an
 *    execution of a chain of `set_variable` nodes through the `Executions`
 *    service (no HTTP: the engine is measured) and waiting for it to end;
 *    against the commit floor of the same database, one-row single-statement
 *    transactions (`UPDATE`, `INSERT`) over the same client at the same concurrency.
 * 2. API start → first message accepted by the simulated network, one at a
 *    time: from the request's first byte to the moment the in-process
 *    simulator answered the send (a probe on its `handle`), less the
 *    simulator's own handling of that send; beside it, one proxied send
 *    (`POST /proxy/v24.0/<pnid>/messages`) timed the same way.
 * 3. `waiting` executions parked on `wait_for_response` (with a timeout, so
 *    each has its timer job): the host's resident memory they add, then all of
 *    them resumed over `POST /platform/v1/workflow_executions/:id/resume`
 *    until every one has ended, against authenticated reads of the same
 *    executions at the same concurrency.
 * 4. Inbound routing, when the build routes replies: waiting runs resumed by
 *    their contact's reply (workflow debounce 0), then a contact's message →
 *    the reply of a workflow with an active `inbound_message` trigger accepted
 *    by the network, one at a time, less the network's handling of the reply.
 *
 *   node --max-semi-space-size=8 --conditions=@parley/source bench/executions.ts
 *
 * `BENCH_SECONDS` (default 5) sizes the runs; `EXEC_WAITING` (default 10,000)
 * the parked executions; `EXEC_CONCURRENCY` (default 16) the concurrent runs and
 * connections; `EXEC_PARTS` (default `steps,first,waiting,inbound`) which parts run;
 * `EXEC_DURABLE=false` a throwaway database (fsync and synchronous_commit off)
 * instead of a durable one. `EXEC_PROFILE=<dir>` writes a CPU profile of the host
 * for each measured window (`steps.cpuprofile`, `resumes.cpuprofile`, ...; sum one
 * with `bench/profileByFile.ts`), the rest of the process (start, floors' set-up) left out.
 */
import { ExecutionEngine, Executions, type Principal, TimePartitions, UpstreamIngestion, UpstreamSettings } from "@parley/core"
import { Simulator } from "@parley/core/simulators"
import { Context, Effect, Option, Redacted, References } from "effect"
import { SqlClient } from "effect/sql"
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Inspector from "node:inspector/promises"
import * as Net from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import { performance } from "node:perf_hooks"
import { fileURLToPath } from "node:url"
import * as V8 from "node:v8"
import * as Vm from "node:vm"
import { processTreeCpuMicros } from "./cpu.ts"
import { startBenchHost } from "./host.ts"
import type { LoadResult } from "./load.ts"
import { loadApart, resumesApart } from "./loadProcess.ts"

const KEY = "pk_bench_executions_0123456789abcd"
const profileDir = process.env.EXEC_PROFILE

/** Starts the host's CPU profiler; the answer stops it and writes the profile to its path. */
export const startProfile = async () => {
  const session = new Inspector.Session()
  session.connect()
  await session.post("Profiler.enable")
  await session.post("Profiler.start")
  return async (path: string) => {
    const { profile } = await session.post("Profiler.stop")
    Fs.mkdirSync(Path.dirname(path), { recursive: true })
    Fs.writeFileSync(path, JSON.stringify(profile))
    session.disconnect()
  }
}
/** The transactions' pool of a host (store-pg `TRANSACTION_CONNECTIONS`): one checkpoint holds one of them. */
const DEFAULT_CONCURRENCY = 16
const CHAIN = 50

export interface Percentiles {
  readonly p50: number
  readonly p99: number
  readonly max: number
}

export type ExecutionsPart = "steps" | "first" | "waiting" | "inbound"

/** Absent routing (a build without it), `routed` is false and nothing else was measured. */
export type InboundResult = { readonly routed: false } | {
  readonly routed: true
  /** Waiting runs resumed by their contact's reply (debounce 0), from the first reply sent to the last run ended. */
  readonly resumes: number
  readonly resumesPerSecond: number
  /** The host's writes to PostgreSQL per resume (statements or pipelined batches; pg-boss's and the bench's polls included). */
  readonly writesPerResume: number
  readonly cpu: { readonly resumeHost: number; readonly resumePostgres: number | undefined }
  /** A contact writes (the network's webhook posted to the host) → the workflow's reply accepted by the network. */
  readonly reply: { readonly samples: number; readonly endToEnd: Percentiles; readonly network: Percentiles; readonly parley: Percentiles }
}

export interface ExecutionsBenchResult {
  readonly durable: boolean
  readonly steps?: {
    readonly concurrency: number
    readonly chain: number
    readonly executions: number
    readonly seconds: number
    /** Node steps (start + the chain) per second. */
    readonly stepsPerSecond: number
    /** State versions per second: the transitions, whether written on their own or carried by the next checkpoint. */
    readonly transitionsPerSecond: number
    /** The host's writes to PostgreSQL per run (statements or pipelined batches; pg-boss's included). */
    readonly writesPerRun: number
    readonly floorUpdate: number
    readonly floorInsert: number
    /** CPU milliseconds per step and per floor commit: the host process, PostgreSQL's processes (Linux only). */
    readonly cpu: {
      readonly stepHost: number
      readonly stepPostgres: number | undefined
      readonly updateHost: number
      readonly updatePostgres: number | undefined
      readonly insertHost: number
      readonly insertPostgres: number | undefined
    }
  }
  readonly firstMessage?: {
    readonly samples: number
    /** Request start → the simulator answered the send. */
    readonly endToEnd: Percentiles
    /** The simulator's own handling of the send. */
    readonly network: Percentiles
    /** Per sample, end-to-end less the network's own time. */
    readonly engine: Percentiles
    /** Request start → 202. */
    readonly accepted: Percentiles
    /** The host's writes to PostgreSQL (round trips) from the request to the send, and over the whole run. */
    readonly databaseWrites: { readonly toAccepted: Percentiles; readonly toSend: Percentiles; readonly run: Percentiles }
    /** One single-row UPDATE committed, one at a time. */
    readonly commit: Percentiles
    readonly proxy: { readonly endToEnd: Percentiles; readonly network: Percentiles; readonly parley: Percentiles }
  }
  readonly waiting?: {
    readonly executions: number
    readonly startsPerSecond: number
    readonly rssBeforeMb: number
    readonly rssGrowthMb: number
    readonly heapGrowthMb: number
    /** RSS growth once every run has ended (none waits): the share of `rssGrowthMb` the waiting runs do not explain. */
    readonly rssEndedMb: number
    readonly heapEndedMb: number
    /** Memory outside V8's heap that V8 knows of (Buffers and the like). */
    readonly externalGrowthMb: number
    /** V8's heap as reserved from the system (used or not). */
    readonly heapTotalGrowthMb: number
    readonly resumesPerSecond: number
    readonly resumeRequests: LoadResult
    readonly reads: LoadResult
    /** CPU milliseconds per start and per resume: the host (its HTTP clients run in a process of their own), PostgreSQL's processes. */
    readonly cpu: {
      readonly startHost: number
      readonly startPostgres: number | undefined
      readonly resumeHost: number
      readonly resumePostgres: number | undefined
    }
  }
  readonly inbound?: InboundResult
}

export const percentiles = (samples: ReadonlyArray<number>): Percentiles => {
  const sorted = [...samples].sort((a, b) => a - b)
  const at = (p: number) => sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!
  return { p50: at(0.5), p99: at(0.99), max: sorted.at(-1) ?? 0 }
}

/** A full collection, so resident memory is compared without garbage (`gc` exposed on first use). */
let gc: (() => void) | undefined
export const collect = () => {
  if (gc === undefined) {
    V8.setFlagsFromString("--expose-gc")
    gc = Vm.runInNewContext("gc") as () => void
  }
  gc()
  gc()
}

const node = (id: string, node_type: string, config: Record<string, unknown> = {}) => ({ id, position: { x: 0, y: 0 }, data: { node_type, config } })
const edge = (source: string, target: string) => ({ source, target })

/** start → `length` set_variable nodes. */
export const chainDefinition = (length: number) => {
  const nodes = [node("start", "start"), ...Array.from({ length }, (_, i) =>
    node(`set${i}`, "set_variable", { variable_name: `v${i}`, variable_value: `{{vars.seed}}-${i}`, value_type: "string" }))]
  return { nodes, edges: nodes.slice(1).map((n, i) => edge(nodes[i]!.id, n.id)) }
}

export const greeterDefinition = {
  nodes: [node("start", "start"), node("hi", "send_text", { message: "Hi {{vars.name}}" })],
  edges: [edge("start", "hi")]
}

export const waiterDefinition = {
  nodes: [
    node("start", "start"),
    node("ask", "wait_for_response", { save_response_to: "answer", has_timeout: true, timeout_seconds: 86_400 }),
    node("keep", "set_variable", { variable_name: "kept", variable_value: "{{vars.answer}}", value_type: "string" })
  ],
  edges: [edge("start", "ask"), edge("ask", "keep")]
}

interface Answer {
  readonly status: number
  readonly body: any
}

/** One request on a keep-alive connection of the bench's own agent (the main thread: one at a time). */
const requester = (base: string) => {
  const agent = new Http.Agent({ keepAlive: true, maxSockets: 1 })
  const send = (method: string, path: string, body?: unknown) =>
    new Promise<Answer>((resolve, reject) => {
      const payload = body === undefined ? undefined : JSON.stringify(body)
      const req = Http.request(`${base}${path}`, {
        agent,
        method,
        headers: { "x-api-key": KEY, ...(payload === undefined ? {} : { "content-type": "application/json" }) }
      }, (res) => {
        const chunks: Array<Buffer> = []
        res.on("data", (chunk: Buffer) => chunks.push(chunk))
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8")
          resolve({ status: res.statusCode ?? 0, body: text === "" ? undefined : JSON.parse(text) })
        })
      })
      req.on("error", reject)
      req.end(payload)
    })
  return { send, close: () => agent.destroy() }
}

/**
 * Is this one of the host's connections to PostgreSQL? The bench's database listens on a Unix socket, the only
 * sockets without a remote address apart from the process's own output: HTTP (the bench's requests, the host's calls
 * to a network in a process of its own) is TCP.
 */
export const isDatabaseSocket = (socket: Net.Socket) =>
  socket.remoteAddress === undefined && socket !== (process.stdout as unknown) && socket !== (process.stderr as unknown)

/**
 * Counts the host's writes to PostgreSQL (its pools and pg-boss's) while it is installed. With pipelining,
 * statements sent together are one write, so this is the round trips the host waited on or fired.
 */
export const countDatabaseWrites = () => {
  const write = Net.Socket.prototype.write
  let writes = 0
  Net.Socket.prototype.write = function(this: Net.Socket, ...args: Array<unknown>) {
    if (isDatabaseSocket(this)) writes++
    return (write as (...a: Array<unknown>) => boolean).apply(this, args)
  } as typeof write
  return { count: () => writes, restore: () => void (Net.Socket.prototype.write = write) }
}

/** When the simulator answered one send: its start and end (performance.now()) and status. */
interface NetworkCall {
  readonly start: number
  readonly end: number
  readonly status: number
  /** The database writes counted when the send reached the network. */
  readonly writes: number
}

/** `EXEC_PARTS=steps,first,waiting,inbound` (default all), as `bench/run.ts` and this module's own entry read it. */
export const executionsPartsFromEnv = (): ReadonlyArray<ExecutionsPart> | undefined =>
  process.env.EXEC_PARTS?.split(",").filter((p): p is ExecutionsPart => p === "steps" || p === "first" || p === "waiting" || p === "inbound")

export const benchExecutions = (options: {
  readonly seconds: number
  readonly waiting?: number | undefined
  readonly concurrency?: number | undefined
  readonly parts?: ReadonlyArray<ExecutionsPart> | undefined
  /** Default true: PostgreSQL with its default fsync and synchronous_commit, as `npm start` runs it. */
  readonly durable?: boolean | undefined
  /** Weeks of step event partitions (0036) readied back from today first, as a long retention keeps them; default none. */
  readonly stepEventWeeks?: number | undefined
}) =>
  Effect.gen(function*() {
    const concurrency = options.concurrency ?? DEFAULT_CONCURRENCY
    const waitingCount = options.waiting ?? 10_000
    const parts = new Set(options.parts ?? ["steps", "first", "waiting", "inbound"])
    const durable = options.durable ?? true
    const { context, postgresPid, project, url } = yield* startBenchHost(KEY, { durable })
    const http = requester(url)
    yield* Effect.addFinalizer(() => Effect.sync(http.close))
    const call = (method: string, path: string, body?: unknown) => Effect.promise(() => http.send(method, path, body))
    const settings = Context.get(context, UpstreamSettings)
    const simulator = Option.getOrThrow(Context.getOption(context, Simulator.NetworkSimulator))
    const number = Option.getOrThrow(settings.simulatedNumber)
    const sql = Context.get(context, SqlClient.SqlClient)
    const engine = Context.get(context, ExecutionEngine)
    const executions = Context.get(context, Executions)
    const principal: Principal = { project, apiKey: { id: "bench", name: "bench" } }
    const pnid = number.phoneNumberId
    const weeks = options.stepEventWeeks ?? 0
    if (weeks > 0) {
      yield* Context.get(context, TimePartitions).prepare(
        "workflow_step_events",
        new Date(Date.now() - weeks * 7 * 24 * 60 * 60 * 1000).toISOString(),
        new Date().toISOString()
      )
    }

    const connected = yield* call("POST", "/platform/v1/msg/phone_numbers", {
      msg_config: { phone_number_id: pnid, business_account_id: number.businessAccountId, access_token: Redacted.value(number.accessToken) }
    })
    if (connected.status !== 201) return yield* Effect.die(new Error(`connect: ${connected.status} ${JSON.stringify(connected.body)}`))
    // The network's per-number and per-pair limits are lifted: the engine is measured, not the network's model.
    yield* simulator.updateNumber(pnid, { throughputPerSecond: 1_000_000, pairBurst: 1_000_000, pairIntervalMs: 1 })
    const createWorkflow = (name: string, definition: unknown, fields: Record<string, unknown> = {}) =>
      Effect.flatMap(call("POST", "/platform/v1/workflows", { workflow: { name, status: "active", definition, ...fields } }), (res) =>
        res.status === 201 ? Effect.succeed(res.body.data.id as string) : Effect.die(new Error(`workflow: ${res.status} ${JSON.stringify(res.body)}`)))

    /** CPU time (ms) the host process and PostgreSQL's processes spend while `effect` runs (profiled as `name`). */
    const cpuOf = <A, E, R>(effect: Effect.Effect<A, E, R>, name: string) =>
      Effect.gen(function*() {
        const profiling = profileDir === undefined ? undefined : yield* Effect.promise(() => startProfile())
        const host = process.cpuUsage()
        const pg = processTreeCpuMicros(postgresPid)
        const a = yield* effect
        const hostUsed = process.cpuUsage(host)
        const pgAfter = processTreeCpuMicros(postgresPid)
        if (profiling !== undefined) yield* Effect.promise(() => profiling(Path.join(profileDir!, `${name}.cpuprofile`)))
        return [a, {
          host: (hostUsed.user + hostUsed.system) / 1000,
          postgres: pg === undefined || pgAfter === undefined ? undefined : (pgAfter - pg) / 1000
        }] as const
      })

    // Every send the network accepts is timed where it reaches the network (see `nextSend`).
    let probe: ((call: NetworkCall) => void) | undefined
    const writes = countDatabaseWrites()
    yield* Effect.addFinalizer(() => Effect.sync(writes.restore))
    const handle = simulator.handle
    // Every send reaches the in-process network through `handle`, looked up at each call: time the sends there. Read
    // mode's mark-read posts to the same edge (`status: read`): it is not a send, and may reach the network first.
    const decoder = new TextDecoder()
    const isMarkRead = (body: Parameters<typeof handle>[0]["body"]) =>
      body._tag === "Bytes" && (JSON.parse(decoder.decode(body.bytes)) as { status?: unknown }).status === "read"
    Object.assign(simulator, {
      handle: (request: Parameters<typeof handle>[0]) => {
        if (request.method !== "POST" || !request.path.endsWith("/messages") || isMarkRead(request.body)) return handle(request)
        return Effect.suspend(() => {
          const start = performance.now()
          const written = writes.count()
          return Effect.tap(handle(request), (answer) =>
            Effect.sync(() => {
              const end = performance.now()
              const waiting = probe
              probe = undefined
              waiting?.({ start, end, status: answer.status, writes: written })
            }))
        })
      }
    })
    yield* Effect.addFinalizer(() => Effect.sync(() => Object.assign(simulator, { handle })))
    const nextSend = () =>
      new Promise<NetworkCall>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error("no send reached the network within 5 s")), 5_000)
        probe = (c) => {
          clearTimeout(timer)
          resolve(c)
        }
      })

    const countOf = (workflowId: string, status: string) =>
      Effect.map(
        sql<{ n: string }>`SELECT count(*) AS n FROM workflow_executions WHERE workflow_id = ${workflowId} AND status = ${status}`,
        (rows) => Number(rows[0]!.n)
      ).pipe(Effect.orDie)
    /** Waits until `n` executions of the workflow are in `status`; false after `limitMs`. */
    const reached = (workflowId: string, status: string, n: number, everyMs: number, limitMs = 300_000) =>
      Effect.gen(function*() {
        const deadline = performance.now() + limitMs
        while ((yield* countOf(workflowId, status)) < n) {
          if (performance.now() > deadline) return false
          yield* Effect.sleep(everyMs)
        }
        return true
      })
    const headers = { "x-api-key": KEY, "content-type": "application/json" }
    /** Starts one run of the workflow per phone number over HTTP (`concurrency` connections from a process of its own). */
    const startAll = (workflowId: string, phones: ReadonlyArray<string>) =>
      Effect.promise(() =>
        loadApart({
          url: `${url}/platform/v1/workflows/${workflowId}/executions`,
          method: "POST",
          headers,
          bodies: phones.map((phone) => JSON.stringify({ workflow_execution: { phone_number: `+${phone}`, phone_number_id: pnid } })),
          requests: phones.length,
          connections: concurrency,
          durationMs: 600_000
        })
      )
    let conversations = 0
    /** The contacts write in (their 24-hour windows open), 16 at a time; answers once Parley has stored them all. */
    const writeIn = (contacts: ReadonlyArray<string>) =>
      Effect.gen(function*() {
        yield* Effect.forEach(contacts, (from) => simulator.inbound(pnid, { from, message: { type: "text", text: { body: "hi" } } }), {
          concurrency: 16,
          discard: true
        })
        conversations += contacts.length
        for (let i = 0;; i++) {
          const page = yield* call("GET", "/platform/v1/msg/conversations?per_page=1")
          if (page.body.meta.total_count >= conversations) return
          if (i > 600) return yield* Effect.die(new Error("the contacts' first messages were not all stored"))
          yield* Effect.sleep("100 millis")
        }
      })

    // ---- 1. Step transitions/s against the commit floor ----
    const steps = Effect.gen(function*() {
      const chainId = yield* createWorkflow("Chain", chainDefinition(CHAIN))
      let serial = 0
      const phone = () => `+1555${String(serial++).padStart(7, "0")}`
      const run = (workflowId: string) =>
        Effect.flatMap(
          executions.start(principal, workflowId, { phone_number: phone(), phone_number_id: pnid, variables: { seed: serial } }, { ip: null, user_agent: null }),
          // The engine is already running it (the start kicked it): this waits for that slice, as the run job would.
          (answer) => engine.runSlice(answer.id)
        ).pipe(Effect.orDie)
      const loops = (workflowId: string, ms: number) =>
        Effect.gen(function*() {
          const deadline = performance.now() + ms
          let started = 0
          yield* Effect.all(Array.from({ length: concurrency }, () =>
            Effect.gen(function*() {
              while (performance.now() < deadline) {
                started++
                yield* run(workflowId)
              }
            })), { concurrency: "unbounded", discard: true })
          return started
        })
      yield* loops(chainId, 1_000) // warm-up
      yield* sql`DELETE FROM workflow_executions WHERE workflow_id = ${chainId}`
      const stepStart = performance.now()
      const stepWrites = writes.count()
      const [started, stepCpu] = yield* cpuOf(loops(chainId, options.seconds * 1000), "steps")
      const stepSeconds = (performance.now() - stepStart) / 1000
      const writesPerRun = (writes.count() - stepWrites) / Math.max(1, started)
      const [tally] = yield* sql<{ ended: string; versions: string }>`
        SELECT count(*) FILTER (WHERE status = 'ended') AS ended, coalesce(sum(state_version), 0) AS versions
        FROM workflow_executions WHERE workflow_id = ${chainId}`
      const ended = Number(tally!.ended)
      if (ended !== started) return yield* Effect.die(new Error(`${started} chain runs started, ${ended} ended`))
      // The record's insert is one version; every later version is one transition.
      const transitions = Number(tally!.versions) - ended

      yield* sql`CREATE TABLE bench_floor_rows (id int PRIMARY KEY, n bigint NOT NULL)`
      yield* sql`CREATE TABLE bench_floor_log (id bigserial PRIMARY KEY, client int NOT NULL, n int NOT NULL)`
      yield* sql`INSERT INTO bench_floor_rows SELECT g, 0 FROM generate_series(0, ${concurrency - 1}) g`
      const floor = (statement: (client: number, n: number) => Effect.Effect<unknown, unknown>, ms: number) =>
        Effect.gen(function*() {
          let done = 0
          const t0 = performance.now()
          const deadline = t0 + ms
          yield* Effect.all(Array.from({ length: concurrency }, (_, client) =>
            Effect.gen(function*() {
              for (let n = 0; performance.now() < deadline; n++) {
                yield* statement(client, n)
                done++
              }
            })), { concurrency: "unbounded", discard: true })
          return { perSecond: done / ((performance.now() - t0) / 1000), done }
        }).pipe(Effect.orDie)
      const floorMs = Math.max(2_000, options.seconds * 500)
      const update = (client: number) => sql`UPDATE bench_floor_rows SET n = n + 1 WHERE id = ${client}`
      const insert = (client: number, n: number) => sql`INSERT INTO bench_floor_log (client, n) VALUES (${client}, ${n})`
      yield* floor(update, 300)
      const [floorUpdate, updateCpu] = yield* cpuOf(floor(update, floorMs), "floorUpdate")
      const [floorInsert, insertCpu] = yield* cpuOf(floor(insert, floorMs), "floorInsert")
      return {
        concurrency,
        chain: CHAIN,
        executions: ended,
        seconds: stepSeconds,
        stepsPerSecond: (ended * (CHAIN + 1)) / stepSeconds,
        transitionsPerSecond: transitions / stepSeconds,
        writesPerRun,
        floorUpdate: floorUpdate.perSecond,
        floorInsert: floorInsert.perSecond,
        cpu: {
          stepHost: stepCpu.host / (ended * (CHAIN + 1)),
          stepPostgres: stepCpu.postgres === undefined ? undefined : stepCpu.postgres / (ended * (CHAIN + 1)),
          updateHost: updateCpu.host / floorUpdate.done,
          updatePostgres: updateCpu.postgres === undefined ? undefined : updateCpu.postgres / floorUpdate.done,
          insertHost: insertCpu.host / floorInsert.done,
          insertPostgres: insertCpu.postgres === undefined ? undefined : insertCpu.postgres / floorInsert.done
        }
      }
    })

    // ---- 2. API start → first message accepted by the network ----
    const firstMessage = Effect.gen(function*() {
      const contacts = Array.from({ length: 64 }, (_, i) => `1555200${String(i).padStart(4, "0")}`)
      yield* writeIn(contacts)
      const greeterId = yield* createWorkflow("Greeter", greeterDefinition)
      // The network's status reports (sent, delivered, read) stay with it while runs are timed: each run is measured
      // without the processing of the reports of the runs before it (one at a time, they would overlap it).
      const ingestion = Context.get(context, UpstreamIngestion)
      yield* simulator.setSink(undefined)
      yield* Effect.addFinalizer(() => simulator.setSink((body, signature) => ingestion.receive(body, signature)))
      const samples = Math.max(100, options.seconds * 60)
      const warm = 50
      const endToEnd: Array<number> = []
      const network: Array<number> = []
      const engineShare: Array<number> = []
      const acked: Array<number> = []
      const writesAck: Array<number> = []
      const writesBefore: Array<number> = []
      const writesRun: Array<number> = []
      for (let i = 0; i < warm + samples; i++) {
        const to = contacts[i % contacts.length]!
        const sent = nextSend()
        const w0 = writes.count()
        const t0 = performance.now()
        const res = yield* call("POST", `/platform/v1/workflows/${greeterId}/executions`, {
          workflow_execution: { phone_number: `+${to}`, phone_number_id: pnid, variables: { name: "Ada" } }
        })
        const t1 = performance.now()
        const wAck = writes.count()
        if (res.status !== 202) return yield* Effect.die(new Error(`start: ${res.status} ${JSON.stringify(res.body)}`))
        const c = yield* Effect.promise(() => sent)
        if (c.status !== 200) return yield* Effect.die(new Error(`the network refused the greeting: ${c.status}`))
        // The run has ended before the next one starts.
        yield* engine.runSlice(res.body.data.id as string)
        if (i < warm) continue
        writesAck.push(wAck - w0)
        writesBefore.push(c.writes - w0)
        writesRun.push(writes.count() - w0)
        endToEnd.push(c.end - t0)
        network.push(c.end - c.start)
        engineShare.push(c.start - t0)
        acked.push(t1 - t0)
      }
      const proxyEnd: Array<number> = []
      const proxyNetwork: Array<number> = []
      const proxyParley: Array<number> = []
      for (let i = 0; i < warm + samples; i++) {
        const to = contacts[i % contacts.length]!
        const sent = nextSend()
        const t0 = performance.now()
        const res = yield* call("POST", `/proxy/v24.0/${pnid}/messages`, { messaging_product: "whatsapp", to, type: "text", text: { body: "Hi Ada" } })
        const t1 = performance.now()
        if (res.status !== 200) return yield* Effect.die(new Error(`proxy send: ${res.status} ${JSON.stringify(res.body)}`))
        const c = yield* Effect.promise(() => sent)
        if (i < warm) continue
        proxyEnd.push(t1 - t0)
        proxyNetwork.push(c.end - c.start)
        proxyParley.push(t1 - t0 - (c.end - c.start))
      }
      // One commit round trip, one at a time: the unit the paths above are made of.
      const commits: Array<number> = []
      yield* sql`CREATE TABLE IF NOT EXISTS bench_commit_row (id int PRIMARY KEY, n bigint NOT NULL)`
      yield* sql`INSERT INTO bench_commit_row VALUES (0, 0) ON CONFLICT DO NOTHING`
      for (let i = 0; i < warm + samples * 2; i++) {
        const t0 = performance.now()
        yield* sql`UPDATE bench_commit_row SET n = n + 1 WHERE id = 0`
        if (i >= warm) commits.push(performance.now() - t0)
      }
      yield* simulator.setSink((body, signature) => ingestion.receive(body, signature))
      return {
        samples,
        databaseWrites: { toAccepted: percentiles(writesAck), toSend: percentiles(writesBefore), run: percentiles(writesRun) },
        commit: percentiles(commits),
        endToEnd: percentiles(endToEnd),
        network: percentiles(network),
        engine: percentiles(engineShare),
        accepted: percentiles(acked),
        proxy: { endToEnd: percentiles(proxyEnd), network: percentiles(proxyNetwork), parley: percentiles(proxyParley) }
      }
    })

    // ---- 3. Parked executions: memory, then resumes ----
    const waiting = Effect.gen(function*() {
      const waiterId = yield* createWorkflow("Waiter", waiterDefinition)
      const phones = (n: number, offset: number) => Array.from({ length: n }, (_, i) => `1556${String(offset + i).padStart(7, "0")}`)
      const until = (status: string, n: number, everyMs: number) =>
        Effect.flatMap(reached(waiterId, status, n, everyMs), (ok) => ok ? Effect.void : Effect.die(new Error(`${n} executions never reached ${status}`)))
      const waitingIds = Effect.map(
        sql<{ id: string }>`SELECT id FROM workflow_executions WHERE workflow_id = ${waiterId} AND status = 'waiting' ORDER BY started_at`,
        (rows) => rows.map((r) => r.id)
      ).pipe(Effect.orDie)
      const resumeAll = (ids: ReadonlyArray<string>) =>
        Effect.promise(() => resumesApart(url, headers, ids, concurrency))
      // Warm-up: the same paths, so code and pools are in place before memory is measured.
      const warmRuns = 500
      yield* startAll(waiterId, phones(warmRuns, 0))
      yield* until("waiting", warmRuns, 20)
      yield* resumeAll(yield* waitingIds)
      yield* until("ended", warmRuns, 20)
      yield* Effect.sleep("1 second")
      collect()
      const before = process.memoryUsage()
      const [starts, startCpu] = yield* cpuOf(startAll(waiterId, phones(waitingCount, warmRuns)), "starts")
      if (starts.errors > 0) return yield* Effect.die(new Error(`${starts.errors} starts failed`))
      yield* until("waiting", waitingCount, 50)
      // The run jobs the starts left behind are done before memory is read.
      yield* Effect.sleep("2 seconds")
      collect()
      const after = process.memoryUsage()
      const ids = yield* waitingIds
      const reads = yield* Effect.promise(() =>
        loadApart({
          url,
          urls: ids.map((id) => `${url}/platform/v1/workflow_executions/${id}`),
          headers: { "x-api-key": KEY },
          requests: Math.min(ids.length, 5_000),
          connections: concurrency,
          durationMs: 600_000
        })
      )
      const resumeStart = performance.now()
      const [resumeRequests, resumeCpu] = yield* cpuOf(Effect.andThen(resumeAll(ids), (r) => Effect.as(until("ended", warmRuns + waitingCount, 10), r)), "resumes")
      const resumeSeconds = (performance.now() - resumeStart) / 1000
      if (resumeRequests.errors > 0) return yield* Effect.die(new Error(`${resumeRequests.errors} resumes failed`))
      // Nothing waits any more: what resident memory stays is the process's high-water mark, not the runs.
      yield* Effect.sleep("2 seconds")
      collect()
      const ended = process.memoryUsage()

      const mb = (bytes: number) => bytes / 1024 / 1024
      return {
        executions: ids.length,
        startsPerSecond: starts.rps,
        rssBeforeMb: mb(before.rss),
        rssGrowthMb: mb(after.rss - before.rss),
        heapGrowthMb: mb(after.heapUsed - before.heapUsed),
        rssEndedMb: mb(ended.rss - before.rss),
        heapEndedMb: mb(ended.heapUsed - before.heapUsed),
        externalGrowthMb: mb(after.external - before.external),
        heapTotalGrowthMb: mb(after.heapTotal - before.heapTotal),
        resumesPerSecond: ids.length / resumeSeconds,
        resumeRequests,
        reads,
        cpu: {
          startHost: startCpu.host / ids.length,
          startPostgres: startCpu.postgres === undefined ? undefined : startCpu.postgres / ids.length,
          resumeHost: resumeCpu.host / ids.length,
          resumePostgres: resumeCpu.postgres === undefined ? undefined : resumeCpu.postgres / ids.length
        }
      }
    })

    // ---- 4. Inbound routing: replies resume waiting runs; an inbound trigger answers ----
    const inbound = Effect.gen(function*() {
      const n = Math.min(waitingCount, Math.max(500, options.seconds * 200))
      // No first message before the runs start: the waiter sends nothing (no window needed), and a message routed
      // after a run started for its contact is that run's (one live run per contact), which would then not wait.
      const contacts = Array.from({ length: n }, (_, i) => `1557${String(i).padStart(7, "0")}`)
      // Debounce 0: a reply is routed at once (the default 1 s window would be measured otherwise).
      const waiterId = yield* createWorkflow("Inbound waiter", waiterDefinition, { message_debounce_seconds: 0 })
      const started = yield* startAll(waiterId, contacts)
      if (started.errors > 0) return yield* Effect.die(new Error(`${started.errors} starts failed`))
      if (!(yield* reached(waiterId, "waiting", n, 50))) return yield* Effect.die(new Error(`${n} runs never waited`))
      const reply = (from: string, body: string) => simulator.inbound(pnid, { from, message: { type: "text", text: { body } } })
      // One reply first: a host without inbound routing leaves the run waiting.
      yield* reply(contacts[0]!, "yes")
      if (!(yield* reached(waiterId, "ended", 1, 20, 10_000))) return { routed: false as const }
      const writesBefore = writes.count()
      const t0 = performance.now()
      const [, cpu] = yield* cpuOf(Effect.andThen(
        Effect.forEach(contacts.slice(1), (from) => reply(from, "yes"), { concurrency, discard: true }),
        // Every 100 ms: counting the ended runs costs PostgreSQL about a millisecond, which a 10 ms poll charged to
        // each resume; the end is seen at most 100 ms late (about 1% of the run).
        reached(waiterId, "ended", n, 100)
      ), "inbound")
      const resumeSeconds = (performance.now() - t0) / 1000
      const resumeWrites = (writes.count() - writesBefore) / (n - 1)

      const replierId = yield* createWorkflow("Replier", greeterDefinition, { message_debounce_seconds: 0 })
      const trigger = yield* call("POST", `/platform/v1/workflows/${replierId}/triggers`, {
        trigger: { trigger_type: "inbound_message", phone_number_id: pnid }
      })
      if (trigger.status !== 201) return yield* Effect.die(new Error(`trigger: ${trigger.status} ${JSON.stringify(trigger.body)}`))
      const samples = Math.min(n, Math.max(100, options.seconds * 60))
      const warm = 20
      const endToEnd: Array<number> = []
      const network: Array<number> = []
      const parley: Array<number> = []
      for (let i = 0; i < warm + samples; i++) {
        // Each contact in turn: its previous run has long ended, so the message starts a new one.
        const sent = nextSend()
        const t0 = performance.now()
        yield* reply(contacts[(i + 1) % n]!, "hello")
        const c = yield* Effect.promise(() => sent)
        if (c.status !== 200) return yield* Effect.die(new Error(`the network refused the reply: ${c.status}`))
        if (i < warm) continue
        endToEnd.push(c.end - t0)
        network.push(c.end - c.start)
        parley.push(c.start - t0)
      }
      return {
        routed: true as const,
        resumes: n - 1,
        resumesPerSecond: (n - 1) / resumeSeconds,
        writesPerResume: resumeWrites,
        cpu: {
          resumeHost: cpu.host / (n - 1),
          resumePostgres: cpu.postgres === undefined ? undefined : cpu.postgres / (n - 1)
        },
        reply: { samples, endToEnd: percentiles(endToEnd), network: percentiles(network), parley: percentiles(parley) }
      }
    })

    return {
      durable,
      ...(parts.has("steps") ? { steps: yield* steps } : {}),
      ...(parts.has("first") ? { firstMessage: yield* firstMessage } : {}),
      ...(parts.has("waiting") ? { waiting: yield* waiting } : {}),
      // Last: its inbound trigger answers every later message of the number.
      ...(parts.has("inbound") ? { inbound: yield* inbound } : {})
    } satisfies ExecutionsBenchResult
  }).pipe(Effect.scoped)

const ms = (x: number) => `${x.toFixed(2)} ms`
const cpuMs = (x: number | undefined) => x === undefined ? "unknown" : `${x.toFixed(3)} ms`
const pp = (p: Percentiles) => `p50 ${ms(p.p50)}   p99 ${ms(p.p99)}   max ${ms(p.max)}`

export const formatExecutionsBench = (r: ExecutionsBenchResult): string => {
  const lines = [
    `Workflow executions (Postgres storage, embedded, ${
      r.durable ? "durable: fsync and synchronous_commit on, as npm start runs it" : "throwaway: fsync and synchronous_commit off"
    })`
  ]
  const s = r.steps
  if (s !== undefined) {
    const best = Math.max(s.floorUpdate, s.floorInsert)
    lines.push(
      `  Step transitions, ${s.concurrency} executions in flight, chains of start + ${s.chain} set_variable, through Executions.start (no HTTP)`,
      `    engine                                  ${s.stepsPerSecond.toFixed(0).padStart(7)} steps/s   (${s.executions} runs in ${s.seconds.toFixed(1)} s; ${
        s.transitionsPerSecond.toFixed(0)
      } state versions/s; ${s.writesPerRun.toFixed(1)} database writes per run)`,
      `    floor: one-row UPDATE, ${s.concurrency} clients     ${s.floorUpdate.toFixed(0).padStart(7)} commits/s`,
      `    floor: one-row INSERT, ${s.concurrency} clients     ${s.floorInsert.toFixed(0).padStart(7)} commits/s`,
      `    ratio steps / faster floor: ${(s.stepsPerSecond / best).toFixed(2)} (targets >= 2,000 steps/s and >= 0.5)`,
      `    CPU per step: host ${s.cpu.stepHost.toFixed(3)} ms, PostgreSQL ${cpuMs(s.cpu.stepPostgres)}; per floor commit: UPDATE host ${
        s.cpu.updateHost.toFixed(3)
      } ms, PostgreSQL ${cpuMs(s.cpu.updatePostgres)}; INSERT host ${s.cpu.insertHost.toFixed(3)} ms, PostgreSQL ${cpuMs(s.cpu.insertPostgres)}; ${
        Os.availableParallelism()
      } cores`
    )
  }
  const f = r.firstMessage
  if (f !== undefined) {
    lines.push(
      `  API start -> first message accepted by the simulated network, one at a time (${f.samples} runs of start -> send_text; the network's status reports held back)`,
      `    request start -> network answered       ${pp(f.endToEnd)}`,
      `    the network's own handling (baseline)   ${pp(f.network)}`,
      `    Parley's share (per run, less baseline) ${pp(f.engine)}   (targets p50 <= 5 ms, p99 <= 25 ms)`,
      `    request start -> 202                    ${pp(f.accepted)}`,
      `    the host's writes to PostgreSQL (each one statement or a pipelined batch; background work included), p50: ${f.databaseWrites.toAccepted.p50} to the 202, ${f.databaseWrites.toSend.p50} before the send reaches the network (target <= 8), ${f.databaseWrites.run.p50} over the run`,
      `    one single-row commit, one at a time     ${pp(f.commit)}`,
      `    for comparison, one proxied send        ${pp(f.proxy.endToEnd)}`,
      `      its Parley share (less the network)   ${pp(f.proxy.parley)}`
    )
  }
  const w = r.waiting
  if (w !== undefined) {
    lines.push(
      `  ${w.executions} executions waiting on wait_for_response (timeout armed), started over HTTP at ${w.startsPerSecond.toFixed(0)}/s`,
      `    host RSS growth ${w.rssGrowthMb.toFixed(1)} MB over ${w.rssBeforeMb.toFixed(0)} MB (heap used ${w.heapGrowthMb.toFixed(1)} MB, reserved ${w.heapTotalGrowthMb.toFixed(1)} MB, external ${w.externalGrowthMb.toFixed(1)} MB; ${
        (w.rssGrowthMb * 1024 * 1024 / w.executions).toFixed(0)
      } bytes each; target < 50 MB); once all have ended ${w.rssEndedMb.toFixed(1)} MB (heap ${w.heapEndedMb.toFixed(1)} MB)`,
      `    resumed over POST .../resume, ${w.resumeRequests.connections} connections: ${w.resumesPerSecond.toFixed(0)} resumes/s to the last run ended (answers p50 ${
        ms(w.resumeRequests.p50Ms)
      }, p99 ${ms(w.resumeRequests.p99Ms)}; target >= 500/s)`,
      `    baseline GET /platform/v1/workflow_executions/:id, same connections: ${w.reads.rps.toFixed(0)} req/s; ratio resumes / reads ${
        (w.resumesPerSecond / w.reads.rps).toFixed(2)
      }`,
      `    CPU per start: host ${cpuMs(w.cpu.startHost)}, PostgreSQL ${cpuMs(w.cpu.startPostgres)}; per resume (to its run's end): host ${
        cpuMs(w.cpu.resumeHost)
      }, PostgreSQL ${cpuMs(w.cpu.resumePostgres)}`
    )
  }
  const b = r.inbound
  if (b !== undefined && !b.routed) lines.push(`  Inbound routing: a reply left its waiting run waiting (no inbound routing in this build): not measured`)
  if (b !== undefined && b.routed) {
    lines.push(
      `  Inbound routing (debounce 0), messages posted by the simulated network to the host's ingestion`,
      `    ${b.resumes} waiting runs resumed by their contact's reply: ${b.resumesPerSecond.toFixed(0)} resumes/s to the last run ended (target >= 500/s); CPU per resume: host ${
        cpuMs(b.cpu.resumeHost)
      }, PostgreSQL ${cpuMs(b.cpu.resumePostgres)}; ${b.writesPerResume.toFixed(1)} database writes per resume (target <= 12)`,
      `    inbound message -> workflow reply accepted by the network, one at a time (${b.reply.samples} runs of an inbound_message trigger -> send_text)`,
      `      message sent -> reply answered         ${pp(b.reply.endToEnd)}`,
      `      the network's own handling (baseline) ${pp(b.reply.network)}`,
      `      Parley's share (less baseline)        ${pp(b.reply.parley)}   (targets p50 <= 10 ms, p99 <= 40 ms)`
    )
  }
  // Issue 30 §1, each target beside its figure and its baseline from this run.
  const targets: Array<string> = []
  const row = (name: string, figure: string, baseline: string, target: string, holds: boolean) =>
    targets.push(`    ${holds ? "holds " : "misses"}  ${name.padEnd(44)} ${figure.padStart(10)}   ${baseline.padEnd(40)} target ${target}`)
  if (b !== undefined && b.routed && w !== undefined) {
    const ratio = b.resumesPerSecond / w.resumesPerSecond
    row("inbound resumes / API resumes", ratio.toFixed(2), `(${b.resumesPerSecond.toFixed(0)}/s against ${w.resumesPerSecond.toFixed(0)}/s)`, ">= 0.8", ratio >= 0.8)
  }
  if (b !== undefined && b.routed) {
    row("host writes per inbound resume", b.writesPerResume.toFixed(1), "", "<= 12", b.writesPerResume <= 12)
    row("inbound -> reply, Parley's share p50", ms(b.reply.parley.p50), `(network's own p50 ${ms(b.reply.network.p50)})`, "<= 10 ms", b.reply.parley.p50 <= 10)
    row("inbound -> reply, Parley's share p99", ms(b.reply.parley.p99), `(network's own p99 ${ms(b.reply.network.p99)})`, "<= 40 ms", b.reply.parley.p99 <= 40)
  }
  if (s !== undefined) {
    const best = Math.max(s.floorUpdate, s.floorInsert)
    row("step transitions / one-row commit floor", (s.stepsPerSecond / best).toFixed(2), `(${s.stepsPerSecond.toFixed(0)} steps/s against ${best.toFixed(0)} commits/s)`, ">= 0.5", s.stepsPerSecond / best >= 0.5)
  }
  if (f !== undefined) {
    row("host writes before an API start's first send", String(f.databaseWrites.toSend.p50), `(${f.databaseWrites.run.p50} over the run)`, "<= 8", f.databaseWrites.toSend.p50 <= 8)
  }
  if (targets.length > 0) lines.push("  Targets of the message path (issue 30 §1), with their baselines from this run", ...targets)
  return [...lines, ""].join("\n")
}

if (process.argv[1] !== undefined && Path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  Effect.runPromise(benchExecutions({
    seconds: Number(process.env.BENCH_SECONDS ?? 5),
    waiting: Number(process.env.EXEC_WAITING ?? 10_000),
    concurrency: Number(process.env.EXEC_CONCURRENCY ?? DEFAULT_CONCURRENCY),
    durable: process.env.EXEC_DURABLE !== "false",
    // EXEC_STEP_EVENT_WEEKS=52: a year of weekly step event partitions present.
    stepEventWeeks: Number(process.env.EXEC_STEP_EVENT_WEEKS ?? 0),
    parts: executionsPartsFromEnv()
  }).pipe(
    Effect.map((r) => console.log(formatExecutionsBench(r))),
    Effect.provideService(References.MinimumLogLevel, "Warn")
  )).catch((error) => {
    console.error(error)
    process.exitCode = 1
  })
}
