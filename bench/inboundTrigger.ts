/**
 * What the broadcast counters' insert trigger (`msg_messages_broadcast_insert`, migrations 0030 and 0038) costs an
 * inbound message, and what 0040 left of it. The trigger runs for every inbound message, to find the conversation's
 * broadcast messages of the day before (the reply may be a response). Seeded: `CONVERSATIONS` conversations that never
 * carried a broadcast, each with `HISTORY` messages over the last day (a conversation with a bot), `LONG` that never
 * did either with ten times as many, and `CONVERSATIONS` that got a broadcast message an hour ago. Each phase inserts
 * inbound messages into each kind through `MessagesRepo.insert` (the ingestion's statement), and the broadcast
 * message of a send (pending, no network id yet: the sender's record) into quiet conversations: first with the
 * migrations up to 0039, then the same with the trigger disabled (the floor), then after 0040, then after 0040 with
 * the trigger disabled again, and last with the trigger's function emptied (what any PL/pgSQL row trigger costs). Printed per phase and kind: the trigger's time and the statement's execution time from
 * `EXPLAIN ANALYZE` of the insert (rolled back; medians of `SAMPLES`), and the wall time per committed insert over
 * `INSERTS` inserts (mostly the commit's flush: noisy).
 *
 *   BENCH_ONLY=inboundtrigger npm run bench
 */
import { type MessageRecord, MessagesRepo } from "@parley/core"
import { PgClient } from "@effect/sql-pg"
import { EmbeddedPostgres, layerStorage, migrations } from "@parley/store-pg"
import { Context, Effect, Layer } from "effect"
import { Migrator, SqlClient, Statement } from "effect/sql"
import { performance } from "node:perf_hooks"
import { explained, median } from "./plans.ts"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"

const CONVERSATIONS = 2_000
const HISTORY = 40
const LONG = 200
const SAMPLES = 101
const INSERTS = 1_000

/** Inbound into a quiet, a long quiet, a broadcast's conversation; the broadcast's own message into a quiet one. */
const KINDS = ["inbound, quiet", "inbound, long", "inbound, broadcast", "broadcast message"] as const
type Kind = typeof KINDS[number]

export interface TriggerPhase {
  readonly phase: string
  readonly kind: Kind
  /** Median ms of the insert trigger (absent when disabled) and of the whole statement, from EXPLAIN ANALYZE. */
  readonly triggerMs: number
  readonly executionMs: number
  /** µs of wall time per committed insert. */
  readonly insertUs: number
}

