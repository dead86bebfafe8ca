/**
 * What an inbound resume costs beside an API resume, by part, in CPU (the host's process and PostgreSQL's), in
 * alternated rounds so a shared machine's load falls on every part alike (issue 30 §1):
 *
 * - `api`: a waiting run (`wait_for_response`, debounce 0) resumed over `POST .../resume`, to its end;
 * - `inbound`: the same resume by its contact's reply, through the network (read mode the default,
 *   `read_with_typing`: the network's mark-read and its store write);
 * - `inbound, read mode disabled`: the same without read mode;
 * - `network alone`: the in-process network's own share of a reply — rendering, signing and storing the webhook it
 *   posts (to a sink that takes the POST and does nothing), then answering read mode's mark-read of it. In the executions bench this CPU is charged to the host
 *   (the network runs in it); against a real network it is not Parley's.
 *
 *   node --max-semi-space-size=8 --conditions=@parley/source bench/inboundParts.ts
 *
 * `INBOUND_PARTS_ROUNDS` (default 3) rounds, after one not counted, of `INBOUND_PARTS_N` (default 150) units per part, 16 at a time;
 * each round starts one part later, so rounds in a multiple of the parts (4; 3 with the network apart) put every part
 * in every place once.
 *
 * `INBOUND_PARTS_NETWORK=remote` runs the network in a process of its own (`network.ts`), as a host meets the real
 * one: its webhooks reach the host's ingestion endpoint over HTTP, as the API resume's POSTs reach its API from the
 * bench's own process, and read mode's mark-read is an HTTP call through the host's client. The host's CPU is then
 * the host's alone, the network's is measured in its process (third figure), and `network alone` is not run.
 */
