/**
 * Proxy sends through Parley (authenticated, recorded in Postgres with their
 * conversation, forwarded to the simulated network) against the same sends
 * straight to the simulator's own HTTP face, with the same load generator.
 * The simulated number's throughput and pair-rate limits are lifted so the
 * network model is not what is measured. The network runs in the host's
 * process (as `npm start` runs it) or, with `NETWORK=remote`, in a process of
 * its own behind the Cloud API adapter (as production runs). While the sends
 * go straight to the network, its webhooks go nowhere: the network alone is
 * measured, and the next Parley run is not charged with their processing.
 * The throughput run also prints what each send cost the machine in CPU (the
 * host, PostgreSQL, a network of its own), its status reports included: on a
 * machine whose cores are all busy, that cost is what bounds sends/s.
 *
 *   node --max-semi-space-size=8 --conditions=@parley/source bench/proxy.ts
 *
 * `NETWORK=remote` the network in a process of its own, `CONNECTIONS` (16) and `DURATION_MS` (3000) the load;
 * `PROXY_PROFILE=<dir>` writes CPU profiles of the host over the one-at-a-time run (`serial.cpuprofile`), the same
 * with the status reports muted (`serial-alone.cpuprofile`, and where it allocates: `serial-alone.heapprofile`) and
 * the throughput run with its status reports (`throughput.cpuprofile`); sum one with `bench/profileByFile.ts`.
 * `PROXY_TRACE=<n>` sends n more, one at a time, each traced, and prints where a send's time went inside the host,
 * hop by hop (the spans: server, `Outbound.send`, the recording's transaction, each SQL statement, the network call),
 * and one send's time line (each span's median start and end).
 * `PROXY_CALLS=<n>` makes n network calls alone of each kind, alternated (`proxyCalls.ts`): the host's adapter,
 * effect's `HttpClient` over undici, a bare undici `request`.
 */
import { NodeHttpServer } from "@effect/platform-node"
import { UpstreamIngestion, UpstreamSettings } from "@parley/core"
import { Context, Effect, Layer, Option, References, type Tracer } from "effect"
import { HttpRouter, HttpServer } from "effect/http"
import * as Http from "node:http"
import * as Os from "node:os"
import * as Path from "node:path"
import { performance, PerformanceObserver } from "node:perf_hooks"
import { fileURLToPath } from "node:url"
import * as SimulatorServer from "../packages/http-node/src/simulators/SimulatorServer.ts"
import { processTreeCpuMicros } from "./cpu.ts"
import { allocationCounter, sampleAllocations } from "./allocation.ts"
import { countDatabaseWrites, startProfile } from "./executions.ts"
import { startBenchHost } from "./host.ts"
import { forkNetwork } from "./networkProcess.ts"
import { load, type LoadResult } from "./load.ts"
import { compareCalls, formatCalls } from "./proxyCalls.ts"
import { replyTracer, spanBreakdown, spanTimeline } from "./replyTrace.ts"
import { Simulator } from "@parley/core/simulators"

export interface ProxyBenchResult {
  readonly network: ProxyNetwork
  /** One connection: the latency Parley adds to a send, without queueing. */
  readonly parleySerial: LoadResult
  readonly directSerial: LoadResult
  /** `connections` connections: throughput. */
  readonly parley: LoadResult
  readonly direct: LoadResult
  /** What `parley`'s sends cost the machine, their status reports included. */
  readonly cpu: ProxyCpu
  /**
   * The host's CPU per send of `parleySerial` (ms; with the status reports that came meanwhile, most of the sends'):
   * what the added latency costs in CPU, steadier than the latency itself on a busy machine.
   */
  readonly serialHostCpu: number
  /** One connection again, the network's status reports muted: the send alone, without its reports' work. */
  readonly parleyAlone: LoadResult
  /** The host's CPU per send of `parleyAlone` (ms): a send's own, its status reports and the idle host's work left out. */
  readonly aloneHostCpu: number
  /** KB the host allocated per send of `parleyAlone`, the idle host's allocation meanwhile taken off. */
  readonly aloneKb: number
  /** What the idle host spends a second (ms of CPU, KB allocated), measured just before `parleyAlone`. */
  readonly idleCpuPerSecond: number
  readonly idleKbPerSecond: number
  /** The host's garbage-collection pauses during `parleySerial`: each one delays the send in flight. */
  readonly serialPauses: GcPauses
  /** With `PROXY_TRACE`: per span name, the mean ms and count per send, one send at a time. */
  readonly serialSpans: ReadonlyArray<{ readonly name: string; readonly ms: number; readonly count: number }> | undefined
  /** With `PROXY_TRACE`: one send's time line, each span's median start and end (ms from the server span's start). */
  readonly serialTimeline: ReadonlyArray<{ readonly name: string; readonly startMs: number; readonly endMs: number; readonly count: number }> | undefined
  /** With `PROXY_TRACE`: the traced sends' median latency as the client saw it (the time line's whole). */
  readonly tracedP50: number | undefined
  /** With `PROXY_CALLS`: one network call alone, each way a host can make it. */
  readonly calls: Effect.Success<ReturnType<typeof compareCalls>> | undefined
}

