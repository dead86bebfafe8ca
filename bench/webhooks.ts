/**
 * Project events and their signed webhook deliveries, on Postgres with the
 * pg-boss queue, through the real HTTP API:
 *
 * - signed deliveries/s to a loopback receiver (`receiver.ts`, a process of
 *   its own) subscribed to `project.event`:
 *   a backlog of events (20,000: a few seconds of work, so the figure is the
 *   pipeline running rather than its warm-up) is emitted while the host runs
 *   no workers (they wait in the outbox), then the workers start and the time
 *   until every delivery arrived is measured: relay, dispatch, attempts and
 *   signed POSTs, not the emitter. Three rounds, the median reported (a
 *   shared machine's busy moments move a single round by a fifth);
 * - the latency from an event's emission to its delivery (p50/p99) at a
 *   steady rate the pipeline keeps up with;
 * - the baseline of the drain: as many signed POSTs straight from the host's
 *   own HTTP client to the receiver (what the pipeline adds to sending);
 * - events ingested/s: `POST /platform/v1/events` under load, workers running
 *   (the webhook deleted), against a bare node:http server parsing the same
 *   body and answering it.
 *
 *   node --max-semi-space-size=8 --conditions=@parley/source bench/webhooks.ts
 */
import { Parley, WebhookHttp } from "@parley/core"
import { Host } from "@parley/http-node"
import { Context, Effect, Exit, Layer, References, Scope } from "effect"
import * as ChildProcess from "node:child_process"
import { createHmac } from "node:crypto"
import * as Http from "node:http"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { layerNodeWebhookHttp } from "../packages/http-node/src/adapters/NodeWebhookHttp.ts"
import { allocationCounter } from "./allocation.ts"
import { processTreeCpuMicros } from "./cpu.ts"
import { startBenchHost } from "./host.ts"
import { load, type LoadResult } from "./load.ts"
import type { Arrival } from "./receiver.ts"

export interface WebhooksBenchResult {
  readonly events: LoadResult
  /** The same POSTs to a bare node:http server parsing the body and answering it. */
  readonly bareEvents: LoadResult
  /** Events of each round's backlog, each delivered once. */
  readonly backlog: number
  /** The rounds, in the order they ran. */
  readonly drains: ReadonlyArray<Drain>
  /** The round of median `deliveriesPerSecond`. */
  readonly median: Drain
  /** As many signed POSTs straight from the host's HTTP client to the receiver (no pipeline). */
  readonly directPerSecond: number
  readonly pacedPerSecond: number
  readonly latencyP50Ms: number
  readonly latencyP99Ms: number
}

export interface Drain {
  /** Deliveries received while draining: more than the backlog means some were delivered twice. */
  readonly deliveries: number
  readonly drainSeconds: number
  /** The backlog over the drain, from the workers' start (their start-up included). */
  readonly deliveriesPerSecond: number
  /** Deliveries between the first and the last arrival over that time: the pipeline once running. */
  readonly steadyPerSecond: number
  /** CPU per delivery over the drain (workers' start-up included): the host's threads and PostgreSQL's processes, ms. */
  readonly hostCpuMs: number
  readonly postgresCpuMs: number | undefined
  /** Bytes the host allocated per delivery over the drain. */
  readonly allocatedKb: number
}

const KEY = "pk_bench_webhooks_0123456789abcdef"
const ROUNDS = 3

const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!

