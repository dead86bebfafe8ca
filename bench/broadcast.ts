/**
 * A 100,000-recipient broadcast (issue 19 §4): a bench host on PostgreSQL,
 * the simulated number upgraded to 1,000 messages/s (and an unlimited
 * messaging limit). Measures the recipient insertion (100 calls of 1,000),
 * the send from `started_at` to `completed_at` against the ideal (recipients
 * ÷ the number's ceiling), the achieved rate as a share of that ceiling, and
 * the host's RSS from start to end (sampled every 2 s). Targets are printed,
 * never asserted.
 *
 * The network runs either in the host's process (`in-process`, as `npm start`
 * runs it: the host's RSS then holds the simulator's outboxes too) or in a
 * process of its own (`remote`, `network.ts`, reached through the Cloud API
 * adapter and posting its webhooks to the ingestion endpoint over HTTP, as a
 * host in production meets the network). Both share the machine's cores.
 */
import { UpstreamSettings } from "@parley/core"
import { Simulator } from "@parley/core/simulators"
import { Context, Effect, Option, References } from "effect"
import * as ChildProcess from "node:child_process"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { collect } from "./executions.ts"
import { startBenchHost } from "./host.ts"
import { forkNetwork } from "./networkProcess.ts"

const KEY = "pk_bench_broadcast_0123456789abcdef"
const SIM_NUMBER = { phoneNumberId: "100000000000001", businessAccountId: "200000000000001", token: "parley-simulator-token" }
const CEILING = 1000
const APP_SECRET = "bench-broadcast-app-secret"

export type BroadcastNetwork = "in-process" | "remote"

export interface BroadcastBenchResult {
  readonly network: BroadcastNetwork
  readonly recipients: number
  readonly insertSeconds: number
  readonly sendSeconds: number
  readonly idealSeconds: number
  readonly achievedRate: number
  readonly rssStartMb: number
  readonly rssPeakMb: number
  readonly rssEndMb: number
  /** The heap still reachable after a full collection, before the send and once it completed. */
  readonly liveStartMb: number
  readonly liveEndMb: number
  readonly completed: boolean
}

const mb = (bytes: number) => Math.round(bytes / 1024 / 1024)

/** What the heap holds after a full collection: what the host retains, apart from garbage V8 has not returned. */
const liveHeapMb = () => {
  collect()
  return mb(process.memoryUsage().heapUsed)
}

/** The host beside a network of `mode`, with the number upgraded and a way to approve a template there. */
const startNetwork = (mode: BroadcastNetwork) =>
  Effect.gen(function*() {
    const patch = { throughputPerSecond: CEILING, messagingLimitTier: "TIER_UNLIMITED" }
    if (mode === "in-process") {
      const { context, url } = yield* startBenchHost(KEY)
      const simulator = Option.getOrThrow(Context.getOption(context, Simulator.NetworkSimulator)) as Simulator.NetworkSimulator["Service"]
      yield* simulator.updateNumber(SIM_NUMBER.phoneNumberId, patch)
      return { url, approve: (templateId: string) => Effect.orDie(simulator.setTemplateStatus(templateId, "APPROVED")) }
    }
    const { command, port } = yield* forkNetwork(APP_SECRET)
    const { url } = yield* startBenchHost(KEY, {
      env: { PARLEY_UPSTREAM: "cloud", PARLEY_UPSTREAM_URL: `http://127.0.0.1:${port}`, PARLEY_UPSTREAM_APP_SECRET: APP_SECRET }
    })
    yield* command({ sink: `${url}/platform/v1/msg/upstream/webhook` })
    yield* command({ update: { phoneNumberId: SIM_NUMBER.phoneNumberId, patch } })
    return { url, approve: (templateId: string) => command({ approve: templateId }) }
  })

