/**
 * What read mode's mark-read costs the host, by part (issue 30 §1), in alternated rounds:
 * - `whole`: `Messaging.markRead` (the network's mark-read, then the mark stored, group-committed);
 * - `network call`: `MessagingNetwork.markRead` alone (the Cloud API adapter over the in-process network);
 * - `network's own`: the simulator's `handle` of the same request (what a real network does elsewhere);
 * - `store`: `MessagesRepo.markInboundRead` of one mark alone.
 *
 *   node --max-semi-space-size=8 --conditions=@parley/source bench/markReadParts.ts
 */
import { LiveNumbers, Messaging, MessagesRepo, MessagingNetwork, UpstreamSettings } from "@parley/core"
import { Simulator } from "@parley/core/simulators"
import { Context, Effect, Option, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { processTreeCpuMicros } from "./cpu.ts"
import { connectSimulatedNumber, jsonRequester, runScript, simulatedMarkRead, startBenchHost } from "./host.ts"

const KEY = "pk_bench_mark_read_parts_0123456789"
const rounds = Number(process.env.MARK_READ_ROUNDS ?? 3)
const n = Number(process.env.MARK_READ_N ?? 300)
const concurrency = 16

const program = Effect.gen(function*() {
  const { context, postgresPid, url } = yield* startBenchHost(KEY, { durable: true })
  const sql = Context.get(context, SqlClient.SqlClient)
  const simulator = Option.getOrThrow(Context.getOption(context, Simulator.NetworkSimulator))
  const messaging = Context.get(context, Messaging)
  const network = Context.get(context, MessagingNetwork)
  const repo = Context.get(context, MessagesRepo)
  const number = Option.getOrThrow(Context.get(context, UpstreamSettings).simulatedNumber)
  const pnid = number.phoneNumberId
  const { request } = jsonRequester(url, KEY)
  yield* connectSimulatedNumber(context, request)
  const config = Option.getOrThrow(yield* Context.get(context, LiveNumbers).byPhoneNumberId(pnid))
  const access = { accessToken: config.access_token }
  const parts = ["whole", "network call", "network's own", "store"] as const
  const total = rounds + 1
  // One inbound message per contact per (round, part), stored by Parley (no workflow takes it).
  const phones = (part: number, round: number) => Array.from({ length: n }, (_, i) => `1571${part}${round}${String(i).padStart(5, "0")}`)
  for (let r = 0; r < total; r++) {
    for (let p = 0; p < parts.length; p++) {
      yield* Effect.forEach(phones(p, r), (from) => simulator.inbound(pnid, { from, message: { type: "text", text: { body: "hi" } } }), {
        concurrency,
        discard: true
      })
    }
  }
  const idsOf = (contacts: ReadonlyArray<string>) =>
    Effect.map(
      sql<{ network_id: string }>`
        SELECT m.network_id FROM msg_messages m JOIN msg_contacts c ON c.id = m.contact_id
        WHERE m.direction = 'inbound' AND c.wa_id = ANY(${contacts})`,
      (rows) => rows.map((r) => r.network_id)
    )
  const run: Record<typeof parts[number], (id: string) => Effect.Effect<unknown, unknown>> = {
    "whole": (id) => messaging.markRead(config, access, { messageId: id, typingIndicator: true }),
    "network call": (id) => network.markRead(access, pnid, { messageId: id, typingIndicator: true }),
    "network's own": simulatedMarkRead(simulator, pnid, Redacted.value(number.accessToken)),
    "store": (id) => repo.markInboundRead([{ projectId: config.project_id, phoneNumberId: pnid, networkId: id, at: new Date().toISOString() }])
  }
  const results = new Map<string, Array<{ host: number; postgres: number }>>(parts.map((p) => [p, []]))
  for (let r = 0; r < total; r++) {
    for (let p = 0; p < parts.length; p++) {
      const ids = yield* idsOf(phones(p, r))
      if (ids.length !== n) return yield* Effect.die(new Error(`${ids.length} messages stored of ${n}`))
      yield* Effect.sleep("1 second")
      const host = process.cpuUsage()
      const pg = processTreeCpuMicros(postgresPid) ?? 0
      yield* Effect.forEach(ids, run[parts[p]!], { concurrency, discard: true })
      const used = process.cpuUsage(host)
      results.get(parts[p]!)!.push({ host: (used.user + used.system) / 1000 / n, postgres: ((processTreeCpuMicros(postgresPid) ?? 0) - pg) / 1000 / n })
    }
  }
  for (const rs of results.values()) rs.shift()
  const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
  console.log(`CPU per mark-read, host / PostgreSQL (ms), ${rounds} alternated rounds of ${n}, ${concurrency} at a time:`)
  for (const part of parts) {
    const rs = results.get(part)!
    console.log(`  ${part.padEnd(16)} ${rs.map((x) => `${x.host.toFixed(3)} / ${x.postgres.toFixed(3)}`).join("   ")}   median ${median(rs.map((x) => x.host)).toFixed(3)} / ${median(rs.map((x) => x.postgres)).toFixed(3)}`)
  }
}).pipe(Effect.scoped)

runScript(program)