/** Garbage-collection pauses of the host's thread over a run. */
export interface GcPauses {
  readonly perSecond: number
  readonly p50Ms: number
  readonly maxMs: number
}

/** Records the host thread's garbage-collection pauses while `effect` runs (the load generator's thread is apart). */
const withGcPauses = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.acquireUseRelease(
    Effect.sync(() => {
      const pauses: Array<number> = []
      const observer = new PerformanceObserver((list) => {
        for (const entry of list.getEntries()) pauses.push(entry.duration)
      })
      observer.observe({ entryTypes: ["gc"] })
      return { observer, pauses, start: performance.now() }
    }),
    (gc) =>
      Effect.map(effect, (a) => {
        // Entries are delivered asynchronously; the ones of the run's last moments may be missed.
        const sorted = [...gc.pauses].sort((x, y) => x - y)
        const pauses: GcPauses = {
          perSecond: sorted.length / ((performance.now() - gc.start) / 1000),
          p50Ms: sorted[Math.floor(sorted.length / 2)] ?? 0,
          maxMs: sorted.at(-1) ?? 0
        }
        return [a, pauses] as const
      }),
    (gc) => Effect.sync(() => gc.observer.disconnect())
  )

/**
 * CPU time per send, in milliseconds: the host's process (the load generator's thread left out; with the
 * network in it when it runs in-process), PostgreSQL's processes and the network's own process, where the
 * machine tells (Linux's `/proc`).
 */
export interface ProxyCpu {
  readonly host: number
  /**
   * The share of the throughput run the host's event loop was busy (the load generator runs on a thread of its
   * own): near 1, one host process is the limit whatever the machine's cores.
   */
  readonly hostLoop: number
  readonly postgres: number | undefined
  readonly network: number | undefined
  readonly cores: number
  /** The host's writes to PostgreSQL (round trips or pipelined batches) per send: counted, so not moved by load. */
  readonly writes: number
  /** KB the host allocated per send (the load generator's thread apart), its status reports included: counted too. */
  readonly allocatedKb: number
}

const KEY = "pk_bench_proxy_0123456789abcdef01"
const profileDir = process.env.PROXY_PROFILE

/** `effect` under the host's CPU profiler when `PROXY_PROFILE` names a directory, written there as `<name>.cpuprofile`. */
const profiled = <A, E, R>(name: string, effect: Effect.Effect<A, E, R>) =>
  profileDir === undefined ? effect : Effect.acquireUseRelease(
    Effect.promise(startProfile),
    () => effect,
    (stop) => Effect.promise(() => stop(Path.join(profileDir, `${name}.cpuprofile`)))
  )
/** Sends spread over this many contacts: sends to one contact are serialised by design (decisions 4.10). */
const CONTACTS = Array.from({ length: 256 }, (_, i) => `1555100${String(i).padStart(4, "0")}`)

/** When the simulated network has sent the last status report of a send (read after 3 s, batched for 50 ms). */
const STATUSES_DUE_MS = 3_500

/** How long the idle host is watched before the muted run, to take its background work off that run's figures. */
const IDLE_MS = 2_000

/** Signs the remote network's webhooks; the host checks them with it. */
const APP_SECRET = "bench-network-app-secret"

