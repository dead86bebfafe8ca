/**
 * The scale envelope (docs/scale.md): `hosts` host processes (`main.ts`, as `npm start` runs) on one PostgreSQL,
 * the simulated network in a process of its own behind the Cloud API adapter (`network.ts`; its webhooks go to the
 * hosts in turn, as a load balancer would send them), the load from processes of their own (`loadProcess.ts`),
 * requests spread over the hosts in turn. Everything is measured from outside the hosts, through their HTTP faces
 * and the database, so the same run measures a bigger machine or a remote database:
 *
 * 1. Inbound messages/s: signed webhook POSTs of 10 messages each (each from a contact of its own), until every
 *    message is stored.
 * 2. Sends/s: proxied sends to 200 contacts who wrote first through the network (their windows open), the
 *    network's status reports included.
 * 3. Step transitions/s: runs of start + 50 `set_variable` started over the API, until every one has ended.
 * 4. Inbound -> reply: one message at a time from a new contact, through the network, to a number with an
 *    `inbound_message` trigger whose workflow replies, until the reply is stored with the network's id (polled every
 *    2 ms).
 * 5. Waiting runs per GB: runs parked on `wait_for_response`; the hosts' resident memory and the database's size
 *    they add.
 *
 * Beside each: PostgreSQL's CPU (its processes, when it runs on this machine and its pid is known), the hosts' CPU,
 * WAL bytes and commits per 1,000 of the phase's units (less what the idle hosts spend and write anyway, measured
 * first).
 * Last, what retention's row deletes cost today: the step events and log entries the run wrote,
 * deleted 10,000 a statement as the retention jobs do, timed and their WAL counted.
 *
 *   BENCH_ONLY=envelope npm run bench        (or: npm run bench -- envelope)
 *
 * `ENVELOPE_HOSTS` (default `1,2`: each count on a fresh embedded PostgreSQL), `DATABASE_URL` (a database of the
 * run's own, empty: then one host count, the first), `ENVELOPE_POSTGRES_PID` (that server's postmaster, for its CPU),
 * `BENCH_SECONDS` (5: each timed phase), `ENVELOPE_CONNECTIONS` (16), `ENVELOPE_PAYLOADS` (300 webhooks of 10
 * messages), `ENVELOPE_WAITING` (2,000), `ENVELOPE_SAMPLES` (100).
 */
import { PgClient } from "@effect/sql-pg"
import { UpstreamWebhook } from "@parley/core"
import { EmbeddedPostgres } from "@parley/store-pg"
import { Context, Effect, Layer, Redacted, References } from "effect"
import { SqlClient } from "effect/sql"
import * as ChildProcess from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { processTreeCpuMicros } from "./cpu.ts"
import { chainDefinition, greeterDefinition, type Percentiles, percentiles, waiterDefinition } from "./executions.ts"
import { freePort, payloadOf } from "./ingestion.ts"
import type { LoadResult } from "./load.ts"
import { loadApart } from "./loadProcess.ts"
import { forkNetwork } from "./networkProcess.ts"

const ROOT = Path.resolve(import.meta.dirname, "..")
const MAIN = Path.join(ROOT, "packages/http-node/src/main.ts")
const KEY = "pk_bench_envelope_0123456789abcdef"
const APP_SECRET = "bench-envelope-app-secret"
const SIM_NUMBER = { phoneNumberId: "100000000000001", businessAccountId: "200000000000001", token: "parley-simulator-token" }
const CHAIN = 50
const MESSAGES_PER_PAYLOAD = 10

export interface EnvelopeOptions {
  readonly hosts: number
  readonly databaseUrl?: string | undefined
  readonly postgresPid?: number | undefined
  readonly seconds: number
  readonly connections: number
  readonly payloads: number
  readonly waiting: number
  readonly samples: number
}

/** What a phase cost, per 1,000 of its units. */
export interface PhaseCost {
  readonly postgresCpuMs: number | undefined
  readonly hostsCpuMs: number
  readonly walKb: number
  readonly commits: number
}

