/**
 * Upstream webhook ingestion: how long the host takes to acknowledge a signed
 * 100-update POST (signature check + the raw bytes stored + the job queued),
 * through Parley on an embedded PostgreSQL over real HTTP, against a bare
 * `node:http` server that reads the same bytes and answers 200, measured in
 * the same run. Then how long the job queue takes to store every message.
 *
 *   node --max-semi-space-size=8 --conditions=@parley/source bench/ingestion.ts
 */
import { NodeHttpServer } from "@effect/platform-node"
import { Ids, MessageConfigs, Messaging, Projects, UpstreamSettings, UpstreamWebhook } from "@parley/core"
import { Host } from "@parley/http-node"
import { EmbeddedPostgres, layerFromUrl, layerJobQueue, layerStorage } from "@parley/store-pg"
import { Context, Effect, Layer, Option, Redacted, References } from "effect"
import * as Fs from "node:fs"
import * as Http from "node:http"
import { createServer as createNetServer } from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"

export interface IngestionBenchResult {
  readonly payloads: number
  readonly updatesPerPayload: number
  readonly bytesPerPayload: number
  readonly parley: { readonly p50Ms: number; readonly p99Ms: number; readonly maxMs: number }
  readonly bare: { readonly p50Ms: number; readonly p99Ms: number; readonly maxMs: number }
  /** Messages stored per second by the job queue, from the first POST to the last message stored. */
  readonly messagesPerSecond: number
}

const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!

const summary = (samples: Array<number>) => {
  samples.sort((a, b) => a - b)
  return { p50Ms: percentile(samples, 50), p99Ms: percentile(samples, 99), maxMs: samples.at(-1) ?? 0 }
}

export const freePort = Effect.promise(() =>
  new Promise<number>((resolve) => {
    const server = createNetServer()
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as { port: number }).port
      server.close(() => resolve(port))
    })
  })
)

/** A signed `messages` change with `updates` inbound text messages, each from its own contact. */
export const payloadOf = (n: number, updates: number, phoneNumberId: string, businessAccountId: string) => ({
  object: "whatsapp_business_account",
  entry: [{
    id: businessAccountId,
    changes: [{
      field: "messages",
      value: {
        messaging_product: "whatsapp",
        metadata: { display_phone_number: "15550100001", phone_number_id: phoneNumberId },
        contacts: Array.from({ length: updates }, (_, i) => ({ profile: { name: `Contact ${i}` }, wa_id: `4915${String(n * updates + i).padStart(9, "0")}` })),
        messages: Array.from({ length: updates }, (_, i) => ({
          from: `4915${String(n * updates + i).padStart(9, "0")}`,
          id: `wamid.bench.${n}.${i}`,
          timestamp: String(Math.floor(Date.now() / 1000)),
          type: "text",
          text: { body: `message ${i} of payload ${n}` }
        }))
      }
    }]
  }]
})

