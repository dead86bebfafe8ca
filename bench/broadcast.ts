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
import { Context, Effect, Fiber, Option, References, type Tracer } from "effect"
import { SqlClient } from "effect/sql"
import * as ChildProcess from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { monitorEventLoopDelay } from "node:perf_hooks"
import { fileURLToPath } from "node:url"
import * as V8 from "node:v8"
import { allocationCounter, profileCpu, sampleAllocations } from "./allocation.ts"
import { processTreeCpuMicros } from "./cpu.ts"
import { collect, countDatabaseWrites, greeterDefinition } from "./executions.ts"
import { startBenchHost } from "./host.ts"
import { forkNetwork } from "./networkProcess.ts"
import { replyTracer, spanBreakdown } from "./replyTrace.ts"

const KEY = "pk_bench_broadcast_0123456789abcdef"
const SIM_NUMBER = { phoneNumberId: "100000000000001", businessAccountId: "200000000000001", token: "parley-simulator-token" }
const CEILING = 1000
const APP_SECRET = "bench-broadcast-app-secret"

/** What a broadcast's `GET` ran before migration 0030 kept its counters: every recipient joined to its message. */
const LEGACY_COUNT = `
  SELECT count(*)::int AS total,
    count(*) FILTER (WHERE (r.status = 'sent' OR m.id IS NOT NULL) AND m.status IS DISTINCT FROM 'failed')::int AS sent,
    count(*) FILTER (WHERE r.status IN ('failed', 'suppressed') OR m.status = 'failed')::int AS failed,
    count(*) FILTER (WHERE m.status IN ('delivered', 'read'))::int AS delivered,
    count(*) FILTER (WHERE m.status = 'read')::int AS read,
    count(*) FILTER (WHERE m.id IS NOT NULL AND r.sent_at IS NOT NULL AND EXISTS (
      SELECT 1 FROM msg_messages i
      WHERE i.conversation_id = m.conversation_id AND i.direction = 'inbound'
        AND i.created_at > r.sent_at AND i.created_at <= r.sent_at + interval '24 hours'
    ))::int AS responded,
    count(*) FILTER (WHERE r.status = 'pending' AND m.id IS NULL)::int AS pending
  FROM msg_broadcast_recipients r
  LEFT JOIN msg_messages m ON m.id = r.message_id
    AND (r.status = 'sent' OR (r.status = 'pending' AND m.network_id IS NOT NULL AND m.status <> 'failed'))
  WHERE r.broadcast_id = $1`

export type BroadcastNetwork = "in-process" | "remote"

export interface BroadcastBenchResult {
  readonly network: BroadcastNetwork
  readonly recipients: number
  readonly insertSeconds: number
  readonly sendSeconds: number
  readonly idealSeconds: number
  readonly achievedRate: number
  /** Host RSS before the recipients went in, and its peak while they did. */
  /** Bytes the host allocated per recipient inserted (the bench's own requests included: they share the process). */
  readonly insertKbPerRecipient: number
  readonly rssInsertStartMb: number
  readonly rssInsertPeakMb: number
  /** The heap and the memory outside it when each phase's RSS peaked. */
  readonly rssInsertPeakParts: string
  readonly rssPeakParts: string
  readonly rssStartMb: number
  readonly rssPeakMb: number
  readonly rssEndMb: number
  /** The heap still reachable after a full collection, before the send and once it completed. */
  readonly liveStartMb: number
  readonly liveEndMb: number
  readonly completed: boolean
  /** Recipients sent when the counts stopped, and the seconds from the send's POST to then. */
  readonly sent: number
  readonly sentSeconds: number
  /**
   * What a send costs, over the send (from the POST to completion or the cut-off, the reports processed meanwhile
   * included: `reports` per send), and what a status report costs, over the reports processed after it (a send cut
   * off is stopped first). CPU in ms (the host's process, PostgreSQL's server processes, a network of its own); the
   * rest counted, not timed, so a loaded machine moves them little: bytes the host allocated (freed by its
   * collections plus what the heap grew by, `v8.GCProfiler`), its writes to PostgreSQL (round trips or pipelined
   * batches), statements PostgreSQL ran (`pg_stat_statements`, top level, pg-boss's included).
   */
  readonly perSend: {
    readonly sending: PhaseCost
    readonly perReport: PhaseCost
    readonly reportsDrained: number
    /** The statements that ran most often, per send made, over both phases. */
    readonly top: ReadonlyArray<Statement>
    /** The statements PostgreSQL spent the most time in (execution, triggers included), per send made. */
    readonly slowest: ReadonlyArray<Statement>
  }
  /** A `GET` of the completed broadcast (median ms), and the aggregate it ran before its counters were kept. */
  readonly getMs: number
  readonly recountMs: number
  /**
   * Per table the send and its reports wrote, how many row updates were heap-only (HOT: no index entry written) and
   * the mean stored row size of the broadcast's messages: what an update costs PostgreSQL.
   */
  readonly tables: ReadonlyArray<{ readonly table: string; readonly updates: number; readonly hot: number }>
  readonly messageBytes: number
  /** A send inside a conversation on the same number (a proxied template, answered once the network took it), ms. */
  readonly replyQuiet: Latency
  readonly replyDuringBroadcast: Latency
  /** A workflow's answer to a contact who wrote on the same number (ms from the write), and its stages' p50s. */
  readonly conversationQuiet: ConversationLatency
  readonly conversationDuringBroadcast: ConversationLatency
  /** The host's event loop delay (p50, p99 ms) while the quiet replies and the broadcast ran. */
  readonly loopDelayQuiet: Latency
  readonly loopDelayDuringBroadcast: Latency
  /** With `BENCH_BROADCAST_REPLY_TRACE`: where a reply's time went, per span name (mean ms and count per reply). */
  readonly replySpans?: {
    readonly quiet: ReadonlyArray<{ readonly name: string; readonly ms: number; readonly count: number }>
    readonly during: ReadonlyArray<{ readonly name: string; readonly ms: number; readonly count: number }>
  } | undefined
}