export interface RetentionCost {
  readonly table: string
  readonly rows: number
  readonly msPer1000: number
  readonly walKbPer1000: number
  readonly postgresCpuMsPer1000: number | undefined
}

export interface EnvelopeResult {
  readonly options: EnvelopeOptions
  readonly retention: ReadonlyArray<RetentionCost>
  readonly inbound: { readonly messages: number; readonly perSecond: number; readonly cost: PhaseCost }
  readonly sends: { readonly load: LoadResult; readonly cost: PhaseCost }
  readonly steps: { readonly runs: number; readonly transitionsPerSecond: number; readonly cost: PhaseCost }
  readonly reply: { readonly samples: number; readonly endToEnd: Percentiles }
  readonly waiting: {
    readonly runs: number
    readonly rssGrowthMb: number
    readonly runsPerGb: number
    readonly databaseKbPerRun: number
    readonly startsPerSecond: number
  }
}

const sleep = (ms: number) => Effect.promise(() => new Promise((resolve) => setTimeout(resolve, ms)))

const rssMb = (pid: number): number => {
  const status = Fs.readFileSync(`/proc/${pid}/status`, "utf8")
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024
}

/** `hosts` host processes on `databaseUrl`, each ready; stopped with the scope. */
const startHosts = (hosts: number, databaseUrl: string, networkUrl: string) =>
  Effect.gen(function*() {
    const started: Array<{ readonly url: string; readonly pid: number }> = []
    for (let i = 0; i < hosts; i++) {
      const port = yield* freePort
      const child = yield* Effect.acquireRelease(
        Effect.sync(() =>
          ChildProcess.spawn(process.execPath, ["--max-semi-space-size=8", "--conditions=@parley/source", MAIN], {
            cwd: ROOT,
            env: {
              ...process.env,
              DATABASE_URL: databaseUrl,
              HOST: "127.0.0.1",
              PORT: String(port),
              PARLEY_API_KEY: KEY,
              PARLEY_SECRET_KEY: "bench-envelope-secret-key-0123456789",
              PARLEY_UPSTREAM: "cloud",
              PARLEY_UPSTREAM_URL: networkUrl,
              PARLEY_UPSTREAM_APP_SECRET: APP_SECRET,
              PARLEY_RATE_LIMIT_PER_MINUTE: "1000000000",
              PARLEY_START_BURST_PER_SECOND: "1000000000",
              PARLEY_LOG_LEVEL: "Warn"
            },
            stdio: ["ignore", "ignore", "inherit"]
          })
        ),
        (child) =>
          Effect.promise(() =>
            new Promise<void>((resolve) => {
              if (child.exitCode !== null) return resolve()
              const cut = setTimeout(() => child.kill("SIGKILL"), 10_000)
              child.once("exit", () => {
                clearTimeout(cut)
                resolve()
              })
              child.kill("SIGTERM")
            })
          )
      )
      const url = `http://127.0.0.1:${port}`
      // One at a time: the first runs the migrations and the bootstrap.
      yield* Effect.promise(async () => {
        for (let waited = 0; waited < 120_000; waited += 200) {
          if (child.exitCode !== null) throw new Error(`host ${i + 1} exited with ${child.exitCode}`)
          if (await fetch(`${url}/readyz`).then((r) => r.ok, () => false)) return
          await new Promise((resolve) => setTimeout(resolve, 200))
        }
        throw new Error(`host ${i + 1} was not ready in 2 minutes`)
      })
      started.push({ url, pid: child.pid! })
    }
    return started
  })

