/**
 * What one unit of work costs PostgreSQL, counted instead of timed (counts do not move with a shared machine's
 * load): per API start of a run that sends one message, per resume over the API, per waiting run resumed by its
 * contact's reply, and per run of a 50-step chain. For each: statements (`pg_stat_statements`, top-level, pg-boss's
 * included), transactions committed, the host's writes to PostgreSQL (round trips or pipelined batches), and the
 * statements that ran most often.
 *
 *   node --conditions=@parley/source bench/statements.ts            (STATEMENTS_N runs per part, default 200)
 *
 * `STATEMENTS_PARTS` (default `first,start,resume,inbound,steps`; `first`: API starts for contacts who wrote before,
 * the network's status reports held back, as the executions bench's first-message part; `proxy`: proxied sends one at a
 * time, then their status reports, as `proxy.ts` sends) chooses the parts; `STATEMENTS_TOP` (default 25) how many
 * statements each lists. `STATEMENTS_TRACE=k` prints, for the last k units of each part (run one at a time), every host
 * write to PostgreSQL with the statements it carries, in order.
 */
import { ExecutionEngine, Executions, type Principal, UpstreamIngestion, UpstreamSettings } from "@parley/core"
import { Simulator } from "@parley/core/simulators"
import { Context, Effect, Option } from "effect"
import { SqlClient } from "effect/sql"
import { chainDefinition, countDatabaseWrites, greeterDefinition, waiterDefinition } from "./executions.ts"
import { connectSimulatedNumber, jsonRequester, runScript, runsReaching, startBenchHost } from "./host.ts"
import { loadApart } from "./loadProcess.ts"
import { traceDatabaseWrites } from "./traceWrites.ts"

const KEY = "pk_bench_statements_0123456789abcd"
const n = Number(process.env.STATEMENTS_N ?? 200)
const top = Number(process.env.STATEMENTS_TOP ?? 25)
const parts = new Set((process.env.STATEMENTS_PARTS ?? "first,start,resume,inbound,steps").split(","))