import { UpstreamIngestion, UpstreamSettings } from "@parley/core"
import { Simulator } from "@parley/core/simulators"
import { Context, Effect, Option, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { processTreeCpuMicros } from "./cpu.ts"
import { waiterDefinition } from "./executions.ts"
import { connectSimulatedNumber, jsonRequester, runScript, runsReaching, simulatedMarkRead, startBenchHost } from "./host.ts"
import { loadApart, resumesApart } from "./loadProcess.ts"
import { forkNetwork } from "./networkProcess.ts"

const KEY = "pk_bench_inbound_parts_0123456789ab"
const rounds = Number(process.env.INBOUND_PARTS_ROUNDS ?? 3)
const n = Number(process.env.INBOUND_PARTS_N ?? 150)
const concurrency = 16
const remote = process.env.INBOUND_PARTS_NETWORK === "remote"
/** The network process's default number (`Simulator.registerSimulatedNumber`) and the app secret its webhooks are signed with. */
const REMOTE_NUMBER = { phoneNumberId: "100000000000001", businessAccountId: "200000000000001", token: "parley-simulator-token" }
const APP_SECRET = "bench-inbound-parts-app-secret"

/** The host beside its network: in its process (the host's simulator), or in one of its own. */
const startWithNetwork = Effect.gen(function*() {
  if (!remote) {
    const host = yield* startBenchHost(KEY, { durable: true })
    const { request } = jsonRequester(host.url, KEY)
    const pnid = yield* connectSimulatedNumber(host.context, request)
    const simulator = Option.getOrThrow(Context.getOption(host.context, Simulator.NetworkSimulator))
    const write = (contacts: ReadonlyArray<string>) =>
      Effect.forEach(contacts, (from) => simulator.inbound(pnid, { from, message: { type: "text", text: { body: "yes" } } }), {
        concurrency,
        discard: true
      })
    const ingestion = Context.get(host.context, UpstreamIngestion)
    const number = Option.getOrThrow(Context.get(host.context, UpstreamSettings).simulatedNumber)
    const markRead = simulatedMarkRead(simulator, pnid, Redacted.value(number.accessToken))
    // Contacts with no run: the webhook reaches a sink that takes it and does nothing.
    const networkAlone = (contacts: ReadonlyArray<string>) =>
      Effect.gen(function*() {
        yield* simulator.setSink(() => Effect.void)
        yield* Effect.forEach(contacts, (from) =>
          Effect.flatMap(simulator.inbound(pnid, { from, message: { type: "text", text: { body: "yes" } } }), (sent) =>
            Effect.flatMap(markRead(sent.id), (answer) =>
              answer.status === 200 ? Effect.void : Effect.die(new Error(`mark-read answered ${answer.status}`)))), { concurrency, discard: true })
      }).pipe(Effect.ensuring(simulator.setSink((body, signature) => ingestion.receive(body, signature))))
    return { ...host, pnid, write, networkPid: undefined, networkAlone }
  }
  const network = yield* forkNetwork(APP_SECRET)
  const host = yield* startBenchHost(KEY, {
    durable: true,
    env: { PARLEY_UPSTREAM: "cloud", PARLEY_UPSTREAM_URL: `http://127.0.0.1:${network.port}`, PARLEY_UPSTREAM_APP_SECRET: APP_SECRET }
  })
  const { request } = jsonRequester(host.url, KEY)
  const connected = yield* request("POST", "/platform/v1/msg/phone_numbers", {
    msg_config: { phone_number_id: REMOTE_NUMBER.phoneNumberId, business_account_id: REMOTE_NUMBER.businessAccountId, access_token: REMOTE_NUMBER.token }
  })
  if (connected.status !== 201) return yield* Effect.die(new Error(`connect: ${connected.status}`))
  yield* network.command({ sink: `${host.url}/platform/v1/msg/upstream/webhook` })
  yield* network.command({ lift: REMOTE_NUMBER.phoneNumberId })
  const write = (contacts: ReadonlyArray<string>) =>
    network.command({ inbound: { phoneNumberId: REMOTE_NUMBER.phoneNumberId, contacts, concurrency, body: "yes" } })
  return { ...host, pnid: REMOTE_NUMBER.phoneNumberId, write, networkPid: network.pid, networkAlone: undefined }
})

const program = Effect.gen(function*() {
  const { context, networkAlone, networkPid, pnid, postgresPid, url, write } = yield* startWithNetwork
  const sql = Context.get(context, SqlClient.SqlClient)
  const { headers, request } = jsonRequester(url, KEY)
  const createWorkflow = (name: string, fields: Record<string, unknown>) =>
    Effect.map(
      request("POST", "/platform/v1/workflows", { workflow: { name, status: "active", definition: waiterDefinition, message_debounce_seconds: 0, ...fields } }),
      (r) => r.body.data.id as string
    )
  const { until } = runsReaching(sql, 6000)
  const startAll = (workflowId: string, contacts: ReadonlyArray<string>) =>
    Effect.promise(() =>
      loadApart({
        url: `${url}/platform/v1/workflows/${workflowId}/executions`,
        method: "POST",
        headers,
        bodies: contacts.map((phone) => JSON.stringify({ workflow_execution: { phone_number: `+${phone}`, phone_number_id: pnid } })),
        requests: contacts.length,
        connections: concurrency,
        durationMs: 600_000
      })
    )
  const phones = (prefix: string, round: number) => Array.from({ length: n }, (_, i) => `${prefix}${round}${String(i).padStart(6, "0")}`)

  // Every run of every round waits before the first round is measured.
  const reading = yield* createWorkflow("Waiter", {})
  const silent = yield* createWorkflow("Waiter, read mode disabled", { inbound_message_read_mode: "disabled" })
  const total = rounds + 1
  for (let r = 0; r < total; r++) {
    yield* startAll(reading, phones("1561", r))
    yield* startAll(reading, phones("1562", r))
    yield* startAll(silent, phones("1563", r))
  }
  yield* until(reading, "waiting", 2 * total * n)
  yield* until(silent, "waiting", total * n)

  const cpuOf = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
    Effect.gen(function*() {
      yield* Effect.sleep("1 second")
      const host = process.cpuUsage()
      const pg = processTreeCpuMicros(postgresPid) ?? 0
      const net = networkPid === undefined ? 0 : processTreeCpuMicros(networkPid) ?? 0
      yield* effect
      // What the unit leaves to run after its run ended (read marks, log entries) is counted with it.
      yield* Effect.sleep("500 millis")
      const used = process.cpuUsage(host)
      return {
        host: (used.user + used.system) / 1000 / n,
        postgres: ((processTreeCpuMicros(postgresPid) ?? 0) - pg) / 1000 / n,
        network: networkPid === undefined ? 0 : ((processTreeCpuMicros(networkPid) ?? 0) - net) / 1000 / n
      }
    })
  const runsOf = (workflowId: string, contacts: ReadonlyArray<string>) =>
    Effect.map(
      sql<{ id: string }>`
        SELECT e.id FROM workflow_executions e JOIN msg_contacts c ON c.id = e.contact_id
        WHERE e.workflow_id = ${workflowId} AND e.status = 'waiting' AND c.wa_id = ANY(${contacts})`,
      (rows) => rows.map((r) => r.id)
    )
  const parts = remote ? ["api", "inbound", "inbound, read mode disabled"] as const : ["api", "inbound", "inbound, read mode disabled", "network alone"] as const
  const results = new Map<string, Array<{ host: number; postgres: number; network: number }>>(parts.map((p) => [p, []]))
  let ended = 0
  let endedSilent = 0
  const unit: Record<string, (r: number) => Effect.Effect<{ host: number; postgres: number; network: number }, unknown>> = {
    "api": (r) =>
      Effect.gen(function*() {
        const ids = yield* runsOf(reading, phones("1561", r))
        ended += n
        return yield* cpuOf(Effect.andThen(
          Effect.promise(() => resumesApart(url, headers, ids, concurrency)),
          until(reading, "ended", ended)
        ))
      }),
    "inbound": (r) => Effect.suspend(() => cpuOf(Effect.andThen(write(phones("1562", r)), until(reading, "ended", ended += n)))),
    "inbound, read mode disabled": (r) =>
      Effect.suspend(() => cpuOf(Effect.andThen(write(phones("1563", r)), until(silent, "ended", endedSilent += n)))),
    "network alone": (r) => networkAlone === undefined ? Effect.die(new Error("no network in process")) : cpuOf(networkAlone(phones("1564", r)))
  }
  // Round 0 warms the host up and is not counted. Each round starts one part later: a part pays for what the one
  // before it left behind (its garbage, its log entries), so every part takes every place alike (an A/A run, both
  // inbound workflows with read mode on, gave the part after the API's 1.1 ms more host CPU per unit at load 16).
  for (let r = 0; r < total; r++) {
    for (let i = 0; i < parts.length; i++) {
      const part = parts[(r + i) % parts.length]!
      results.get(part)!.push(yield* unit[part]!(r))
    }
  }
  for (const rs of results.values()) rs.shift()
  const fmt = (x: number) => x.toFixed(3)
  // Medians: PostgreSQL's CPU over a window also holds its background work (autovacuum, checkpoints), which lands in
  // whichever part's window it falls.
  const median = (xs: ReadonlyArray<number>) => {
    const sorted = [...xs].sort((a, b) => a - b)
    const mid = Math.floor(sorted.length / 2)
    return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
  }
  const of = (part: string) => {
    const rs = results.get(part)!
    return { host: median(rs.map((x) => x.host)), postgres: median(rs.map((x) => x.postgres)), network: median(rs.map((x) => x.network)) }
  }
  const cells = (x: { host: number; postgres: number; network: number }) => `${fmt(x.host)} / ${fmt(x.postgres)}${remote ? ` / ${fmt(x.network)}` : ""}`
  console.log(`CPU per unit, host / PostgreSQL${remote ? " / the network's process" : ""} (ms), ${rounds} alternated rounds of ${n}, ${concurrency} at a time, network ${remote ? "in a process of its own" : "in the host's process"}:`)
  for (const part of parts) console.log(`  ${part.padEnd(28)} ${results.get(part)!.map(cells).join("   ")}   median ${cells(of(part))}`)
  const api = of("api")
  const inbound = of("inbound")
  const unread = of("inbound, read mode disabled")
  const ratios = (i: { host: number; postgres: number }) => `host ${(api.host / i.host).toFixed(2)}, both ${((api.host + api.postgres) / (i.host + i.postgres)).toFixed(2)}`
  const alone = results.has("network alone") ? of("network alone") : undefined
  console.log(`  medians, API / inbound: ${ratios(inbound)}${
    alone === undefined ? "" : `; less the network's own share: ${ratios({ host: inbound.host - alone.host, postgres: inbound.postgres - alone.postgres })}`
  }; API / inbound with read mode disabled: ${ratios(unread)}`)
}).pipe(Effect.scoped)

runScript(program)