export const benchEnvelope = (options: EnvelopeOptions) =>
  Effect.gen(function*() {
    let databaseUrl = options.databaseUrl
    let postgresPid = options.postgresPid
    if (databaseUrl === undefined) {
      const dataDir = yield* Effect.acquireRelease(
        Effect.sync(() => Fs.mkdtempSync(Path.join(Os.tmpdir(), "parley-bench-envelope-"))),
        (dir) => Effect.sync(() => Fs.rmSync(dir, { recursive: true, force: true }))
      )
      // Durable, as `npm start` runs it: fsync and synchronous_commit on.
      const pg = yield* EmbeddedPostgres.start({ dataDir, throwaway: false })
      databaseUrl = Redacted.value(pg.url)
      postgresPid = Number(Fs.readFileSync(Path.join(pg.dataDir, "pg", "postmaster.pid"), "utf8").split("\n")[0])
    }
    const network = yield* forkNetwork(APP_SECRET)
    const networkUrl = `http://127.0.0.1:${network.port}`
    const hosts = yield* startHosts(options.hosts, databaseUrl, networkUrl)
    const urls = hosts.map((h) => h.url)
    yield* network.command({ sink: urls.map((url) => `${url}/platform/v1/msg/upstream/webhook`) })
    yield* network.command({ lift: SIM_NUMBER.phoneNumberId })
    // The bench's own reads of the database (counts, sizes, the WAL position): two connections of its own.
    const sql = Context.get(
      yield* Layer.build(PgClient.layer({ url: Redacted.make(databaseUrl), maxConnections: 2 })).pipe(Effect.orDie),
      SqlClient.SqlClient
    )
    const count = (query: Effect.Effect<ReadonlyArray<object>, unknown>): Effect.Effect<number> =>
      Effect.map(Effect.orDie(query), (rows) => Number((rows[0] as { readonly n: string | number }).n))

    const headers = { "x-api-key": KEY, "content-type": "application/json" }
    const call = (method: string, path: string, body?: unknown) =>
      Effect.promise(async () => {
        const res = await fetch(`${urls[0]}${path}`, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) })
        return { status: res.status, body: await res.json().catch(() => undefined) as any }
      })
    const connected = yield* call("POST", "/platform/v1/msg/phone_numbers", {
      msg_config: {
        phone_number_id: SIM_NUMBER.phoneNumberId,
        business_account_id: SIM_NUMBER.businessAccountId,
        access_token: SIM_NUMBER.token
      }
    })
    if (connected.status !== 201) return yield* Effect.die(new Error(`connect: ${connected.status} ${JSON.stringify(connected.body)}`))
    const createWorkflow = (name: string, definition: unknown) =>
      Effect.flatMap(
        call("POST", "/platform/v1/workflows", { workflow: { name, status: "active", definition, message_debounce_seconds: 0 } }),
        (res) => res.status === 201 ? Effect.succeed(res.body.data.id as string) : Effect.die(new Error(`workflow: ${res.status}`))
      )

    /** The counters a phase's cost is the difference of. */
    const snapshot: Effect.Effect<{
      readonly lsn: string
      readonly commits: number
      readonly postgres: number | undefined
      readonly hosts: number
      readonly at: number
    }> = Effect.gen(function*() {
      yield* Effect.orDie(sql`SELECT pg_stat_clear_snapshot()`)
      const [row] = yield* Effect.orDie(sql<{ readonly lsn: string; readonly commits: string }>`
        SELECT pg_current_wal_lsn()::text AS lsn,
          (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database())::text AS commits`)
      return {
        lsn: row!.lsn,
        commits: Number(row!.commits),
        postgres: postgresPid === undefined ? undefined : processTreeCpuMicros(postgresPid),
        hosts: hosts.reduce((sum, h) => sum + (processTreeCpuMicros(h.pid) ?? 0), 0),
        at: performance.now()
      }
    })
    type Snapshot = Effect.Success<typeof snapshot>
    const walBetween = (from: string, to: string) =>
      Effect.map(
        Effect.orDie(sql<{ readonly bytes: string }>`SELECT pg_wal_lsn_diff(${to}::pg_lsn, ${from}::pg_lsn)::text AS bytes`),
        (rows) => Number(rows[0]!.bytes)
      )
    // What the idle hosts write anyway (the job queue's polls and upkeep), per second: left out of each phase's cost.
    const idleFrom = yield* snapshot
    const idleAt = performance.now()
    yield* sleep(11_000)
    const idleTo = yield* snapshot
    const idleSeconds = (performance.now() - idleAt) / 1000
    const idle = {
      walPerSecond: (yield* walBetween(idleFrom.lsn, idleTo.lsn)) / idleSeconds,
      commitsPerSecond: (idleTo.commits - idleFrom.commits) / idleSeconds,
      hostsCpuPerSecond: (idleTo.hosts - idleFrom.hosts) / idleSeconds,
      postgresCpuPerSecond: idleFrom.postgres === undefined || idleTo.postgres === undefined
        ? 0
        : (idleTo.postgres - idleFrom.postgres) / idleSeconds
    }
    /** The phase's cost per 1,000 units; backends report their commits up to 10 s late, so the end waits for them. */
    const costSince = (start: Snapshot, cpuEnd: Snapshot, units: number) =>
      Effect.gen(function*() {
        yield* sleep(11_000)
        const end = yield* snapshot
        const seconds = (performance.now() - start.at) / 1000
        const wal = (yield* walBetween(start.lsn, end.lsn)) - idle.walPerSecond * seconds
        const commits = end.commits - start.commits - idle.commitsPerSecond * seconds
        const per1000 = (x: number) => (x * 1000) / units
        const cpuSeconds = (cpuEnd.at - start.at) / 1000
        return {
          postgresCpuMs: start.postgres === undefined || cpuEnd.postgres === undefined
            ? undefined
            : per1000((cpuEnd.postgres - start.postgres - idle.postgresCpuPerSecond * cpuSeconds) / 1000),
          hostsCpuMs: per1000((cpuEnd.hosts - start.hosts - idle.hostsCpuPerSecond * cpuSeconds) / 1000),
          walKb: per1000(wal / 1024),
          commits: per1000(commits)
        } satisfies PhaseCost
      })
    const until = (what: string, done: Effect.Effect<boolean>, withinMs = 600_000) =>
      Effect.gen(function*() {
        const deadline = Date.now() + withinMs
        while (!(yield* done)) {
          if (Date.now() > deadline) return yield* Effect.die(new Error(`still waiting for ${what}`))
          yield* sleep(50)
        }
      })
    const spread = (path: string) => urls.map((url) => `${url}${path}`)

    // ---- 1. Inbound messages ----
    const signed = Array.from({ length: options.payloads }, (_, n) => {
      const raw = JSON.stringify(payloadOf(n, MESSAGES_PER_PAYLOAD, SIM_NUMBER.phoneNumberId, SIM_NUMBER.businessAccountId))
      return { raw, signature: UpstreamWebhook.hubSignature(new TextEncoder().encode(raw), APP_SECRET) }
    })
    const messages = options.payloads * MESSAGES_PER_PAYLOAD
    const inboundStored = count(sql`SELECT count(*) AS n FROM msg_messages WHERE direction = 'inbound'`)
    const inboundStart = yield* snapshot
    const t0 = performance.now()
    const posted = yield* Effect.promise(() =>
      loadApart({
        url: "",
        urls: spread("/platform/v1/msg/upstream/webhook"),
        method: "POST",
        headers: { "content-type": "application/json" },
        bodies: signed.map((s) => s.raw),
        bodyHeaders: signed.map((s) => ({ "x-hub-signature-256": s.signature })),
        requests: options.payloads,
        connections: options.connections,
        durationMs: 600_000
      })
    )
    if (posted.errors > 0) return yield* Effect.die(new Error(`${posted.errors} webhook POSTs failed`))
    yield* until("the inbound messages stored", Effect.map(inboundStored, (n) => n >= messages))
    const inboundSeconds = (performance.now() - t0) / 1000
    const inboundCost = yield* costSince(inboundStart, yield* snapshot, messages)

    // ---- 2. Proxied sends to contacts who wrote through the network (which keeps its own 24-hour windows) ----
    const contacts = Array.from({ length: 200 }, (_, i) => `4917${String(i).padStart(9, "0")}`)
    yield* network.command({ inbound: { phoneNumberId: SIM_NUMBER.phoneNumberId, contacts } })
    yield* until("the senders' messages stored", Effect.map(inboundStored, (n) => n >= messages + contacts.length))
    const sendStart = yield* snapshot
    const sends = yield* Effect.promise(() =>
      loadApart({
        url: "",
        urls: spread(`/proxy/v24.0/${SIM_NUMBER.phoneNumberId}/messages`),
        method: "POST",
        headers,
        bodies: contacts.map((to) => JSON.stringify({ messaging_product: "whatsapp", to, type: "text", text: { body: "hello" } })),
        connections: options.connections,
        durationMs: options.seconds * 1000
      })
    )
    // The network reports sent, delivered and read up to 3 s after a send: those are the sends' work too.
    yield* sleep(4_000)
    const sendsCost = yield* costSince(sendStart, yield* snapshot, sends.requests)

    // ---- 3. Step transitions ----
    const chainId = yield* createWorkflow("Chain", chainDefinition(CHAIN))
    const ended = (workflowId: string) =>
      count(sql`SELECT count(*) AS n FROM workflow_executions WHERE workflow_id = ${workflowId} AND status IN ('ended', 'failed')`)
    const startBodies = (prefix: string, n: number) =>
      Array.from({ length: n }, (_, i) =>
        JSON.stringify({ workflow_execution: { phone_number: `+${prefix}${String(i).padStart(7, "0")}`, phone_number_id: SIM_NUMBER.phoneNumberId } }))
    const stepsStart = yield* snapshot
    const t1 = performance.now()
    const starts = yield* Effect.promise(() =>
      loadApart({
        url: "",
        urls: spread(`/platform/v1/workflows/${chainId}/executions`),
        method: "POST",
        headers,
        bodies: startBodies("1556", 100_000),
        connections: options.connections,
        durationMs: options.seconds * 1000
      })
    )
    const runs = starts.requests - starts.errors
    yield* until("the chains ended", Effect.map(ended(chainId), (n) => n >= runs))
    const stepsSeconds = (performance.now() - t1) / 1000
    const stepsCost = yield* costSince(stepsStart, yield* snapshot, runs * (CHAIN + 1))

    // ---- 4. Inbound -> reply, one at a time ----
    const replierId = yield* createWorkflow("Replier", greeterDefinition)
    const trigger = yield* call("POST", `/platform/v1/workflows/${replierId}/triggers`, {
      trigger: { trigger_type: "inbound_message", phone_number_id: SIM_NUMBER.phoneNumberId }
    })
    if (trigger.status !== 201) return yield* Effect.die(new Error(`trigger: ${trigger.status}`))
    const replied = (waId: string) =>
      count(sql`
        SELECT count(*) AS n FROM msg_messages m JOIN msg_contacts c ON c.id = m.contact_id
        WHERE c.wa_id = ${waId} AND m.direction = 'outbound' AND m.network_id IS NOT NULL`)
    const endToEnd: Array<number> = []
    const warm = 10
    for (let i = 0; i < warm + options.samples; i++) {
      // A contact of its own each time, writing through the network: its message starts a new run.
      const waId = `4918${String(i).padStart(9, "0")}`
      const start = performance.now()
      yield* network.command({ inbound: { phoneNumberId: SIM_NUMBER.phoneNumberId, contacts: [waId] } })
      const deadline = start + 10_000
      while ((yield* replied(waId)) === 0) {
        if (performance.now() > deadline) {
          const seen = yield* Effect.orDie(sql`
            SELECT m.direction, m.status, m.network_id, m.processing_status FROM msg_messages m JOIN msg_contacts c ON c.id = m.contact_id WHERE c.wa_id = ${waId}`)
          const runs = yield* Effect.orDie(sql`SELECT status FROM workflow_executions WHERE workflow_id = ${replierId}`)
          return yield* Effect.die(new Error(`no reply to ${waId} in 10 s: ${JSON.stringify({ seen, runs })}`))
        }
        yield* sleep(2)
      }
      if (i >= warm) endToEnd.push(performance.now() - start)
    }

    // ---- 5. Waiting runs ----
    const waiterId = yield* createWorkflow("Waiter", waiterDefinition)
    const waitingNow = count(sql`SELECT count(*) AS n FROM workflow_executions WHERE workflow_id = ${waiterId} AND status = 'waiting'`)
    const size = count(sql`SELECT pg_database_size(current_database()) AS n`)
    yield* sleep(2_000)
    const rssBefore = hosts.reduce((sum, h) => sum + rssMb(h.pid), 0)
    const sizeBefore = yield* size
    const t2 = performance.now()
    const parked = yield* Effect.promise(() =>
      loadApart({
        url: "",
        urls: spread(`/platform/v1/workflows/${waiterId}/executions`),
        method: "POST",
        headers,
        bodies: startBodies("1557", options.waiting),
        requests: options.waiting,
        connections: options.connections,
        durationMs: 600_000
      })
    )
    if (parked.errors > 0) return yield* Effect.die(new Error(`${parked.errors} starts failed`))
    yield* until("the runs waiting", Effect.map(waitingNow, (n) => n >= options.waiting))
    const startsPerSecond = options.waiting / ((performance.now() - t2) / 1000)
    yield* sleep(2_000)
    const rssGrowthMb = hosts.reduce((sum, h) => sum + rssMb(h.pid), 0) - rssBefore
    const sizeGrowth = (yield* size) - sizeBefore

    // ---- 6. Retention's deletes, as the jobs make them today (10,000 rows a statement, oldest first) ----
    const deleteAll = (table: string, order: string) =>
      Effect.gen(function*() {
        const before = yield* snapshot
        const t = performance.now()
        let rows = 0
        while (true) {
          const deleted = yield* count(sql.unsafe(
            `WITH gone AS (DELETE FROM ${table} WHERE (tableoid, ctid) IN (SELECT tableoid, ctid FROM ${table} ORDER BY ${order} LIMIT 10000) RETURNING 1)
             SELECT count(*) AS n FROM gone`
          ))
          if (deleted === 0) break
          rows += deleted
        }
        const ms = performance.now() - t
        const after = yield* snapshot
        const wal = yield* walBetween(before.lsn, after.lsn)
        return {
          table,
          rows,
          msPer1000: rows === 0 ? 0 : (ms * 1000) / rows,
          walKbPer1000: rows === 0 ? 0 : (wal / 1024 * 1000) / rows,
          postgresCpuMsPer1000: before.postgres === undefined || after.postgres === undefined || rows === 0
            ? undefined
            : ((after.postgres - before.postgres) / 1000 * 1000) / rows
        }
      })
    const retention = [
      yield* deleteAll("workflow_step_events", "created_at"),
      yield* deleteAll("log_entries", "occurred_at")
    ]

    return {
      options,
      retention,
      inbound: { messages, perSecond: messages / inboundSeconds, cost: inboundCost },
      sends: { load: sends, cost: sendsCost },
      steps: { runs, transitionsPerSecond: (runs * (CHAIN + 1)) / stepsSeconds, cost: stepsCost },
      reply: { samples: options.samples, endToEnd: percentiles(endToEnd) },
      waiting: {
        runs: options.waiting,
        rssGrowthMb,
        runsPerGb: rssGrowthMb <= 0 ? Number.POSITIVE_INFINITY : (options.waiting / rssGrowthMb) * 1024,
        databaseKbPerRun: sizeGrowth / 1024 / options.waiting,
        startsPerSecond
      }
    } satisfies EnvelopeResult
  }).pipe(Effect.scoped)