/** The simulated number (the `PARLEY_SIM_*` defaults, which `network.ts` registers too). */
const SIM_NUMBER = { phoneNumberId: "100000000000001", businessAccountId: "200000000000001", token: "parley-simulator-token" }

/**
 * Where the network runs: `in-process` is the host's own simulator (`PARLEY_UPSTREAM=simulator`, what
 * `npm start` runs); `remote` is the simulator in a process of its own (`network.ts`) reached through the
 * Cloud API adapter over HTTP (`PARLEY_UPSTREAM=cloud`), as a host in production reaches the network, its
 * webhooks coming back over HTTP to the ingestion endpoint.
 */
export type ProxyNetwork = "in-process" | "remote"

/**
 * The network of `mode` beside a bench host: the direct target's base URL and its controls (`mute` stops its
 * webhooks, `unmute` sends them to the host's ingestion again).
 */
const startNetwork = (mode: ProxyNetwork, tracer: Tracer.Tracer | undefined) =>
  Effect.gen(function*() {
    if (mode === "in-process") {
      const { context, postgresPid, url } = yield* startBenchHost(KEY, { tracer })
      const settings = Context.get(context, UpstreamSettings)
      const simulator = Option.getOrThrow(Context.getOption(context, Simulator.NetworkSimulator))
      // The simulator's own HTTP face over the same simulator: the network without Parley in front.
      const direct = yield* Layer.build(
        HttpRouter.serve(SimulatorServer.routes(), { disableLogger: true, disableListenLog: true }).pipe(
          Layer.provideMerge(NodeHttpServer.layer(Http.createServer, { port: 0, host: "127.0.0.1" })),
          Layer.provide(Layer.succeed(Simulator.NetworkSimulator, simulator))
        )
      )
      const directUrl = yield* HttpServer.addressFormattedWith(Effect.succeed).pipe(Effect.provideContext(direct))
      const ingestion = Context.get(context, UpstreamIngestion)
      return {
        context,
        url,
        postgresPid,
        networkPid: undefined,
        directUrl,
        mute: simulator.setSink(undefined),
        unmute: simulator.setSink((body, signature) => ingestion.receive(body, signature)),
        lift: simulator.updateNumber(SIM_NUMBER.phoneNumberId, {
          throughputPerSecond: 1_000_000,
          pairBurst: 1_000_000,
          pairIntervalMs: 1
        }),
        inbound: Effect.forEach(CONTACTS, (from) =>
          simulator.inbound(SIM_NUMBER.phoneNumberId, { from, message: { type: "text", text: { body: "hi" } } }), {
          discard: true
        })
      }
    }
    const { command, pid: networkPid, port } = yield* forkNetwork(APP_SECRET)
    const directUrl = `http://127.0.0.1:${port}`
    const { context, postgresPid, url } = yield* startBenchHost(KEY, {
      tracer,
      env: { PARLEY_UPSTREAM: "cloud", PARLEY_UPSTREAM_URL: directUrl, PARLEY_UPSTREAM_APP_SECRET: APP_SECRET }
    })
    const unmute = command({ sink: `${url}/platform/v1/msg/upstream/webhook` })
    yield* unmute
    return {
      context,
      url,
      postgresPid,
      networkPid,
      directUrl,
      mute: command({ sink: null }),
      unmute,
      lift: command({ lift: SIM_NUMBER.phoneNumberId }),
      inbound: command({ inbound: { phoneNumberId: SIM_NUMBER.phoneNumberId, contacts: CONTACTS } })
    }
  })

