/**
 * What an inbound resume costs beside an API resume, by part, in CPU (the host's process and PostgreSQL's), in
 * alternated rounds so a shared machine's load falls on every part alike (issue 30 §1):
 *
 * - `api`: a waiting run (`wait_for_response`, debounce 0) resumed over `POST .../resume`, to its end;
 * - `inbound`: the same resume by its contact's reply, through the in-process network (read mode the default,
 *   `read_with_typing`: the network's mark-read and its store write);
 * - `inbound, read mode disabled`: the same without read mode;
 * - `network alone`: the in-process network's own share of a reply — rendering, signing and storing the webhook it
 *   posts (to a sink that takes the POST and does nothing), then answering read mode's mark-read of it. In the executions bench this CPU is charged to the host
 *   (the network runs in it); against a real network it is not Parley's.
 *
 *   node --max-semi-space-size=8 --conditions=@parley/source bench/inboundParts.ts
 *
 * `INBOUND_PARTS_ROUNDS` (default 3) rounds, after one not counted, of `INBOUND_PARTS_N` (default 150) units per part, 16 at a time.
 */
import { UpstreamIngestion, UpstreamSettings } from "@parley/core"
import { Simulator } from "@parley/core/simulators"
import { Context, Effect, Option, Redacted, References } from "effect"
import { SqlClient } from "effect/sql"
import { processTreeCpuMicros } from "./cpu.ts"
import { waiterDefinition } from "./executions.ts"
import { connectSimulatedNumber, jsonRequester, runsReaching, startBenchHost } from "./host.ts"
import { loadApart } from "./loadProcess.ts"

const KEY = "pk_bench_inbound_parts_0123456789ab"
const rounds = Number(process.env.INBOUND_PARTS_ROUNDS ?? 3)
const n = Number(process.env.INBOUND_PARTS_N ?? 150)
const concurrency = 16

const program = Effect.gen(function*() {
  const { context, postgresPid, url } = yield* startBenchHost(KEY, { durable: true })
  const sql = Context.get(context, SqlClient.SqlClient)
  const simulator = Option.getOrThrow(Context.getOption(context, Simulator.NetworkSimulator))
  const ingestion = Context.get(context, UpstreamIngestion)
  const number = Option.getOrThrow(Context.get(context, UpstreamSettings).simulatedNumber)
  const pnid = number.phoneNumberId
  const { headers, request } = jsonRequester(url, KEY)
  yield* connectSimulatedNumber(context, request)
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
  const reply = (from: string) => simulator.inbound(pnid, { from, message: { type: "text", text: { body: "yes" } } })

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
      yield* effect
      // What the unit leaves to run after its run ended (read marks, log entries) is counted with it.
      yield* Effect.sleep("500 millis")
      const used = process.cpuUsage(host)
      return { host: (used.user + used.system) / 1000 / n, postgres: ((processTreeCpuMicros(postgresPid) ?? 0) - pg) / 1000 / n }
    })
  const runsOf = (workflowId: string, contacts: ReadonlyArray<string>) =>
    Effect.map(
      sql<{ id: string }>`
        SELECT e.id FROM workflow_executions e JOIN msg_contacts c ON c.id = e.contact_id
        WHERE e.workflow_id = ${workflowId} AND e.status = 'waiting' AND c.wa_id = ANY(${contacts})`,
      (rows) => rows.map((r) => r.id)
    )
  const parts = ["api", "inbound", "inbound, read mode disabled", "network alone"] as const
  const results = new Map<string, Array<{ host: number; postgres: number }>>(parts.map((p) => [p, []]))
  let ended = 0
  let endedSilent = 0
  // Round 0 warms the host up and is not counted.
  for (let r = 0; r < total; r++) {
    const ids = yield* runsOf(reading, phones("1561", r))
    ended += n
    results.get("api")!.push(yield* cpuOf(Effect.andThen(
      Effect.promise(() =>
        loadApart({
          url,
          urls: ids.map((id) => `${url}/platform/v1/workflow_executions/${id}/resume`),
          method: "POST",
          headers,
          body: JSON.stringify({ message: { kind: "text", data: "yes" } }),
          requests: ids.length,
          connections: concurrency,
          durationMs: 600_000
        })
      ),
      until(reading, "ended", ended)
    )))
    ended += n
    results.get("inbound")!.push(yield* cpuOf(Effect.andThen(
      Effect.forEach(phones("1562", r), reply, { concurrency, discard: true }),
      until(reading, "ended", ended)
    )))
    endedSilent += n
    results.get("inbound, read mode disabled")!.push(yield* cpuOf(Effect.andThen(
      Effect.forEach(phones("1563", r), reply, { concurrency, discard: true }),
      until(silent, "ended", endedSilent)
    )))
    // Contacts with no run: the webhook reaches a sink that takes it and does nothing.
    yield* simulator.setSink(() => Effect.void)
    const encoder = new TextEncoder()
    const markRead = (id: string) =>
      simulator.handle({
        method: "POST",
        baseUrl: "http://network.local",
        path: `/v24.0/${pnid}/messages`,
        query: {},
        authorization: `Bearer ${Redacted.value(number.accessToken)}`,
        body: {
          _tag: "Bytes",
          contentType: "application/json",
          bytes: encoder.encode(JSON.stringify({ messaging_product: "whatsapp", status: "read", message_id: id, typing_indicator: { type: "text" } }))
        }
      })
    results.get("network alone")!.push(yield* cpuOf(Effect.forEach(phones("1564", r), (from) =>
      Effect.flatMap(reply(from), (sent) =>
        Effect.flatMap(markRead(sent.id), (answer) =>
          answer.status === 200 ? Effect.void : Effect.die(new Error(`mark-read answered ${answer.status}`)))), { concurrency, discard: true })))
    yield* simulator.setSink((body, signature) => ingestion.receive(body, signature))
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
    return { host: median(rs.map((x) => x.host)), postgres: median(rs.map((x) => x.postgres)) }
  }
  console.log(`CPU per unit, host / PostgreSQL (ms), ${rounds} alternated rounds of ${n}, ${concurrency} at a time:`)
  for (const part of parts) {
    const m = of(part)
    console.log(`  ${part.padEnd(28)} ${results.get(part)!.map((x) => `${fmt(x.host)} / ${fmt(x.postgres)}`).join("   ")}   median ${fmt(m.host)} / ${fmt(m.postgres)}`)
  }
  const api = of("api")
  const inbound = of("inbound")
  const network = of("network alone")
  console.log(`  medians, API / inbound: host ${(api.host / inbound.host).toFixed(2)}, both ${((api.host + api.postgres) / (inbound.host + inbound.postgres)).toFixed(2)}; less the network's own share: host ${
    (api.host / (inbound.host - network.host)).toFixed(2)
  }, both ${((api.host + api.postgres) / (inbound.host + inbound.postgres - network.host - network.postgres)).toFixed(2)}`)
}).pipe(Effect.scoped)

Effect.runPromise(program.pipe(Effect.provideService(References.MinimumLogLevel, "Warn"))).then(
  () => process.exit(0),
  (error) => {
    console.error(error)
    process.exit(1)
  }
)