const costText = (c: PhaseCost) =>
  `PostgreSQL CPU ${c.postgresCpuMs === undefined ? "unknown" : `${c.postgresCpuMs.toFixed(0)} ms`}, hosts' CPU ${
    c.hostsCpuMs.toFixed(0)
  } ms, WAL ${c.walKb.toFixed(0)} KB, ${c.commits.toFixed(0)} commits`

export const formatEnvelope = (r: EnvelopeResult): string =>
  [
    `Scale envelope: ${r.options.hosts} host process${r.options.hosts === 1 ? "" : "es"} on one PostgreSQL${
      r.options.databaseUrl === undefined ? " (embedded, durable)" : " (DATABASE_URL)"
    }, network in a process of its own, ${r.options.connections} connections, ${Os.availableParallelism()} cores`,
    `  inbound messages/s        ${r.inbound.perSecond.toFixed(0).padStart(6)}   (${r.inbound.messages} messages in webhooks of ${MESSAGES_PER_PAYLOAD})`,
    `    per 1,000 messages: ${costText(r.inbound.cost)}`,
    `  sends/s (proxied)         ${r.sends.load.rps.toFixed(0).padStart(6)}   p50 ${r.sends.load.p50Ms.toFixed(1)} ms   p99 ${
      r.sends.load.p99Ms.toFixed(1)
    } ms   errors ${r.sends.load.errors}`,
    `    per 1,000 sends, status reports included: ${costText(r.sends.cost)}`,
    `  step transitions/s        ${r.steps.transitionsPerSecond.toFixed(0).padStart(6)}   (${r.steps.runs} runs of start + ${CHAIN} set_variable, started over HTTP)`,
    `    per 1,000 transitions: ${costText(r.steps.cost)}`,
    `  inbound -> reply          p50 ${r.reply.endToEnd.p50.toFixed(1)} ms   p99 ${r.reply.endToEnd.p99.toFixed(1)} ms   (${r.reply.samples} one at a time, reply stored with the network's id)`,
    `  waiting runs per GB       ${Number.isFinite(r.waiting.runsPerGb) ? r.waiting.runsPerGb.toFixed(0) : "no growth"}   (${r.waiting.runs} parked: hosts' RSS +${
      r.waiting.rssGrowthMb.toFixed(0)
    } MB, database +${r.waiting.databaseKbPerRun.toFixed(1)} KB a run, started at ${r.waiting.startsPerSecond.toFixed(0)}/s)`,
    "  retention today: rows deleted 10,000 a statement, oldest first, per 1,000 rows",
    ...r.retention.map((c) =>
      `    ${c.table.padEnd(22)} ${c.msPer1000.toFixed(0).padStart(5)} ms   WAL ${c.walKbPer1000.toFixed(0)} KB   PostgreSQL CPU ${
        c.postgresCpuMsPer1000 === undefined ? "unknown" : `${c.postgresCpuMsPer1000.toFixed(0)} ms`
      }   (${c.rows} rows)`
    ),
    ""
  ].join("\n")