/** A statement's calls, execution ms, WAL records and buffer pages per send (triggers included). */
export interface Statement {
  readonly calls: number
  readonly ms: number
  readonly wal: number
  readonly pages: number
  readonly query: string
}

export interface PhaseCost {
  readonly host: number
  readonly postgres: number | undefined
  readonly network: number | undefined
  readonly allocatedKb: number
  readonly roundTrips: number
  readonly statements: number
  /** Inside PostgreSQL, over those statements and their triggers: WAL records and buffer pages touched. */
  readonly walRecords: number
  readonly pages: number
  readonly reports: number
  readonly sent: number
}

export interface Latency {
  readonly count: number
  readonly p50: number
  readonly p99: number
}

/** A workflow's answer to a contact's message, ms: in all, and each stage's share (see `conversationReply`). */
interface ConversationReply {
  readonly total: number
  readonly acknowledged: number
  readonly routed: number
  readonly stepped: number
  readonly sent: number
  readonly seen: number
}

export interface ConversationLatency extends Latency {
  /** Each stage's p50. */
  readonly stages: Omit<ConversationReply, "total">
}

const conversationLatency = (samples: ReadonlyArray<ConversationReply>): ConversationLatency => {
  const p50 = (of: (r: ConversationReply) => number) => latency(samples.map(of)).p50
  return {
    ...latency(samples.map((r) => r.total)),
    stages: {
      acknowledged: p50((r) => r.acknowledged),
      routed: p50((r) => r.routed),
      stepped: p50((r) => r.stepped),
      sent: p50((r) => r.sent),
      seen: p50((r) => r.seen)
    }
  }
}

const latency = (samples: ReadonlyArray<number>): Latency => {
  const sorted = [...samples].sort((a, b) => a - b)
  const at = (q: number) => sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!
  return { count: sorted.length, p50: at(0.5), p99: at(0.99) }
}

const mb = (bytes: number) => Math.round(bytes / 1024 / 1024)

/** PostgreSQL counts the statements it runs (`bench/statements.ts` does the same). */
const STATEMENTS = { shared_preload_libraries: "pg_stat_statements", "pg_stat_statements.track": "top", "pg_stat_statements.max": "5000" }