export const benchBroadcast = (options: { readonly recipients: number; readonly network?: BroadcastNetwork | undefined }) =>
  Effect.gen(function*() {
    const network = options.network ?? "in-process"
    const { approve, url } = yield* startNetwork(network)
    const request = (method: string, path: string, body?: unknown) =>
      Effect.promise(async () => {
        const res = await fetch(`${url}${path}`, {
          method,
          headers: { "x-api-key": KEY, ...(body === undefined ? {} : { "content-type": "application/json" }) },
          ...(body === undefined ? {} : { body: JSON.stringify(body) })
        })
        const text = await res.text()
        if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text}`)
        return JSON.parse(text)
      })
    yield* request("POST", "/platform/v1/msg/phone_numbers", {
      msg_config: { phone_number_id: SIM_NUMBER.phoneNumberId, business_account_id: SIM_NUMBER.businessAccountId, access_token: SIM_NUMBER.token }
    })
    const created = yield* request("POST", `/proxy/${SIM_NUMBER.businessAccountId}/message_templates`, {
      name: "bench_sale",
      category: "MARKETING",
      language: "en_US",
      components: [{ type: "BODY", text: "Hi {{1}}, the sale is on!", example: { body_text: [["Ada"]] } }]
    })
    yield* approve(created.id)
    const templates = yield* request("GET", "/platform/v1/msg/templates?name=bench_sale&status=approved")
    const broadcast = yield* request("POST", "/platform/v1/msg/broadcasts", {
      msg_broadcast: { name: "Bench", phone_number_id: SIM_NUMBER.phoneNumberId, msg_template_id: templates.data[0].id }
    })
    const id = broadcast.data.id as string

    const insertStart = performance.now()
    for (let call = 0; call < options.recipients / 1000; call++) {
      const recipients = Array.from({ length: 1000 }, (_, i) => ({
        phone_number: `1${String(5_550_000_000 + call * 1000 + i)}`,
        template_parameters: [`r${i}`]
      }))
      yield* request("POST", `/platform/v1/msg/broadcasts/${id}/recipients`, { recipients })
    }
    const insertSeconds = (performance.now() - insertStart) / 1000
    console.log(`  (inserted ${options.recipients} recipients in ${insertSeconds.toFixed(1)} s; sending)`)

    const liveStartMb = liveHeapMb()
    const rss: Array<number> = [process.memoryUsage().rss]
    const sendStart = performance.now()
    yield* request("POST", `/platform/v1/msg/broadcasts/${id}/send`)
    const ideal = options.recipients / CEILING
    let final: any
    let sendEnd = sendStart
    for (let poll = 1;; poll++) {
      // Reading a broadcast counts its recipients: every 2 s, so the bench does not load the host it measures.
      yield* Effect.sleep("2 seconds")
      rss.push(process.memoryUsage().rss)
      final = (yield* request("GET", `/platform/v1/msg/broadcasts/${id}`)).data
      sendEnd = performance.now()
      if (poll % 5 === 0) console.log(`  (${((sendEnd - sendStart) / 1000).toFixed(0)} s: ${final.sent_count} sent, RSS ${mb(rss[rss.length - 1]!)} MB)`)
      if (final.status !== "sending" || sendEnd - sendStart > ideal * 10_000) break
    }
    const completed = final.status === "completed"
    const liveEndMb = liveHeapMb()
    // The record's own times: from the send to the last recipient's outcome.
    const sendSeconds = completed ? (Date.parse(final.completed_at) - Date.parse(final.started_at)) / 1000 : Number.NaN
    return {
      network,
      recipients: options.recipients,
      insertSeconds,
      sendSeconds,
      idealSeconds: ideal,
      achievedRate: completed ? final.sent_count / sendSeconds : Number.NaN,
      rssStartMb: mb(rss[0]!),
      rssPeakMb: mb(Math.max(...rss)),
      rssEndMb: mb(rss[rss.length - 1]!),
      liveStartMb,
      liveEndMb,
      completed
    } satisfies BroadcastBenchResult
  }).pipe(Effect.scoped)

export const formatBroadcastBench = (r: BroadcastBenchResult): string =>
  [
    `Broadcast of ${r.recipients.toLocaleString("en-US")} recipients on a simulated number at ${CEILING} msg/s (Postgres storage; network ${
      r.network === "remote" ? "in a process of its own, over HTTP" : "in the host's process"
    })`,
    `  recipient insertion, ${r.recipients / 1000} calls of 1,000: ${r.insertSeconds.toFixed(1)} s (target < 10 s)`,
    r.completed
      ? `  send: ${r.sendSeconds.toFixed(1)} s, ideal ${r.idealSeconds.toFixed(0)} s: ratio ${(r.sendSeconds / r.idealSeconds).toFixed(3)} (target <= 1.05)`
      : "  send: did not complete within 10x the ideal time",
    `  achieved rate ${r.achievedRate.toFixed(0)} msg/s against the number's ceiling ${CEILING}: ratio ${(r.achievedRate / CEILING).toFixed(3)}`,
    `  host RSS: start ${r.rssStartMb} MB, peak ${r.rssPeakMb} MB, end ${r.rssEndMb} MB (target < 250 MB, flat)`,
    `  live heap after a full collection: start ${r.liveStartMb} MB, end ${r.liveEndMb} MB`,
    ""
  ].join("\n")

type BenchOptions = Parameters<typeof benchBroadcast>[0]

/**
 * `benchBroadcast` in a process of its own (this module, forked with the same flags): each run's host starts from a
 * fresh process, so its RSS is its own and not what an earlier run left.
 */
export const benchBroadcastApart = (options: BenchOptions) =>
  Effect.promise(() =>
    new Promise<BroadcastBenchResult>((resolve, reject) => {
      const child = ChildProcess.fork(fileURLToPath(import.meta.url))
      child.once("message", (result: BroadcastBenchResult) => resolve(result))
      child.once("error", reject)
      child.once("exit", (code) => {
        if (code !== 0) reject(new Error(`the broadcast bench process exited with ${code}`))
      })
      child.send(options)
    })
  )

if (process.argv[1] !== undefined && Path.resolve(process.argv[1]) === fileURLToPath(import.meta.url) && process.send !== undefined) {
  process.once("message", (options: BenchOptions) => {
    Effect.runPromise(benchBroadcast(options).pipe(Effect.provideService(References.MinimumLogLevel, "Warn"))).then(
      (result) => process.send!(result, () => process.exit(0)),
      (error) => {
        console.error(error)
        process.exit(1)
      }
    )
  })
}