/** The options of the environment (see the module's comment). */
export const envelopeOptionsFromEnv = (): ReadonlyArray<EnvelopeOptions> => {
  const env = process.env
  const databaseUrl = env.DATABASE_URL === undefined || env.DATABASE_URL === "" ? undefined : env.DATABASE_URL
  const counts = (env.ENVELOPE_HOSTS ?? "1,2").split(",").map((s) => Number(s.trim())).filter((n) => n > 0)
  const base = {
    databaseUrl,
    postgresPid: env.ENVELOPE_POSTGRES_PID === undefined ? undefined : Number(env.ENVELOPE_POSTGRES_PID),
    seconds: Number(env.BENCH_SECONDS ?? 5),
    connections: Number(env.ENVELOPE_CONNECTIONS ?? 16),
    payloads: Number(env.ENVELOPE_PAYLOADS ?? 300),
    waiting: Number(env.ENVELOPE_WAITING ?? 2_000),
    samples: Number(env.ENVELOPE_SAMPLES ?? 100)
  }
  // A given database is filled by one run: one host count then.
  return (databaseUrl === undefined ? counts : counts.slice(0, 1)).map((hosts) => ({ ...base, hosts }))
}

if (process.argv[1] !== undefined && Path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  Effect.runPromise(
    Effect.forEach(envelopeOptionsFromEnv(), (options) => Effect.map(benchEnvelope(options), (r) => console.log(formatEnvelope(r))), {
      discard: true
    }).pipe(Effect.provideService(References.MinimumLogLevel, "Warn"))
  ).then(() => process.exit(0), (error) => {
    console.error(error)
    process.exit(1)
  })
}