export const benchIngestion = (options: { readonly payloads?: number; readonly updates?: number } = {}) =>
  Effect.gen(function*() {
    const payloads = options.payloads ?? 200
    const updates = options.updates ?? 100
    const dataDir = yield* Effect.acquireRelease(
      Effect.sync(() => Fs.mkdtempSync(Path.join(Os.tmpdir(), "parley-bench-ingestion-"))),
      (dir) => Effect.sync(() => Fs.rmSync(dir, { recursive: true, force: true }))
    )
    const pg = yield* EmbeddedPostgres.start({ dataDir, throwaway: true })
    const port = yield* freePort
    const url = `http://127.0.0.1:${port}`
    const context = yield* Layer.build(
      Host.serve({ publicUrl: url }).pipe(
        Layer.provideMerge(NodeHttpServer.layer(Http.createServer, { port, host: "127.0.0.1" })),
        Layer.provideMerge(Layer.mergeAll(layerStorage, layerJobQueue(), Ids.layer)),
        Layer.provideMerge(layerFromUrl(pg.url))
      )
    )
    const project = yield* Context.get(context, Projects).create("Bench")
    const config = Option.getOrThrow(yield* Context.get(context, MessageConfigs).bootstrap(project.id))
    const secret = Redacted.value(Option.getOrThrow(Context.get(context, UpstreamSettings).appSecret))
    const bodies = Array.from({ length: payloads + 10 }, (_, n) => {
      const raw = new TextEncoder().encode(JSON.stringify(payloadOf(n, updates, config.phone_number_id, config.business_account_id)))
      return { raw, signature: UpstreamWebhook.hubSignature(raw, secret) }
    })

    const bare = Http.createServer((request, response) => {
      request.on("data", () => undefined)
      request.on("end", () => response.writeHead(200).end())
    })
    yield* Effect.acquireRelease(
      Effect.promise(() => new Promise<void>((resolve) => bare.listen(0, "127.0.0.1", resolve))),
      () => Effect.promise(() => new Promise<void>((resolve) => bare.close(() => resolve())))
    )
    const bareUrl = `http://127.0.0.1:${(bare.address() as { port: number }).port}/platform/v1/msg/upstream/webhook`

    const post = (target: string, body: { readonly raw: Uint8Array; readonly signature: string }) =>
      Effect.promise(async () => {
        const start = performance.now()
        const response = await fetch(target, {
          method: "POST",
          headers: { "content-type": "application/json", "x-hub-signature-256": body.signature },
          body: body.raw as BodyInit
        })
        await response.arrayBuffer()
        if (response.status !== 200) throw new Error(`HTTP ${response.status}`)
        return performance.now() - start
      })

    const target = `${url}/platform/v1/msg/upstream/webhook`
    // Warm up both (JIT, connections) with payloads that are not measured.
    for (const body of bodies.slice(payloads)) {
      yield* post(target, body)
      yield* post(bareUrl, body)
    }
    const messaging = Context.get(context, Messaging)
    const stored = Effect.map(
      messaging.listMessages(project.id, {}, { mode: "page", page: 1, perPage: 1 }),
      (slice) => slice.total
    )
    const warm = 10 * updates
    while ((yield* stored) < warm) yield* Effect.sleep("20 millis")

    const started = performance.now()
    const parleySamples: Array<number> = []
    for (const body of bodies.slice(0, payloads)) parleySamples.push(yield* post(target, body))
    // Page totals are counted up to 10,000: wait for what fits under the cap.
    const expected = Math.min(warm + payloads * updates, 10_000)
    while ((yield* stored) < expected) yield* Effect.sleep("20 millis")
    const processingSeconds = (performance.now() - started) / 1000

    const bareSamples: Array<number> = []
    for (const body of bodies.slice(0, payloads)) bareSamples.push(yield* post(bareUrl, body))

    return {
      payloads,
      updatesPerPayload: updates,
      bytesPerPayload: bodies[0]!.raw.byteLength,
      parley: summary(parleySamples),
      bare: summary(bareSamples),
      messagesPerSecond: (expected - warm) / processingSeconds
    } satisfies IngestionBenchResult
  }).pipe(Effect.scoped)

export const formatIngestionBench = (r: IngestionBenchResult): string => {
  const row = (name: string, s: IngestionBenchResult["parley"]) =>
    `  ${name.padEnd(34)} p50 ${s.p50Ms.toFixed(2)} ms   p99 ${s.p99Ms.toFixed(2)} ms   max ${s.maxMs.toFixed(2)} ms`
  return [
    `Upstream webhook acknowledgement, ${r.payloads} signed POSTs of ${r.updatesPerPayload} updates (${(r.bytesPerPayload / 1024).toFixed(1)} KB each)`,
    row("Parley (verify, store, queue)", r.parley),
    row("bare node:http, same bytes", r.bare),
    `  target: Parley p99 < 250 ms; processing stored ${Math.round(r.messagesPerSecond)} messages/s`,
    ""
  ].join("\n")
}

if (process.argv[1] !== undefined && Path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  Effect.runPromise(benchIngestion().pipe(
    Effect.map((result) => console.log(formatIngestionBench(result))),
    Effect.provideService(References.MinimumLogLevel, "Warn")
  )).catch((error) => {
    console.error(error)
    process.exitCode = 1
  })
}