export const benchProxy = (
  options: {
    readonly durationMs: number
    readonly connections: number
    readonly network?: ProxyNetwork | undefined
    /** Sends traced one at a time after the one-at-a-time run (`PROXY_TRACE`). */
    readonly traced?: number | undefined
    /** Network calls alone per way of making one (`PROXY_CALLS`, see `proxyCalls.ts`). */
    readonly calls?: number | undefined
  }
) =>
  Effect.gen(function*() {
    const network = options.network ?? "in-process"
    const tracing = options.traced === undefined ? undefined : replyTracer()
    const { context, directUrl, inbound, lift, mute, networkPid, postgresPid, unmute, url } = yield* startNetwork(network, tracing?.tracer)
    const headers = { "x-api-key": KEY, "content-type": "application/json" }
    const connected = yield* Effect.promise(() =>
      fetch(`${url}/platform/v1/msg/phone_numbers`, {
        method: "POST",
        headers,
        body: JSON.stringify({
          msg_config: {
            phone_number_id: SIM_NUMBER.phoneNumberId,
            business_account_id: SIM_NUMBER.businessAccountId,
            access_token: SIM_NUMBER.token
          }
        })
      })
    )
    if (connected.status !== 201) return yield* Effect.die(new Error(`connect: ${connected.status}`))
    yield* lift
    // Each contact writes first, so its 24-hour window is open; wait until Parley has stored them all.
    yield* inbound
    yield* Effect.promise(async () => {
      for (let i = 0; i < 300; i++) {
        const page = await fetch(`${url}/platform/v1/msg/conversations?per_page=1`, { headers }).then((x) => x.json()) as any
        if (page.meta.total_count >= CONTACTS.length) return
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
      throw new Error("the contacts' first messages were not all stored")
    })

    const bodies = CONTACTS.map((to) => JSON.stringify({ messaging_product: "whatsapp", to, type: "text", text: { body: "hello" } }))
    const run = (target: string, h: Record<string, string>, connections = options.connections) =>
      Effect.promise(() => load({ url: target, headers: h, method: "POST", bodies, durationMs: options.durationMs, connections }))
    const parleyTarget = `${url}/proxy/v24.0/${SIM_NUMBER.phoneNumberId}/messages`
    const directTarget = `${directUrl}/v24.0/${SIM_NUMBER.phoneNumberId}/messages`
    const directHeaders = { authorization: `Bearer ${SIM_NUMBER.token}`, "content-type": "application/json" }
    // Straight to the network first, muted until its last status reports (read, 3 s after a send) are due.
    yield* mute
    const directSerial = yield* run(directTarget, directHeaders, 1)
    const directResult = yield* run(directTarget, directHeaders)
    yield* Effect.sleep(STATUSES_DUE_MS)
    yield* unmute
    yield* run(parleyTarget, headers)
    // The warm-up's last status reports are in first: the one-at-a-time run measures its own sends' work only.
    yield* Effect.sleep(STATUSES_DUE_MS)
    const serialCpu = process.cpuUsage()
    const [parleySerial, serialPauses] = yield* profiled("serial", withGcPauses(run(parleyTarget, headers, 1)))
    const serialUsed = process.cpuUsage(serialCpu)
    const serialHostCpu = (serialUsed.user + serialUsed.system - parleySerial.generatorCpuMicros) / 1000 / parleySerial.requests
    const traced = tracing === undefined ? undefined : yield* Effect.promise(async () => {
      const spans = []
      const latencies: Array<number> = []
      for (let i = 0; i < options.traced!; i++) {
        const trace = tracing.start()
        const at = performance.now()
        const answer = await fetch(parleyTarget, { method: "POST", headers: { ...headers, traceparent: trace.header }, body: bodies[i % bodies.length]! })
        await answer.arrayBuffer()
        latencies.push(performance.now() - at)
        spans.push(trace.take())
      }
      return { spans, p50: latencies.sort((a, b) => a - b)[Math.floor(latencies.length / 2)]! }
    })
    // The same sends with the network's status reports muted: the host's CPU of the send alone (its reports apart).
    yield* Effect.sleep(STATUSES_DUE_MS)
    yield* mute
    // What the idle host spends meanwhile (pg-boss's polls, timers): a second of it first, taken off the run's figures.
    const idleCpu = process.cpuUsage()
    const idleAllocated = allocationCounter()
    const idleAt = performance.now()
    yield* Effect.sleep(IDLE_MS)
    const idleBytes = idleAllocated()
    const idleUsed = process.cpuUsage(idleCpu)
    const idleMs = performance.now() - idleAt
    const aloneCpu = process.cpuUsage()
    const aloneAllocated = allocationCounter()
    const aloneAt = performance.now()
    const stopSampling = yield* sampleAllocations(profileDir === undefined ? undefined : Path.join(profileDir, "serial-alone.heapprofile"))
    const parleyAlone = yield* profiled("serial-alone", run(parleyTarget, headers, 1))
    yield* stopSampling
    const aloneBytesAll = aloneAllocated()
    const aloneUsed = process.cpuUsage(aloneCpu)
    const aloneShare = (performance.now() - aloneAt) / idleMs
    // Still muted: the network call alone, each way a host can make it (`PROXY_CALLS`).
    const calls = options.calls === undefined ? undefined : yield* compareCalls({
      context,
      baseUrl: directUrl,
      phoneNumberId: SIM_NUMBER.phoneNumberId,
      token: SIM_NUMBER.token,
      body: bodies[0]!,
      calls: options.calls,
      gapsMs: [0, 15]
    })
    yield* unmute
    const aloneBytes = (aloneBytesAll - idleBytes * aloneShare) / parleyAlone.requests
    const aloneHostCpu =
      (aloneUsed.user + aloneUsed.system - parleyAlone.generatorCpuMicros - (idleUsed.user + idleUsed.system) * aloneShare) / 1000 /
      parleyAlone.requests
    const idleCpuPerSecond = (idleUsed.user + idleUsed.system) / 1000 / (idleMs / 1000)
    const serialSpans = traced === undefined ? undefined : spanBreakdown(traced.spans)
    const serialTimeline = traced === undefined ? undefined : spanTimeline(traced.spans)
    // The earlier runs' last status reports are in first: the CPU counted below is the measured sends' own.
    yield* Effect.sleep(STATUSES_DUE_MS)
    const cpuAt = (pid: number | undefined) => pid === undefined ? undefined : processTreeCpuMicros(pid)
    const before = { host: process.cpuUsage(), postgres: cpuAt(postgresPid), network: cpuAt(networkPid) }
    const loopBefore = performance.eventLoopUtilization()
    const writes = countDatabaseWrites()
    const allocated = allocationCounter()
    const [parley, hostLoop] = yield* profiled("throughput", Effect.gen(function*() {
      const parley = yield* run(parleyTarget, headers)
      const hostLoop = performance.eventLoopUtilization(loopBefore).utilization
      yield* Effect.sleep(STATUSES_DUE_MS)
      return [parley, hostLoop] as const
    }))
    writes.restore()
    const bytes = allocated()
    const host = process.cpuUsage(before.host)
    const perSend = (micros: number) => micros / 1000 / parley.requests
    const since = (start: number | undefined, end: number | undefined) =>
      start === undefined || end === undefined ? undefined : perSend(end - start)
    const cpu: ProxyCpu = {
      host: perSend(host.user + host.system - parley.generatorCpuMicros),
      hostLoop,
      postgres: since(before.postgres, cpuAt(postgresPid)),
      network: since(before.network, cpuAt(networkPid)),
      cores: Os.availableParallelism(),
      writes: writes.count() / parley.requests,
      allocatedKb: bytes / 1024 / parley.requests
    }
    return {
      network,
      parleySerial,
      directSerial,
      parley,
      direct: directResult,
      cpu,
      serialHostCpu,
      parleyAlone,
      aloneHostCpu,
      aloneKb: aloneBytes / 1024,
      idleCpuPerSecond,
      idleKbPerSecond: idleBytes / 1024 / (idleMs / 1000),
      serialPauses,
      serialSpans,
      serialTimeline,
      tracedP50: traced?.p50,
      calls
    } satisfies ProxyBenchResult
  }).pipe(Effect.scoped)

const formatCpu = ({ cpu, network }: ProxyBenchResult) =>
  [
    `host ${cpu.host.toFixed(2)} ms${network === "in-process" ? " (the network in it)" : ""}`,
    ...(cpu.postgres === undefined ? [] : [`PostgreSQL ${cpu.postgres.toFixed(2)} ms`]),
    ...(cpu.network === undefined ? [] : [`network ${cpu.network.toFixed(2)} ms`])
  ].join(", ") + `; ${cpu.cores} cores on this machine; the host's event loop busy ${(cpu.hostLoop * 100).toFixed(0)}% of the run`

export const formatProxyBench = (r: ProxyBenchResult): string => {
  const row = (name: string, x: LoadResult) =>
    `  ${name.padEnd(40)} ${x.rps.toFixed(0).padStart(6)} sends/s   p50 ${x.p50Ms.toFixed(2)} ms   p99 ${x.p99Ms.toFixed(2)} ms   errors ${x.errors}`
  return [
    `Proxy sends (text to ${CONTACTS.length} contacts in turn, Postgres storage, simulated network with its limits lifted, ${
      r.network === "remote"
        ? "in a process of its own behind the Cloud API adapter"
        : "in the host's process"
    })`,
    row("1 connection: POST /proxy/v24.0/<pnid>/...", r.parleySerial),
    row("1 connection: straight to the simulator", r.directSerial),
    `  added by Parley, one send at a time: p50 ${(r.parleySerial.p50Ms - r.directSerial.p50Ms).toFixed(2)} ms, p99 ${
      (r.parleySerial.p99Ms - r.directSerial.p99Ms).toFixed(2)
    } ms (target p50 <= 2 ms on a quiet machine); the host's CPU ${r.serialHostCpu.toFixed(2)} ms per send${
      r.network === "in-process" ? " (the network in it)" : ""
    }`,
    row("1 connection, status reports muted", r.parleyAlone),
    `  added by Parley without the status reports' work: p50 ${(r.parleyAlone.p50Ms - r.directSerial.p50Ms).toFixed(2)} ms; the host's CPU ${
      r.aloneHostCpu.toFixed(2)
    } ms per send, ${r.aloneKb.toFixed(0)} KB allocated per send (the idle host's ${r.idleCpuPerSecond.toFixed(0)} ms of CPU and ${
      r.idleKbPerSecond.toFixed(0)
    } KB a second taken off)`,
    `  the host's garbage collector paused it ${r.serialPauses.perSecond.toFixed(1)} times a second meanwhile (p50 ${
      r.serialPauses.p50Ms.toFixed(2)
    } ms, longest ${r.serialPauses.maxMs.toFixed(2)} ms): a send in flight waits out a pause`,
    ...(r.serialSpans === undefined ? [] : [
      `  where one send's time goes in the host (mean ms and count per send, spans overlap):`,
      ...r.serialSpans.slice(0, 25).map((s) => `    ${s.ms.toFixed(3).padStart(7)} ms  x${s.count.toFixed(1).padStart(4)}  ${s.name}`)
    ]),
    ...(r.serialTimeline === undefined ? [] : [
      `  one send's time line (median ms from the server span's start; the client saw p50 ${r.tracedP50!.toFixed(2)} ms):`,
      ...r.serialTimeline.slice(0, 40).map((s) =>
        `    ${s.startMs.toFixed(3).padStart(7)} -> ${s.endMs.toFixed(3).padStart(7)}  ${s.name}${s.count < r.serialTimeline![0]!.count ? ` (in ${s.count} sends)` : ""}`
      )
    ]),
    ...(r.calls === undefined ? [] : formatCalls(r.calls)),
    row(`${r.parley.connections} connections: POST /proxy/...`, r.parley),
    row(`${r.direct.connections} connections: straight to the simulator`, r.direct),
    `  ratio Parley / simulator: ${(r.parley.rps / r.direct.rps).toFixed(2)} (target >= 0.3)`,
    `  CPU per send at ${r.parley.connections} connections, status reports included: ${formatCpu(r)}`,
    `  host writes to PostgreSQL per send at ${r.parley.connections} connections, status reports included: ${r.cpu.writes.toFixed(2)}; KB allocated per send ${
      r.cpu.allocatedKb.toFixed(0)
    }`,
    ""
  ].join("\n")
}

if (process.argv[1] !== undefined && Path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const network = process.env.NETWORK === "remote" ? "remote" : "in-process"
  const traced = process.env.PROXY_TRACE === undefined ? undefined : Number(process.env.PROXY_TRACE)
  const calls = process.env.PROXY_CALLS === undefined ? undefined : Number(process.env.PROXY_CALLS)
  Effect.runPromise(benchProxy({ durationMs: Number(process.env.DURATION_MS ?? 3000), connections: Number(process.env.CONNECTIONS ?? 16), network, traced, calls }).pipe(
    Effect.map((r) => console.log(formatProxyBench(r))),
    Effect.provideService(References.MinimumLogLevel, "Warn")
  )).catch((error) => {
    console.error(error)
    process.exitCode = 1
  })
}