/** What the RSS holds besides V8's heap: the node binary and libraries mapped from files, and anonymous memory. */
const rssParts = () => {
  try {
    const status = Fs.readFileSync("/proc/self/status", "utf8")
    const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+)`, "m").exec(status)?.[1] ?? Number.NaN) * 1024
    return { file: kb("RssFile"), anon: kb("RssAnon") }
  } catch {
    return { file: Number.NaN, anon: Number.NaN }
  }
}

/** The old generation's committed and used bytes (where promoted garbage waits for a full collection). */
const oldSpace = () => V8.getHeapSpaceStatistics().find((s) => s.space_name === "old_space")

/** The heap's other spaces' committed MB at a peak: the young generation, large objects, code. */
const otherSpaces = () =>
  V8.getHeapSpaceStatistics().filter((s) => s.space_name !== "old_space" && s.space_size >= 1024 * 1024)
    .map((s) => `${s.space_name.replace(/_space$/, "")} ${mb(s.space_size)}`).join(", ")

/** RSS every 250 ms until stopped, with its peak and when it came (seconds from the start). */
const rssSampler = () => {
  const start = process.memoryUsage().rss
  const startedAt = performance.now()
  let peak = start
  let atPeak = { ...process.memoryUsage(), ...rssParts(), old: oldSpace(), others: otherSpaces(), at: 0 }
  const sample = () => {
    const now = process.memoryUsage()
    if (now.rss > peak) {
      peak = now.rss
      atPeak = { ...now, ...rssParts(), old: oldSpace(), others: otherSpaces(), at: (performance.now() - startedAt) / 1000 }
    }
  }
  const timer = setInterval(sample, 250)
  return {
    start,
    peak: () => peak,
    /** What the RSS held at its peak: V8's heap (committed and used) and memory outside it. */
    atPeak: () =>
      `at ${atPeak.at.toFixed(0)} s: heap ${mb(atPeak.heapTotal)} MB committed, ${mb(atPeak.heapUsed)} MB used (old generation ${mb(atPeak.old?.space_size ?? Number.NaN)} / ${
        mb(atPeak.old?.space_used_size ?? Number.NaN)
      } MB; ${atPeak.others}); external ${mb(atPeak.external)} MB; mapped from files ${mb(atPeak.file)} MB, anonymous ${mb(atPeak.anon)} MB`,
    stop: () => {
      sample()
      clearInterval(timer)
    }
  }
}

/** What the heap holds after a full collection: what the host retains, apart from garbage V8 has not returned. */
const liveHeapMb = () => {
  collect()
  return mb(process.memoryUsage().heapUsed)
}

/** The host beside a network of `mode`, with the number upgraded and a way to approve a template there. */
const startNetwork = (mode: BroadcastNetwork, tracer: Tracer.Tracer | undefined) =>
  Effect.gen(function*() {
    const patch = { throughputPerSecond: CEILING, messagingLimitTier: "TIER_UNLIMITED" }
    if (mode === "in-process") {
      const { context, postgresPid, url } = yield* startBenchHost(KEY, { postgres: STATEMENTS, tracer })
      const simulator = Option.getOrThrow(Context.getOption(context, Simulator.NetworkSimulator)) as Simulator.NetworkSimulator["Service"]
      yield* simulator.updateNumber(SIM_NUMBER.phoneNumberId, patch)
      return {
        url,
        context,
        postgresPid,
        networkPid: undefined,
        approve: (templateId: string) => Effect.orDie(simulator.setTemplateStatus(templateId, "APPROVED")),
        write: (waId: string) =>
          Effect.asVoid(Effect.orDie(simulator.inbound(SIM_NUMBER.phoneNumberId, { from: waId, message: { type: "text", text: { body: "hi" } } }))),
        profileNetwork: (_path: string | null) => Effect.void
      }
    }
    const { command, pid: networkPid, port } = yield* forkNetwork(APP_SECRET)
    const { context, postgresPid, url } = yield* startBenchHost(KEY, {
      env: { PARLEY_UPSTREAM: "cloud", PARLEY_UPSTREAM_URL: `http://127.0.0.1:${port}`, PARLEY_UPSTREAM_APP_SECRET: APP_SECRET },
      postgres: STATEMENTS,
      tracer
    })
    yield* command({ sink: `${url}/platform/v1/msg/upstream/webhook` })
    yield* command({ update: { phoneNumberId: SIM_NUMBER.phoneNumberId, patch } })
    return {
      url,
      context,
      postgresPid,
      networkPid,
      approve: (templateId: string) => command({ approve: templateId }),
      write: (waId: string) => command({ inbound: { phoneNumberId: SIM_NUMBER.phoneNumberId, contacts: [waId] } }),
      profileNetwork: (path: string | null) => command({ profile: path })
    }
  })