export const benchWebhooks = (options: {
  readonly durationMs: number
  readonly connections: number
  /** Events of the backlog the delivery figure drains. */
  readonly deliveries: number
  /** Events emitted at `pacedPerSecond` for the latency figure. */
  readonly paced?: number | undefined
  readonly pacedPerSecond?: number | undefined
}) =>
  Effect.gen(function*() {
    const paced = options.paced ?? 1000
    const pacedPerSecond = options.pacedPerSecond ?? 250
    // The receiver is on loopback: the operator's switch for private webhook URLs, read when the host starts.
    process.env.PARLEY_ALLOW_PRIVATE_WEBHOOK_URLS = "true"
    const { url, context, postgresPid } = yield* startBenchHost(KEY, { workers: false })
    const headers = { "x-api-key": KEY, "content-type": "application/json" }
    const emit = (name: string) =>
      fetch(`${url}/platform/v1/events`, {
        method: "POST",
        headers,
        body: JSON.stringify({ name, properties: { t: Date.now() } })
      }).then(async (r) => {
        if (r.status !== 201) throw new Error(`emit: ${r.status} ${await r.text()}`)
      })

    // The receiver (its own process) reports when each delivery arrives, with the emission time the event carries.
    const arrivals: Array<Arrival> = []
    let waiting: { readonly name: string; readonly count: number; readonly resolve: () => void } | undefined
    const distinct = new Map<string, Set<string>>()
    const receiver = yield* Effect.acquireRelease(
      Effect.sync(() => ChildProcess.fork(fileURLToPath(new URL("./receiver.ts", import.meta.url)))),
      (child) => Effect.sync(() => child.kill())
    )
    const port = yield* Effect.promise(() =>
      new Promise<number>((resolve) =>
        receiver.on("message", (message: { readonly port?: number; readonly arrivals?: ReadonlyArray<Arrival> }) => {
          if (message.port !== undefined) return resolve(message.port)
          for (const arrival of message.arrivals ?? []) {
            arrivals.push(arrival)
            const seen = distinct.get(arrival.name) ?? new Set<string>()
            distinct.set(arrival.name, seen.add(arrival.id))
            const wanted = waiting
            if (wanted !== undefined && wanted.name === arrival.name && seen.size >= wanted.count) wanted.resolve()
          }
        })
      )
    )
    const arrived = (name: string, count: number) =>
      Effect.promise(() => new Promise<void>((resolve) => (waiting = { name, count, resolve }))).pipe(
        Effect.timeout("180 seconds")
      )
    const receiverUrl = `http://127.0.0.1:${port}/hook`
    const registered = yield* Effect.promise(() =>
      fetch(`${url}/platform/v1/msg/webhooks`, {
        method: "POST",
        headers,
        body: JSON.stringify({ msg_webhook: { url: receiverUrl, events: ["project.event"], secret_key: "bench-secret" } })
      })
    )
    const body = yield* Effect.promise(() => registered.text())
    if (registered.status !== 201) return yield* Effect.die(new Error(`webhook registration: ${registered.status} ${body}`))
    const webhookId: string = JSON.parse(body).data.id

    // Each round: a backlog emitted with no workers running (every event waits in the outbox), then drained by
    // workers started for it; the last round's workers stay for the latency figure.
    const drains: Array<Drain> = []
    for (let round = 0; round < ROUNDS; round++) {
      const name = `bench.backlog.${round}`
      let next = 0
      yield* Effect.promise(() =>
        Promise.all(Array.from({ length: 16 }, async () => {
          while (next < options.deliveries) {
            next++
            await emit(name)
          }
        }))
      )
      const workers = yield* Scope.fork(yield* Effect.scope)
      const drainStart = Date.now()
      const hostBefore = process.cpuUsage()
      const postgresBefore = processTreeCpuMicros(postgresPid)
      const allocated = allocationCounter()
      // Built with the host's context depth, as `npm start` builds its workers (`startBenchHost`): providing the
      // host's context to this fiber would otherwise give the workers this fiber's default depth, and a delivery
      // would copy its whole context (~160 services) once (~25 KB) where `npm start` copies none.
      yield* Layer.build(Parley.layerWorkers).pipe(Effect.provideContext(context), Host.deepContexts, Scope.provide(workers))
      yield* arrived(name, options.deliveries)
      const allocatedBytes = allocated()
      const hostUsed = process.cpuUsage(hostBefore)
      const postgresAfter = processTreeCpuMicros(postgresPid)
      const mine = arrivals.filter((a) => a.name === name).map((a) => a.at)
      const last = Math.max(...mine)
      const drainSeconds = (last - drainStart) / 1000
      drains.push({
        deliveries: mine.length,
        drainSeconds,
        deliveriesPerSecond: options.deliveries / drainSeconds,
        steadyPerSecond: (mine.length - 1) / ((last - Math.min(...mine)) / 1000),
        hostCpuMs: (hostUsed.user + hostUsed.system) / 1000 / options.deliveries,
        postgresCpuMs: postgresBefore === undefined || postgresAfter === undefined
          ? undefined
          : (postgresAfter - postgresBefore) / 1000 / options.deliveries,
        allocatedKb: allocatedBytes / 1024 / options.deliveries
      })
      if (round < ROUNDS - 1) yield* Scope.close(workers, Exit.void)
    }
    const median = [...drains].sort((a, b) => a.deliveriesPerSecond - b.deliveriesPerSecond)[Math.floor(ROUNDS / 2)]!

    // The baseline: as many signed POSTs of the same shape straight from the host's own HTTP client to the
    // receiver, 512 at a time (the inline attempts a host makes at once): no outbox, relay, storage or jobs.
    // The host's adapter (Node's HTTP client, its keep-alive agent).
    const http = Context.get(yield* Layer.build(layerNodeWebhookHttp), WebhookHttp)
    let sent = 0
    const post = Effect.suspend(() => {
      const body = Buffer.from(JSON.stringify({ data: { id: `direct-${sent++}`, name: "bench.direct", properties: { t: Date.now() } } }))
      return http.post({
        url: receiverUrl,
        headers: {
          "content-type": "application/json",
          "x-webhook-signature": createHmac("sha256", "bench-secret").update(body).digest("hex")
        },
        body,
        timeoutMs: 10_000,
        allowPrivate: true
      })
    })
    const directStart = Date.now()
    yield* Effect.forEach(Array.from({ length: options.deliveries }), () => Effect.ignore(post), { concurrency: 512, discard: true })
    yield* arrived("bench.direct", options.deliveries)
    const direct = options.deliveries /
      ((Math.max(...arrivals.filter((a) => a.name === "bench.direct").map((a) => a.at)) - directStart) / 1000)

    // Latency at a steady rate.
    const pacedStart = Date.now()
    yield* Effect.promise(() =>
      Promise.all(Array.from({ length: paced }, async (_, i) => {
        await new Promise((resolve) => setTimeout(resolve, Math.max(0, pacedStart + (i * 1000) / pacedPerSecond - Date.now())))
        await emit("bench.paced")
      }))
    )
    yield* arrived("bench.paced", paced)
    const latencies = arrivals.filter((a) => a.name === "bench.paced").map((a) => a.at - a.t).sort((a, b) => a - b)

    // Ingestion with the workers running, every event relayed and dispatched to no webhook.
    const deleted = yield* Effect.promise(() => fetch(`${url}/platform/v1/msg/webhooks/${webhookId}`, { method: "DELETE", headers }))
    if (deleted.status !== 204) return yield* Effect.die(new Error(`webhook deletion: ${deleted.status}`))
    const eventBody = JSON.stringify({ name: "bench.load", properties: { n: 1, label: "load" } })
    const run = (durationMs: number) =>
      Effect.promise(() =>
        load({ url: `${url}/platform/v1/events`, headers, method: "POST", body: eventBody, connections: options.connections, durationMs })
      )
    yield* run(1000)
    const events = yield* run(options.durationMs)

    // The baseline: a bare node:http server reading the same body as JSON and answering 201 with it.
    const bare = Http.createServer((req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (c: Buffer) => chunks.push(c))
      req.on("end", () => {
        const body = JSON.stringify({ data: JSON.parse(Buffer.concat(chunks).toString("utf8")) })
        res.writeHead(201, { "content-type": "application/json" }).end(body)
      })
    })
    yield* Effect.acquireRelease(
      Effect.promise(() => new Promise<void>((resolve) => bare.listen(0, "127.0.0.1", resolve))),
      () => Effect.promise(() => new Promise<void>((resolve) => bare.close(() => resolve())))
    )
    const bareUrl = `http://127.0.0.1:${(bare.address() as { port: number }).port}/platform/v1/events`
    const bareEvents = yield* Effect.promise(() =>
      load({ url: bareUrl, headers, method: "POST", body: eventBody, connections: options.connections, durationMs: options.durationMs })
    )

    return {
      events,
      bareEvents,
      backlog: options.deliveries,
      drains,
      median,
      directPerSecond: direct,
      pacedPerSecond,
      latencyP50Ms: percentile(latencies, 50),
      latencyP99Ms: percentile(latencies, 99)
    } satisfies WebhooksBenchResult
  }).pipe(Effect.scoped)