const program = Effect.gen(function*() {
  const { context, project, url } = yield* startBenchHost(KEY, {
    postgres: { shared_preload_libraries: "pg_stat_statements", "pg_stat_statements.track": "top", "pg_stat_statements.max": "5000" }
  })
  const sql = Context.get(context, SqlClient.SqlClient)
  const simulator = Option.getOrThrow(Context.getOption(context, Simulator.NetworkSimulator))
  const number = Option.getOrThrow(Context.get(context, UpstreamSettings).simulatedNumber)
  const executions = Context.get(context, Executions)
  const engine = Context.get(context, ExecutionEngine)
  const principal: Principal = { project, apiKey: { id: "bench", name: "bench" } }
  const pnid = number.phoneNumberId
  yield* sql`CREATE EXTENSION IF NOT EXISTS pg_stat_statements`
  const writes = countDatabaseWrites()
  yield* Effect.addFinalizer(() => Effect.sync(writes.restore))
  const traceUnits = Number(process.env.STATEMENTS_TRACE ?? 0)
  const trace = traceUnits > 0 ? traceDatabaseWrites() : undefined
  if (trace !== undefined) yield* Effect.addFinalizer(() => Effect.sync(trace.restore))
  /** Runs `unit` `traceUnits` times, one at a time, printing the last one's writes. */
  const traced = <E, R>(name: string, unit: (i: number) => Effect.Effect<unknown, E, R>) =>
    Effect.gen(function*() {
      for (let i = 0; trace !== undefined && i < traceUnits; i++) {
        yield* Effect.sleep("500 millis")
        trace.begin()
        yield* unit(i)
        const lines = trace.end()
        if (i === traceUnits - 1) console.log(`\n${name}, traced: ${lines.length} host writes\n${lines.join("\n")}`)
      }
    })
  const { headers, request } = jsonRequester(url, KEY)
  yield* connectSimulatedNumber(context, request)
  const createWorkflow = (name: string, definition: unknown, fields: Record<string, unknown> = {}) =>
    Effect.map(request("POST", "/platform/v1/workflows", { workflow: { name, status: "active", definition, ...fields } }), (r) => r.body.data.id as string)
  const { count, until } = runsReaching(sql, 3000)
  const phones = (prefix: string) => Array.from({ length: n }, (_, i) => `${prefix}${String(i).padStart(7, "0")}`)
  const startAll = (workflowId: string, contacts: ReadonlyArray<string>) =>
    Effect.promise(() =>
      loadApart({
        url: `${url}/platform/v1/workflows/${workflowId}/executions`,
        method: "POST",
        headers,
        bodies: contacts.map((phone) => JSON.stringify({ workflow_execution: { phone_number: `+${phone}`, phone_number_id: pnid } })),
        requests: contacts.length,
        connections: 16,
        durationMs: 600_000
      })
    )
  const reply = (from: string, body: string) => simulator.inbound(pnid, { from, message: { type: "text", text: { body } } })
  // The bench's own polls are counted apart (they carry `workflow_id = $1 AND status = $2`).
  const measured = <A, E, R>(name: string, per: number, effect: Effect.Effect<A, E, R>) =>
    Effect.gen(function*() {
      yield* Effect.sleep("2 seconds")
      yield* sql`SELECT pg_stat_statements_reset()`
      const [commits] = yield* sql<{ c: string }>`SELECT xact_commit::text AS c FROM pg_stat_database WHERE datname = current_database()`
      const w0 = writes.count()
      yield* effect
      const w = writes.count() - w0
      const [commitsAfter] = yield* sql<{ c: string }>`SELECT xact_commit::text AS c FROM pg_stat_database WHERE datname = current_database()`
      const rows = yield* sql<{ calls: string; ms: string; query: string }>`
        SELECT calls::text AS calls, total_exec_time::text AS ms, query FROM pg_stat_statements
        WHERE query NOT LIKE '%pg_stat_statements%' AND query NOT LIKE '%pg_stat_database%'
        ORDER BY pg_stat_statements.calls DESC`
      const polls = rows.filter((r) => r.query.includes("count(*) AS n FROM workflow_executions"))
      const real = rows.filter((r) => !polls.includes(r))
      const total = real.reduce((a, r) => a + Number(r.calls), 0)
      const pollCalls = polls.reduce((a, r) => a + Number(r.calls), 0)
      const ms = real.reduce((a, r) => a + Number(r.ms), 0)
      console.log(`\n${name}: ${(total / per).toFixed(1)} statements (${(ms / per).toFixed(3)} ms executing), ${((Number(commitsAfter!.c) - Number(commits!.c) - pollCalls - 1) / per).toFixed(1)} transactions, ${(w / per).toFixed(1)} host writes (the bench's polls included: ${pollCalls}) per unit (${per} units)`)
      for (const r of real.slice(0, top)) {
        console.log(`  ${(Number(r.calls) / per).toFixed(2).padStart(6)} ${(Number(r.ms) / per).toFixed(3).padStart(7)} ms  ${r.query.replace(/\s+/g, " ").slice(0, 150)}`)
      }
    })

  if (parts.has("first")) {
    const greeter = yield* createWorkflow("First", greeterDefinition)
    const contacts = phones("1554")
    yield* Effect.forEach(contacts, (from) => reply(from, "hi"), { concurrency: 16, discard: true })
    yield* Effect.sleep("3 seconds")
    const ingestion = Context.get(context, UpstreamIngestion)
    yield* simulator.setSink(undefined)
    yield* measured("API start (contact known, status reports held back) -> send_text -> end, one at a time", n, Effect.forEach(contacts, (phone) =>
      Effect.andThen(
        request("POST", `/platform/v1/workflows/${greeter}/executions`, { workflow_execution: { phone_number: `+${phone}`, phone_number_id: pnid } }),
        engine.idle
      ), { discard: true }))
    yield* traced("API start (contact known)", (i) =>
      Effect.andThen(
        request("POST", `/platform/v1/workflows/${greeter}/executions`, { workflow_execution: { phone_number: `+${contacts[i]}`, phone_number_id: pnid } }),
        engine.idle
      ))
    yield* simulator.setSink((body, signature) => ingestion.receive(body, signature))
  }
  if (parts.has("start")) {
    const greeter = yield* createWorkflow("Greeter", greeterDefinition)
    const contacts = phones("1558")
    yield* Effect.forEach(contacts, (from) => reply(from, "hi"), { concurrency: 16, discard: true })
    yield* Effect.sleep("3 seconds")
    yield* measured("API start -> send_text -> end", n, Effect.andThen(startAll(greeter, contacts), until(greeter, "ended", n)))
  }
  if (parts.has("resume") || parts.has("inbound")) {
    const waiter = yield* createWorkflow("Waiter", waiterDefinition, { message_debounce_seconds: 0 })
    const contacts = phones("1557")
    yield* startAll(waiter, contacts)
    yield* until(waiter, "waiting", n)
    if (parts.has("resume")) {
      // The runs of the first half of the contacts: the inbound part replies as the second half.
      const half = (yield* sql<{ id: string }>`
        SELECT e.id FROM workflow_executions e JOIN msg_contacts c ON c.id = e.contact_id
        WHERE e.workflow_id = ${waiter} AND e.status = 'waiting' AND c.wa_id = ANY(${contacts.slice(0, Math.floor(n / 2))})`)
        .map((r) => r.id)
      yield* measured("API resume -> end", half.length, Effect.andThen(
        Effect.promise(() =>
          loadApart({
            url,
            urls: half.map((id) => `${url}/platform/v1/workflow_executions/${id}/resume`),
            method: "POST",
            headers,
            body: JSON.stringify({ message: { kind: "text", data: "yes" } }),
            requests: half.length,
            connections: 16,
            durationMs: 600_000
          })
        ),
        until(waiter, "ended", half.length)
      ))
      const more = phones("1577").slice(0, traceUnits)
      if (more.length > 0) {
        yield* startAll(waiter, more)
        yield* until(waiter, "waiting", n - half.length + more.length)
        const ids = (yield* sql<{ id: string }>`
          SELECT e.id FROM workflow_executions e JOIN msg_contacts c ON c.id = e.contact_id
          WHERE e.workflow_id = ${waiter} AND e.status = 'waiting' AND c.wa_id = ANY(${more}) ORDER BY c.wa_id`).map((r) => r.id)
        yield* traced("API resume -> end", (i) =>
          Effect.andThen(
            request("POST", `/platform/v1/workflow_executions/${ids[i]}/resume`, { message: { kind: "text", data: "yes" } }),
            until(waiter, "ended", half.length + i + 1)
          ))
      }
    }
    if (parts.has("inbound")) {
      const waitingContacts = parts.has("resume") ? contacts.slice(Math.floor(n / 2)) : contacts
      // The runs the API part ended (its traced ones too).
      const done = yield* count(waiter, "ended")
      yield* measured("inbound reply -> resume -> end", waitingContacts.length, Effect.andThen(
        Effect.forEach(waitingContacts, (from) => reply(from, "yes"), { concurrency: 16, discard: true }),
        until(waiter, "ended", done + waitingContacts.length)
      ))
      const more = phones("1567").slice(0, traceUnits)
      if (more.length > 0) {
        yield* startAll(waiter, more)
        yield* until(waiter, "waiting", more.length)
        yield* traced("inbound reply -> resume -> end", (i) =>
          Effect.andThen(reply(more[i]!, "yes"), until(waiter, "ended", done + waitingContacts.length + i + 1)))
      }
    }
  }
  if (parts.has("proxy")) {
    const contacts = phones("1556")
    yield* Effect.forEach(contacts, (from) => reply(from, "hi"), { concurrency: 16, discard: true })
    yield* Effect.sleep("3 seconds")
    const send = (to: string) =>
      request("POST", `/proxy/v24.0/${pnid}/messages`, { messaging_product: "whatsapp", to, type: "text", text: { body: "hello" } })
    // The network reports each send sent, delivered and read within 3 s (batched for 50 ms): counted with the sends.
    yield* measured("proxied send, one at a time, with its status reports", n, Effect.andThen(
      Effect.forEach(contacts, send, { discard: true }),
      Effect.sleep("3500 millis")
    ))
    yield* traced("proxied send (its status reports come later)", (i) => send(contacts[i]!))
  }
  if (parts.has("steps")) {
    const chain = yield* createWorkflow("Chain", chainDefinition(50))
    let serial = 0
    yield* measured("chain of 50 set_variable through Executions.start", n, Effect.forEach(Array.from({ length: n }), () =>
      Effect.flatMap(
        executions.start(principal, chain, { phone_number: `+1559${String(serial++).padStart(7, "0")}`, phone_number_id: pnid, variables: { seed: serial } }, { ip: null, user_agent: null }),
        (answer) => engine.runSlice(answer.id)
      ).pipe(Effect.orDie), { concurrency: 16, discard: true }))
    yield* traced("chain of 50 set_variable", () =>
      Effect.flatMap(
        executions.start(principal, chain, { phone_number: `+1559${String(serial++).padStart(7, "0")}`, phone_number_id: pnid, variables: { seed: serial } }, { ip: null, user_agent: null }),
        (answer) => engine.runSlice(answer.id)
      ).pipe(Effect.orDie))
  }
}).pipe(Effect.scoped)

runScript(program)