export const benchBroadcast = (options: {
  readonly recipients: number
  readonly network?: BroadcastNetwork | undefined
  /** When the send is cut off, in seconds; by default 10x the ideal. */
  readonly maxSeconds?: number | undefined
  /** Keeps the spans of the timed replies (a tracer is installed: it costs every span of the host). */
  readonly traceReplies?: boolean | undefined
}) =>
  Effect.gen(function*() {
    const network = options.network ?? "in-process"
    const tracing = options.traceReplies === true ? replyTracer() : undefined
    const { approve, context, networkPid, postgresPid, profileNetwork, url, write } = yield* startNetwork(network, tracing?.tracer)
    const timed = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
      Effect.gen(function*() {
        const start = performance.now()
        yield* effect
        return performance.now() - start
      })
    const request = (method: string, path: string, body?: unknown, headers?: Record<string, string>) =>
      Effect.promise(async () => {
        const res = await fetch(`${url}${path}`, {
          method,
          headers: { "x-api-key": KEY, ...(body === undefined ? {} : { "content-type": "application/json" }), ...headers },
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
    // A workflow that answers every contact who writes to the broadcast's number: a reply inside a conversation as a
    // contact meets it (their message through the network, its routing, the run's step, the send).
    const replier = yield* request("POST", "/platform/v1/workflows", {
      workflow: { name: "Replier", status: "active", definition: greeterDefinition, message_debounce_seconds: 0 }
    })
    yield* request("POST", `/platform/v1/workflows/${replier.data.id}/triggers`, {
      trigger: { trigger_type: "inbound_message", phone_number_id: SIM_NUMBER.phoneNumberId }
    })

    const sql = Context.get(context, SqlClient.SqlClient)
    yield* Effect.orDie(sql`CREATE EXTENSION IF NOT EXISTS pg_stat_statements`)
    const insertRss = rssSampler()
    const insertAllocated = allocationCounter()
    const insertStart = performance.now()
    for (let call = 0; call < options.recipients / 1000; call++) {
      const recipients = Array.from({ length: 1000 }, (_, i) => ({
        phone_number: `1${String(5_550_000_000 + call * 1000 + i)}`,
        template_parameters: [`r${i}`]
      }))
      yield* request("POST", `/platform/v1/msg/broadcasts/${id}/recipients`, { recipients })
    }
    const insertSeconds = (performance.now() - insertStart) / 1000
    insertRss.stop()
    const insertKbPerRecipient = insertAllocated() / 1024 / options.recipients
    console.log(`  (inserted ${options.recipients} recipients in ${insertSeconds.toFixed(1)} s; sending)`)

    // A send inside a conversation on the broadcast's number: a template, so no window is needed.
    // Traced, its spans go to `spans`.
    const reply = (i: number, spans: Array<ReadonlyArray<{ name: string; ms: number }>>) =>
      Effect.suspend(() => {
        const trace = tracing?.start()
        return timed(request("POST", `/proxy/v24.0/${SIM_NUMBER.phoneNumberId}/messages`, {
          messaging_product: "whatsapp",
          to: `1${String(5_559_000_000 + i)}`,
          type: "template",
          template: { name: "bench_sale", language: { code: "en_US" }, components: [{ type: "body", parameters: [{ type: "text", text: "Ada" }] }] }
        }, trace === undefined ? undefined : { traceparent: trace.header })).pipe(
          Effect.tap((ms) => Effect.sync(() => trace !== undefined && spans.push([{ name: "(client: the whole request)", ms }, ...trace.take()])))
        )
      })
    // A contact of its own writes through the network and the workflow answers: ms from the write until the answer
    // is stored with the network's id, and the stages from the records' own times (the host's clock, the bench's):
    // to the inbound message recorded (the network's POST acknowledged), to its run started (routing), to the answer
    // recorded (the run's step), to its network id (the send), to the bench's poll seeing it.
    const projectId = (yield* Effect.orDie(sql<{ project_id: string }>`SELECT project_id FROM msg_broadcasts WHERE id = ${id}`))[0]!.project_id
    const conversationReply = (i: number) =>
      Effect.gen(function*() {
        const waId = `1${String(5_558_000_000 + i)}`
        const start = Date.now()
        yield* write(waId)
        for (;;) {
          const rows = yield* Effect.orDie(sql<{ inbound: number; run: number | null; recorded: number; sent: number }>`
            SELECT extract(epoch FROM i.created_at)::float8 * 1000 AS inbound,
              (SELECT extract(epoch FROM min(e.started_at))::float8 * 1000 FROM workflow_executions e WHERE e.contact_id = c.id) AS run,
              extract(epoch FROM o.created_at)::float8 * 1000 AS recorded, extract(epoch FROM o.updated_at)::float8 * 1000 AS sent
            FROM msg_contacts c
            JOIN msg_messages o ON o.contact_id = c.id AND o.direction = 'outbound' AND o.network_id IS NOT NULL
            JOIN msg_messages i ON i.contact_id = c.id AND i.direction = 'inbound'
            WHERE c.project_id = ${projectId} AND c.wa_id = ${waId}`)
          const end = Date.now()
          const row = rows[0]
          if (row !== undefined) {
            const run = row.run ?? row.inbound
            return {
              total: end - start,
              acknowledged: row.inbound - start,
              routed: run - row.inbound,
              stepped: row.recorded - run,
              sent: row.sent - row.recorded,
              seen: end - row.sent
            } satisfies ConversationReply
          }
          if (end - start > 30_000) return yield* Effect.die(new Error(`no answer to ${waId} in 30 s`))
          yield* Effect.sleep("5 millis")
        }
      })
    const loopDelay = () => {
      const histogram = monitorEventLoopDelay({ resolution: 1 })
      histogram.enable()
      return (): Latency => {
        histogram.disable()
        return { count: histogram.count, p50: histogram.percentile(50) / 1e6, p99: histogram.percentile(99) / 1e6 }
      }
    }
    const replyQuiet: Array<number> = []
    const spansQuiet: Array<ReadonlyArray<{ name: string; ms: number }>> = []
    const quietLoop = loopDelay()
    for (let i = 0; i < 20; i++) {
      replyQuiet.push(yield* reply(i, spansQuiet))
      yield* Effect.sleep("50 millis")
    }
    const conversationQuiet: Array<ConversationReply> = []
    for (let i = 0; i < 10; i++) {
      conversationQuiet.push(yield* conversationReply(i))
      yield* Effect.sleep("50 millis")
    }
    const loopDelayQuiet = quietLoop()

    const liveStartMb = liveHeapMb()
    // `BENCH_BROADCAST_HEAP_SNAPSHOTS=<dir>`: the live heap before the send and after it (`start.heapsnapshot`,
    // `end.heapsnapshot`), to tell what the host keeps from a broadcast.
    const snapshots = process.env.BENCH_BROADCAST_HEAP_SNAPSHOTS
    if (snapshots !== undefined && snapshots !== "") V8.writeHeapSnapshot(Path.join(snapshots, "start.heapsnapshot"))
    const rss: Array<number> = [process.memoryUsage().rss]
    const sendRss = rssSampler()
    const cpuAt = (pid: number | undefined) => pid === undefined ? undefined : processTreeCpuMicros(pid)
    const reportsStored = Effect.map(Effect.orDie(sql<{ n: number }>`SELECT count(*)::int AS n FROM msg_status_events`), (r) => r[0]!.n)
    // The bench's own reads (polls of the broadcast, counts) are left out of the statements.
    const benchOwn = sql`query NOT LIKE '%pg_stat_%' AND query NOT LIKE '%AS n FROM msg_status_events' AND query NOT LIKE '%AS n FROM msg_upstream_inbox%'`
    // Statements, and what they did inside PostgreSQL (triggers included): WAL records written and buffer pages
    // touched, counts a loaded machine does not move.
    const statementsRun = Effect.map(
      Effect.orDie(sql<{ n: number; wal: number; pages: number }>`
        SELECT coalesce(sum(calls), 0)::float8 AS n, coalesce(sum(wal_records), 0)::float8 AS wal,
          coalesce(sum(shared_blks_hit + shared_blks_read), 0)::float8 AS pages
        FROM pg_stat_statements WHERE ${benchOwn}`),
      (r) => r[0]!
    )
    yield* Effect.orDie(sql`SELECT pg_stat_statements_reset()`)
    const tableUpdates = Effect.orDie(sql<{ table: string; updates: number; hot: number }>`
      SELECT relname AS table, n_tup_upd::float8 AS updates, n_tup_hot_upd::float8 AS hot FROM pg_stat_user_tables
      WHERE relname IN ('msg_messages', 'msg_broadcast_recipients', 'msg_conversations') ORDER BY relname`)
    const updatesAtStart = yield* tableUpdates
    const writes = countDatabaseWrites()
    yield* Effect.addFinalizer(() => Effect.sync(writes.restore))
    /** Where every counter stands, for the difference over a phase. */
    const mark = (allocatedBytes: number) =>
      Effect.gen(function*() {
        const cpu = process.cpuUsage()
        return {
          host: (cpu.user + cpu.system) / 1000,
          postgres: Option.getOrUndefined(Option.map(Option.fromNullishOr(cpuAt(postgresPid)), (us) => us / 1000)),
          network: Option.getOrUndefined(Option.map(Option.fromNullishOr(cpuAt(networkPid)), (us) => us / 1000)),
          allocatedKb: allocatedBytes / 1024,
          roundTrips: writes.count(),
          ...yield* Effect.map(statementsRun, ({ n, pages, wal }) => ({ statements: n, walRecords: wal, pages })),
          reports: yield* reportsStored,
          sent: (yield* request("GET", `/platform/v1/msg/broadcasts/${id}`)).data.sent_count as number
        }
      })
    const atStart = yield* mark(0)
    let allocated = allocationCounter()
    // `BENCH_BROADCAST_HEAP_SURVIVORS=1`: only what outlived the young generation (what grows the old one).
    const profile = yield* sampleAllocations(process.env.BENCH_BROADCAST_HEAP_PROFILE, { survivors: process.env.BENCH_BROADCAST_HEAP_SURVIVORS === "1" })
    // `BENCH_BROADCAST_PROFILE=<dir>`: CPU profiles over the send and its reports, the host's (`host.cpuprofile`) and
    // a remote network's (`network.cpuprofile`), for `bench/profileByFile.ts`.
    const cpuProfiles = process.env.BENCH_BROADCAST_PROFILE
    const hostProfile = yield* profileCpu(cpuProfiles === undefined || cpuProfiles === "" ? undefined : Path.join(cpuProfiles, "host.cpuprofile"))
    if (cpuProfiles !== undefined && cpuProfiles !== "") yield* profileNetwork(Path.resolve(cpuProfiles, "network.cpuprofile"))
    const sendStart = performance.now()
    yield* request("POST", `/platform/v1/msg/broadcasts/${id}/send`)
    // Replies on the same number while the broadcast sends: up to five a second, each timed until the network took it.
    // `BENCH_BROADCAST_REPLIES=0`: none, for the broadcast's rate alone (broadcasts yield to replies under way).
    const replyDuring: Array<number> = []
    const spansDuring: Array<ReadonlyArray<{ name: string; ms: number }>> = []
    const duringLoop = loopDelay()
    let sending = process.env.BENCH_BROADCAST_REPLIES !== "0"
    // And after every third, a contact writing and the workflow answering: one reply at a time, as when quiet.
    const conversationDuring: Array<ConversationReply> = []
    const replies = yield* Effect.forkChild(Effect.gen(function*() {
      for (let i = 100; sending; i++) {
        replyDuring.push(yield* reply(i, spansDuring))
        yield* Effect.sleep("200 millis")
        if (i % 3 === 0 && sending) {
          conversationDuring.push(yield* conversationReply(i))
          yield* Effect.sleep("200 millis")
        }
      }
    }))
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
      if (final.status !== "sending" || sendEnd - sendStart > (options.maxSeconds ?? ideal * 10) * 1000) break
    }
    sending = false
    yield* Fiber.join(replies)
    const loopDelayDuringBroadcast = duringLoop()
    const atEnd = yield* mark(allocated())
    allocated = allocationCounter()
    // A send cut off is stopped: what comes after is the network's reports of the sends made (sent, delivered, read),
    // processed until every webhook it posted is and no report came for 4 s (at most a minute): the cost of a report.
    if (final.status === "sending") yield* request("PATCH", `/platform/v1/msg/broadcasts/${id}`, { status: "stopped" })
    const unprocessed = Effect.map(
      Effect.orDie(sql<{ n: number }>`SELECT count(*)::int AS n FROM msg_upstream_inbox WHERE processed_at IS NULL`),
      (r) => r[0]!.n
    )
    for (let last = -1, quiet = 0, i = 0; i < 30 && quiet < 2; i++) {
      yield* Effect.sleep("2 seconds")
      const now = yield* reportsStored
      quiet = now === last && (yield* unprocessed) === 0 ? quiet + 1 : 0
      last = now
    }
    const atDrained = yield* mark(allocated())
    yield* profile
    yield* hostProfile
    if (cpuProfiles !== undefined && cpuProfiles !== "") yield* profileNetwork(null)
    writes.restore()
    sendRss.stop()
    const completed = final.status === "completed" && final.completed_at !== null
    type Mark = typeof atStart
    const over = (from: Mark, to: Mark, per: number) => {
      const of = (f: (m: Mark) => number | undefined) => {
        const a = f(from)
        const b = f(to)
        return a === undefined || b === undefined ? undefined : (b - a) / Math.max(1, per)
      }
      return {
        host: of((m) => m.host)!,
        postgres: of((m) => m.postgres),
        network: of((m) => m.network),
        allocatedKb: to.allocatedKb / Math.max(1, per),
        roundTrips: of((m) => m.roundTrips)!,
        statements: of((m) => m.statements)!,
        walRecords: of((m) => m.walRecords)!,
        pages: of((m) => m.pages)!,
        reports: of((m) => m.reports)!,
        sent: of((m) => m.sent)!
      } satisfies PhaseCost
    }
    const sentCount = Math.max(1, atEnd.sent - atStart.sent)
    const statementRows = yield* Effect.orDie(sql<{ calls: string; ms: number; wal: number; pages: number; query: string }>`
      SELECT calls::text AS calls, total_exec_time::float8 AS ms, wal_records::float8 AS wal,
        (shared_blks_hit + shared_blks_read)::float8 AS pages, query
      FROM pg_stat_statements WHERE ${benchOwn}
      ORDER BY pg_stat_statements.calls DESC`)
    const perSendMade = (r: Statement): Statement => {
      const per = Math.max(1, atDrained.sent - atStart.sent)
      return { calls: r.calls / per, ms: r.ms / per, wal: r.wal / per, pages: r.pages / per, query: r.query.slice(0, 140) }
    }
    // A statement of keyed VALUES rows has one text per row count: summed as one.
    const shape = (query: string) =>
      query.replace(/\s+/g, " ").replace(/\(\$\d+[^()]*\)(, ?\(\$\d+[^()]*\))*/g, "(…)").replace(/\$\d+/g, "$")
    const grouped = new Map<string, Statement>()
    for (const r of statementRows) {
      const query = shape(r.query)
      const sum = grouped.get(query) ?? { query, calls: 0, ms: 0, wal: 0, pages: 0 }
      grouped.set(query, { query, calls: sum.calls + Number(r.calls), ms: sum.ms + r.ms, wal: sum.wal + r.wal, pages: sum.pages + r.pages })
    }
    const statementsGrouped = [...grouped.values()]
    const sendPhase = over(atStart, atEnd, sentCount)
    const reportPhase = over(atEnd, atDrained, atDrained.reports - atEnd.reports)
    const perSend = {
      sending: sendPhase,
      perReport: reportPhase,
      reportsDrained: atDrained.reports - atEnd.reports,
      top: [...statementsGrouped].sort((a, b) => b.calls - a.calls).slice(0, 20).map(perSendMade),
      slowest: [...statementsGrouped].sort((a, b) => b.ms - a.ms).slice(0, 20).map(perSendMade)
    }
    // The finished broadcast read: through the API, and the aggregate over its recipients' messages that the read ran
    // before the counters were kept (its SQL as it was), on the same rows.
    const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
    const gets: Array<number> = []
    for (let i = 0; i < 21; i++) gets.push(yield* timed(request("GET", `/platform/v1/msg/broadcasts/${id}`)))
    const recounts: Array<number> = []
    for (let i = 0; i < 3; i++) recounts.push(yield* timed(Effect.orDie(sql.unsafe(LEGACY_COUNT, [id]))))
    // Table statistics reach the view with a delay (a backend reports them at most once a second).
    yield* Effect.sleep("2 seconds")
    const tables = (yield* tableUpdates).map((t) => {
      const before = updatesAtStart.find((b) => b.table === t.table)
      return { table: t.table, updates: t.updates - (before?.updates ?? 0), hot: t.hot - (before?.hot ?? 0) }
    })
    const messageBytes = (yield* Effect.orDie(sql<{ bytes: number }>`
      SELECT coalesce(avg(pg_column_size(m.*)), 0)::float8 AS bytes FROM msg_messages m WHERE origin = 'broadcast'`))[0]!.bytes
    const liveEndMb = liveHeapMb()
    if (snapshots !== undefined && snapshots !== "") V8.writeHeapSnapshot(Path.join(snapshots, "end.heapsnapshot"))
    // The record's own times: from the send to the last recipient's outcome.
    const sendSeconds = completed ? (Date.parse(final.completed_at) - Date.parse(final.started_at)) / 1000 : Number.NaN
    return {
      network,
      recipients: options.recipients,
      insertSeconds,
      sendSeconds,
      idealSeconds: ideal,
      achievedRate: completed ? final.sent_count / sendSeconds : Number.NaN,
      insertKbPerRecipient,
      rssInsertStartMb: mb(insertRss.start),
      rssInsertPeakMb: mb(insertRss.peak()),
      rssInsertPeakParts: insertRss.atPeak(),
      rssPeakParts: sendRss.atPeak(),
      rssStartMb: mb(rss[0]!),
      rssPeakMb: mb(Math.max(sendRss.peak(), ...rss)),
      rssEndMb: mb(rss[rss.length - 1]!),
      liveStartMb,
      liveEndMb,
      completed,
      sent: atEnd.sent,
      sentSeconds: (sendEnd - sendStart) / 1000,
      perSend,
      getMs: median(gets),
      recountMs: median(recounts),
      tables,
      messageBytes,
      replyQuiet: latency(replyQuiet),
      replyDuringBroadcast: latency(replyDuring),
      conversationQuiet: conversationLatency(conversationQuiet),
      conversationDuringBroadcast: conversationLatency(conversationDuring),
      loopDelayQuiet,
      loopDelayDuringBroadcast,
      replySpans: tracing === undefined ? undefined : { quiet: spanBreakdown(spansQuiet), during: spanBreakdown(spansDuring) }
    } satisfies BroadcastBenchResult
  }).pipe(Effect.scoped)

/** NaN crosses the process boundary as null. */
const fixed = (x: number | null | undefined, digits = 1) => (x === undefined || x === null || !Number.isFinite(x) ? "n/a" : x.toFixed(digits))
const ms = (x: number | null | undefined) => `${fixed(x, 2)} ms`

const statementLine = (s: Statement) =>
  `    ${s.calls.toFixed(2).padStart(6)} ${s.ms.toFixed(3).padStart(7)} ms ${s.wal.toFixed(1).padStart(6)} WAL ${s.pages.toFixed(0).padStart(5)} pages  ${s.query}`

/** One phase's costs on a line. */
const phase = (c: PhaseCost) =>
  `CPU host ${ms(c.host)}, PostgreSQL ${ms(c.postgres)}, network ${ms(c.network)}; host allocation ${fixed(c.allocatedKb, 0)} KB, ${
    fixed(c.roundTrips)
  } host writes to PostgreSQL, ${fixed(c.statements)} statements (${fixed(c.walRecords)} WAL records, ${fixed(c.pages, 0)} pages touched)`

/** A send's own cost (the reports processed while sending taken out) with three reports' added. */
const withReports = (sending: PhaseCost, report: PhaseCost): PhaseCost => {
  const add = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined ? undefined : a + (3 - sending.reports) * b)
  return {
    host: add(sending.host, report.host)!,
    postgres: add(sending.postgres, report.postgres),
    network: add(sending.network, report.network),
    allocatedKb: add(sending.allocatedKb, report.allocatedKb)!,
    roundTrips: add(sending.roundTrips, report.roundTrips)!,
    statements: add(sending.statements, report.statements)!,
    walRecords: add(sending.walRecords, report.walRecords)!,
    pages: add(sending.pages, report.pages)!,
    reports: 3,
    sent: 1
  }
}

export const formatBroadcastBench = (r: BroadcastBenchResult): string =>
  [
    `Broadcast of ${r.recipients.toLocaleString("en-US")} recipients on a simulated number at ${CEILING} msg/s (Postgres storage; network ${
      r.network === "remote" ? "in a process of its own, over HTTP" : "in the host's process"
    })`,
    `  recipient insertion, ${r.recipients / 1000} calls of 1,000: ${fixed(r.insertSeconds)} s (target < 10 s), ${fixed(r.insertKbPerRecipient, 1)} KB allocated per recipient`,
    r.completed
      ? `  send: ${fixed(r.sendSeconds)} s, ideal ${fixed(r.idealSeconds, 0)} s: ratio ${fixed(r.sendSeconds / r.idealSeconds, 3)} (target <= 1.15 with the network apart)`
      : `  send: cut off before it completed (${r.sent.toLocaleString("en-US")} sent in ${fixed(r.sentSeconds, 0)} s: ${fixed(r.sent / r.sentSeconds, 1)}/s)`,
    `  achieved rate ${fixed(r.achievedRate, 0)} msg/s against the number's ceiling ${CEILING}: ratio ${fixed(r.achievedRate / CEILING, 3)}`,
    `  host RSS: inserting the recipients ${r.rssInsertStartMb} -> peak ${r.rssInsertPeakMb} MB (${r.rssInsertPeakParts}); sending start ${r.rssStartMb} MB, peak ${r.rssPeakMb} MB (${r.rssPeakParts}), end ${r.rssEndMb} MB (target peak <= 300 MB)`,
    `  live heap after a full collection: start ${r.liveStartMb} MB, end ${r.liveEndMb} MB (target flat)`,
    `  per send, over the send (${fixed(r.perSend.sending.reports, 2)} status reports processed per send meanwhile): ${phase(r.perSend.sending)}`,
    `  per status report, over the ${r.perSend.reportsDrained.toLocaleString("en-US")} processed after it: ${phase(r.perSend.perReport)}`,
    `  a send with its three reports, from the two: ${phase(withReports(r.perSend.sending, r.perSend.perReport))} (issue 30: ~2.4 ms of CPU in all, ~420 KB of garbage)`,
    "  statements run most often (calls, ms executing, WAL records, pages touched per send; triggers included):",
    ...r.perSend.top.map(statementLine),
    "  statements PostgreSQL spent the most time in (ms executing includes waits for locks):",
    ...r.perSend.slowest.map(statementLine),
    `  row updates heap-only (HOT) over the send and its reports: ${
      r.tables.map((t) => `${t.table} ${fixed(t.hot, 0)} of ${fixed(t.updates, 0)}`).join(", ")
    }; a broadcast message's stored row: ${fixed(r.messageBytes, 0)} bytes`,
    `  GET of the broadcast after its send: ${fixed(r.getMs)} ms (target <= 20 ms); the recount it ran before kept counters, in SQL: ${fixed(r.recountMs)} ms`,
    `  a reply on the same number (proxied template until the network took it): quiet p50 ${fixed(r.replyQuiet.p50)} ms p99 ${
      fixed(r.replyQuiet.p99)
    } ms (${r.replyQuiet.count}); during the broadcast p50 ${fixed(r.replyDuringBroadcast.p50)} ms p99 ${
      fixed(r.replyDuringBroadcast.p99)
    } ms (${r.replyDuringBroadcast.count} replies): p50 ${fixed(r.replyDuringBroadcast.p50 / r.replyQuiet.p50, 2)}x the quiet p50 (target: within ~2x, replies never queued behind the broadcast)`,
    `  a workflow's answer to a contact writing on the same number (from the write through the network to the answer stored with its network id): quiet p50 ${
      fixed(r.conversationQuiet.p50)
    } ms p99 ${fixed(r.conversationQuiet.p99)} ms (${r.conversationQuiet.count}); during the broadcast p50 ${fixed(r.conversationDuringBroadcast.p50)} ms p99 ${
      fixed(r.conversationDuringBroadcast.p99)
    } ms (${r.conversationDuringBroadcast.count}): p50 ${fixed(r.conversationDuringBroadcast.p50 / r.conversationQuiet.p50, 2)}x the quiet p50`,
    `    its stages' p50 (ms), quiet | during: ${
      (["acknowledged", "routed", "stepped", "sent", "seen"] as const).map((k) =>
        `${k} ${fixed(r.conversationQuiet.stages[k])} | ${fixed(r.conversationDuringBroadcast.stages[k])}`
      ).join("; ")
    } (the POST recorded, the run started, the answer recorded, its network id, the bench's poll)`,
    `  the host's event loop delay (a 1 ms timer's interval, so ~1 ms idle): quiet p50 ${fixed(r.loopDelayQuiet.p50)} ms p99 ${fixed(r.loopDelayQuiet.p99)} ms; during the broadcast p50 ${
      fixed(r.loopDelayDuringBroadcast.p50)
    } ms p99 ${fixed(r.loopDelayDuringBroadcast.p99)} ms`,
    ...(r.replySpans === undefined ? [] : [
      "  where a reply's time went (mean ms per reply, mean count), quiet | during the broadcast:",
      ...r.replySpans.during.slice(0, 16).map((d) => {
        const q = r.replySpans!.quiet.find((s) => s.name === d.name)
        return `    ${d.name.slice(0, 48).padEnd(48)} ${fixed(q?.ms, 2).padStart(8)} (${fixed(q?.count, 1)}) | ${fixed(d.ms, 2).padStart(8)} (${fixed(d.count, 1)})`
      })
    ]),
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