export const benchInboundTrigger = Effect.gen(function*() {
  const dataDir = yield* Effect.acquireRelease(
    Effect.sync(() => Fs.mkdtempSync(Path.join(Os.tmpdir(), "parley-bench-trigger-"))),
    (dir) => Effect.sync(() => Fs.rmSync(dir, { recursive: true, force: true }))
  )
  const pg = yield* EmbeddedPostgres.start({ dataDir, throwaway: true })
  const client = yield* Layer.build(PgClient.layer({ url: pg.url, maxConnections: 1 })).pipe(Effect.orDie)
  const sql = Context.get(client, SqlClient.SqlClient)
  const run = (statement: string) => Effect.orDie(sql.unsafe(statement))
  const migrateUpTo = (last: number) =>
    Migrator.make({})({ loader: Effect.map(migrations, (all) => all.filter(([id]) => id <= last)), table: "parley_migrations" })
      .pipe(Effect.provideContext(client), Effect.orDie)
  yield* migrateUpTo(39)
  const context = yield* Layer.build(layerStorage.pipe(Layer.provide(Layer.succeedContext(client))))
  const messages = Context.get(context, MessagesRepo)

  yield* run(`INSERT INTO projects (id, name, disabled, created_at, updated_at) VALUES ('prj', 'Trigger', false, now(), now())`)
  yield* run(`
    INSERT INTO msg_configs (id, project_id, name, display_name, kind, phone_number_id, business_account_id,
      display_phone_number, display_phone_number_normalized, inbound_processing_enabled, access_token, facts,
      created_at, updated_at)
    VALUES ('cfg', 'prj', 'Line', 'Line', 'production', 'pn', 'waba', '+1 555-010-0001', '15550100001', true, 'x', '{}',
      now(), now())`)
  // Conversations 0 .. n-1 quiet, n .. 2n-1 with a broadcast message an hour ago, 2n .. 2n+LONG-1 long and quiet.
  const all = 2 * CONVERSATIONS + LONG
  yield* run(`
    INSERT INTO msg_contacts (id, project_id, wa_id, created_at, updated_at)
    SELECT 'ct' || i, 'prj', '1555' || i, now(), now() FROM generate_series(0, ${all - 1}) i`)
  yield* run(`
    INSERT INTO msg_conversations (id, project_id, msg_config_id, phone_number_id, contact_id, phone_number, status,
      last_active_at, messages_count, created_at, updated_at)
    SELECT 'cv' || i, 'prj', 'cfg', 'pn', 'ct' || i, '1555' || i, 'active', now(), ${HISTORY}, now(), now()
    FROM generate_series(0, ${all - 1}) i`)
  const messageRows = (where: string) => `
    INSERT INTO msg_messages (id, project_id, msg_config_id, phone_number_id, conversation_id, contact_id, network_id,
      direction, type, timestamp, fields, status, processing_status, origin, has_media, content, statuses, ext_data,
      created_at, updated_at)
    ${where}`
  yield* run(messageRows(`
    SELECT 'm' || c || '.' || k, 'prj', 'cfg', 'pn', 'cv' || c, 'ct' || c, 'wamid.' || c || '.' || k,
      CASE WHEN k % 2 = 0 THEN 'inbound' ELSE 'outbound' END, 'text', '0', '{}', 'delivered', 'completed',
      CASE WHEN k % 2 = 0 THEN NULL ELSE 'workflow' END, false, 'hi', '[]', '{}',
      now() - interval '23 hours' + k * (interval '20 hours' / ${HISTORY}), now()
    FROM generate_series(0, ${2 * CONVERSATIONS - 1}) c, generate_series(0, ${HISTORY - 1}) k`))
  yield* run(messageRows(`
    SELECT 'm' || c || '.' || k, 'prj', 'cfg', 'pn', 'cv' || c, 'ct' || c, 'wamid.' || c || '.' || k,
      CASE WHEN k % 2 = 0 THEN 'inbound' ELSE 'outbound' END, 'text', '0', '{}', 'delivered', 'completed',
      CASE WHEN k % 2 = 0 THEN NULL ELSE 'workflow' END, false, 'hi', '[]', '{}',
      now() - interval '23 hours' + k * (interval '20 hours' / ${10 * HISTORY}), now()
    FROM generate_series(${2 * CONVERSATIONS}, ${all - 1}) c, generate_series(0, ${10 * HISTORY - 1}) k`))
  yield* run(messageRows(`
    SELECT 'b' || c, 'prj', 'cfg', 'pn', 'cv' || c, 'ct' || c, 'wamid.b' || c, 'outbound', 'template', '0', '{}', 'sent',
      'completed', 'broadcast', false, NULL, '[]', '{}', now() - interval '1 hour', now()
    FROM generate_series(${CONVERSATIONS}, ${2 * CONVERSATIONS - 1}) c`))
  yield* run(`VACUUM ANALYZE`)

  let n = 0
  const message = (kind: Kind, i: number): MessageRecord => {
    const conversation = kind === "inbound, long"
      ? 2 * CONVERSATIONS + i % LONG
      : (kind === "inbound, broadcast" ? CONVERSATIONS : 0) + (i * 7919) % CONVERSATIONS
    const id = `in${++n}`
    const broadcast = kind === "broadcast message"
    const at = new Date().toISOString()
    return {
      id,
      project_id: "prj",
      msg_config_id: "cfg",
      phone_number_id: "pn",
      conversation_id: `cv${conversation}`,
      contact_id: `ct${conversation}`,
      network_id: broadcast ? null : `wamid.${id}`,
      direction: broadcast ? "outbound" : "inbound",
      type: "text",
      timestamp: String(Math.floor(Date.now() / 1000)),
      fields: { text: { body: "hi" } },
      status: broadcast ? "pending" : "delivered",
      processing_status: "pending",
      origin: broadcast ? "broadcast" : null,
      has_media: false,
      content: "hi",
      transcript: null,
      media: null,
      message_type_data: null,
      statuses: [],
      ext_data: {},
      contact_name: null,
      phone_number: `1555${conversation}`,
      created_at: at,
      updated_at: at
    }
  }
  /** The statement `MessagesRepo.insert` sends for `message`, as sent. */
  const statementOf = (message: MessageRecord) =>
    Effect.gen(function*() {
      let compiled: readonly [string, ReadonlyArray<unknown>] | undefined
      yield* sql.withTransaction(Effect.andThen(
        messages.insert(message).pipe(Effect.provideService(Statement.CurrentTransformer, (statement) =>
          Effect.sync(() => {
            compiled = statement.compile()
            return statement
          }))),
        Effect.fail("rolled back" as const)
      )).pipe(Effect.ignore)
      return compiled!
    })

  const phases: Array<TriggerPhase> = []
  const measure = (phase: string) =>
    Effect.gen(function*() {
      for (const kind of KINDS) {
        const samples: Array<{ trigger: number; execution: number }> = []
        for (let i = 0; i < SAMPLES; i++) {
          const [text, params] = yield* statementOf(message(kind, i))
          const lines = yield* explained(sql, text, params)
          const trigger = lines.find((l) => l.includes("Trigger msg_messages_broadcast_insert"))
          samples.push({
            trigger: trigger === undefined ? 0 : Number(/time=([\d.]+)/.exec(trigger)?.[1] ?? NaN),
            execution: Number(/([\d.]+) ms/.exec(lines.find((l) => l.startsWith("Execution Time")) ?? "")?.[1] ?? NaN)
          })
        }
        const start = performance.now()
        for (let i = 0; i < INSERTS; i++) yield* messages.insert(message(kind, i))
        phases.push({
          phase,
          kind,
          triggerMs: median(samples.map((s) => s.trigger)),
          executionMs: median(samples.map((s) => s.execution)),
          insertUs: (performance.now() - start) * 1000 / INSERTS
        })
      }
    })
  const without = (phase: string) =>
    Effect.gen(function*() {
      yield* run(`ALTER TABLE msg_messages DISABLE TRIGGER msg_messages_broadcast_insert`)
      yield* measure(phase)
      yield* run(`ALTER TABLE msg_messages ENABLE TRIGGER msg_messages_broadcast_insert`)
    })

  yield* measure("up to 0039")
  yield* without("no trigger (0039)")
  yield* migrateUpTo(40)
  yield* measure("0040")
  yield* without("no trigger (0040)")
  // What any PL/pgSQL row trigger costs, for scale: the function made to return at once (the database is thrown away).
  yield* run(`CREATE OR REPLACE FUNCTION msg_broadcast_message_changed() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$`)
  yield* measure("empty trigger")
  return phases
}).pipe(Effect.scoped)

export const formatInboundTrigger = (phases: ReadonlyArray<TriggerPhase>): string =>
  [
    `Message inserts and the broadcast counters' insert trigger (conversations with ${HISTORY} messages in the last day, long ones ${
      10 * HISTORY
    }; medians of ${SAMPLES} EXPLAIN ANALYZE, then ${INSERTS} committed inserts)`,
    `  ${"phase".padEnd(20)} ${"insert".padEnd(20)} ${"trigger ms".padStart(10)} ${"statement ms".padStart(12)} ${"µs/insert".padStart(10)}`,
    ...phases.map((p) =>
      `  ${p.phase.padEnd(20)} ${p.kind.padEnd(20)} ${p.triggerMs.toFixed(3).padStart(10)} ${p.executionMs.toFixed(3).padStart(12)} ${
        p.insertUs.toFixed(0).padStart(10)
      }`
    )
  ].join("\n") + "\n"
