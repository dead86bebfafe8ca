/**
 * Project events and their signed webhook deliveries, on Postgres with the
 * pg-boss queue, through the real HTTP API:
 *
 * - events ingested/s: `POST /platform/v1/events` under load (no webhook yet);
 * - signed deliveries/s to a loopback receiver subscribed to `project.event`,
 *   and the latency from the event's emission to its delivery (p50/p99).
 *
 *   node --conditions=@parley/source bench/webhooks.ts
 */
import { Effect, References } from "effect"
import * as Http from "node:http"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { startBenchHost } from "./host.ts"
import { load, type LoadResult } from "./load.ts"

export interface WebhooksBenchResult {
  readonly events: LoadResult
  readonly deliveries: number
  /** Distinct events among the deliveries: fewer than `deliveries` means some were delivered twice. */
  readonly distinct: number
  readonly deliveriesPerSecond: number
  readonly latencyP50Ms: number
  readonly latencyP99Ms: number
}

const KEY = "pk_bench_webhooks_0123456789abcdef"

const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!

export const benchWebhooks = (options: { readonly durationMs: number; readonly connections: number; readonly deliveries: number }) =>
  Effect.gen(function*() {
    // The receiver is on loopback: the operator's switch for private webhook URLs, read when the host starts.
    process.env.PARLEY_ALLOW_PRIVATE_WEBHOOK_URLS = "true"
    const { url, context } = yield* startBenchHost(KEY)
    const headers = { "x-api-key": KEY, "content-type": "application/json" }

    const eventBody = JSON.stringify({ name: "bench.load", properties: { n: 1, label: "load" } })
    const run = () =>
      Effect.promise(() =>
        load({ url: `${url}/platform/v1/events`, headers, method: "POST", body: eventBody, connections: options.connections, durationMs: options.durationMs })
      )
    yield* Effect.promise(() =>
      load({ url: `${url}/platform/v1/events`, headers, method: "POST", body: eventBody, connections: options.connections, durationMs: 1000 })
    )
    const events = yield* run()

    // A receiver that notes when each delivery arrives, against the emission time the event carries.
    const latencies: Array<number> = []
    const ids = new Set<string>()
    let firstEmit = 0
    let lastArrival = 0
    let done: () => void = () => {}
    const allArrived = new Promise<void>((resolve) => (done = resolve))
    const receiver = Http.createServer((req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (c: Buffer) => chunks.push(c))
      req.on("end", () => {
        const payload = JSON.parse(Buffer.concat(chunks).toString("utf8"))
        res.writeHead(200).end()
        // Events of the load phase still on their way through the outbox reach the new webhook too: not counted.
        if (payload.data.name !== "bench.delivered") return
        lastArrival = Date.now()
        ids.add(payload.data.id)
        latencies.push(lastArrival - payload.data.properties.t)
        if (ids.size === options.deliveries) done()
      })
    })
    yield* Effect.acquireRelease(
      Effect.promise(() => new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve))),
      () => Effect.promise(() => new Promise<void>((resolve) => receiver.close(() => resolve())))
    )
    const receiverUrl = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`
    const registered = yield* Effect.promise(() =>
      fetch(`${url}/platform/v1/msg/webhooks`, {
        method: "POST",
        headers,
        body: JSON.stringify({ msg_webhook: { url: receiverUrl, events: ["project.event"], secret_key: "bench-secret" } })
      })
    )
    if (registered.status !== 201) return yield* Effect.die(new Error(`webhook registration: ${registered.status} ${yield* Effect.promise(() => registered.text())}`))

    firstEmit = Date.now()
    let next = 0
    yield* Effect.promise(() =>
      Promise.all(Array.from({ length: 16 }, async () => {
        while (next < options.deliveries) {
          next++
          await fetch(`${url}/platform/v1/events`, {
            method: "POST",
            headers,
            body: JSON.stringify({ name: "bench.delivered", properties: { t: Date.now() } })
          }).then((r) => r.arrayBuffer())
        }
      }))
    )
    yield* Effect.promise(() => allArrived).pipe(Effect.timeout("120 seconds"))
    latencies.sort((a, b) => a - b)
    return {
      events,
      deliveries: latencies.length,
      distinct: ids.size,
      deliveriesPerSecond: latencies.length / ((lastArrival - firstEmit) / 1000),
      latencyP50Ms: percentile(latencies, 50),
      latencyP99Ms: percentile(latencies, 99)
    } satisfies WebhooksBenchResult
  }).pipe(Effect.scoped)

export const formatWebhooksBench = (r: WebhooksBenchResult): string =>
  [
    "Project events and signed webhook deliveries (Postgres storage, pg-boss)",
    `  POST /platform/v1/events            ${r.events.rps.toFixed(0).padStart(7)} events/s   p50 ${r.events.p50Ms.toFixed(2)} ms   p99 ${r.events.p99Ms.toFixed(2)} ms   errors ${r.events.errors}   (target >= 10,000/s)`,
    `  signed deliveries to a loopback receiver: ${r.deliveries} (${r.distinct} distinct events) in ${(r.deliveries / r.deliveriesPerSecond).toFixed(1)} s = ${r.deliveriesPerSecond.toFixed(0)}/s (target >= 5,000/s)`,
    `  emission to delivery: p50 ${r.latencyP50Ms.toFixed(0)} ms   p99 ${r.latencyP99Ms.toFixed(0)} ms`,
    ""
  ].join("\n")

if (process.argv[1] !== undefined && Path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  Effect.runPromise(benchWebhooks({ durationMs: 4000, connections: 32, deliveries: 2000 }).pipe(
    Effect.map((r) => console.log(formatWebhooksBench(r))),
    Effect.provideService(References.MinimumLogLevel, "Warn")
  )).catch((error) => {
    console.error(error)
    process.exitCode = 1
  })
}