export const formatWebhooksBench = (r: WebhooksBenchResult): string =>
  [
    "Project events and signed webhook deliveries (Postgres storage, pg-boss)",
    `  POST /platform/v1/events            ${r.events.rps.toFixed(0).padStart(7)} events/s   p50 ${r.events.p50Ms.toFixed(2)} ms   p99 ${r.events.p99Ms.toFixed(2)} ms   errors ${r.events.errors}   (target >= 10,000/s)`,
    `  bare node:http, same body parsed   ${r.bareEvents.rps.toFixed(0).padStart(7)} events/s   p50 ${r.bareEvents.p50Ms.toFixed(2)} ms   p99 ${r.bareEvents.p99Ms.toFixed(2)} ms   ratio Parley / bare: ${(r.events.rps / r.bareEvents.rps).toFixed(2)}`,
    `  signed deliveries to a loopback receiver (own process), a backlog of ${r.backlog} events drained from the outbox, median of ${r.drains.length} rounds: ${r.median.deliveries} deliveries in ${r.median.drainSeconds.toFixed(1)} s (workers' start-up included) = ${r.median.deliveriesPerSecond.toFixed(0)}/s; from the first delivery to the last ${r.median.steadyPerSecond.toFixed(0)}/s (target >= 5,000/s)`,
    `    per delivery (that round): CPU host ${r.median.hostCpuMs.toFixed(3)} ms${
      r.median.postgresCpuMs === undefined ? "" : `, PostgreSQL ${r.median.postgresCpuMs.toFixed(3)} ms`
    }; host allocation ${r.median.allocatedKb.toFixed(1)} KB`,
    `    rounds: ${r.drains.map((d) => `${d.deliveriesPerSecond.toFixed(0)}/s (${d.deliveries} deliveries)`).join(", ")}`,
    `  the same number of signed POSTs straight from the host's HTTP client, 512 at a time: ${r.directPerSecond.toFixed(0)}/s; ratio drain / direct: ${(r.median.deliveriesPerSecond / r.directPerSecond).toFixed(2)}`,
    `  emission to delivery at ${r.pacedPerSecond} events/s: p50 ${r.latencyP50Ms.toFixed(0)} ms   p99 ${r.latencyP99Ms.toFixed(0)} ms`,
    ""
  ].join("\n")

if (process.argv[1] !== undefined && Path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  Effect.runPromise(benchWebhooks({ durationMs: 4000, connections: 32, deliveries: 20_000 }).pipe(
    Effect.map((r) => console.log(formatWebhooksBench(r))),
    Effect.provideService(References.MinimumLogLevel, "Warn")
  )).catch((error) => {
    console.error(error)
    process.exitCode = 1
  })
}
