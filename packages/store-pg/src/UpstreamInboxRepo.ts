/**
 * `UpstreamInboxRepo` on PostgreSQL (migration 0004): raw upstream webhooks
 * until processed, and template status reports.
 */
import { type InboxEntry, type TemplateStatusRecord, UpstreamInboxRepo } from "@parley/core"
import { Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { Count, decodeFirst, decodeRows, IsoFromDate, Nullable } from "./Rows.ts"
import { deferred } from "./Transactor.ts"

/** A row of `msg_upstream_inbox`: the raw body as the network sent it, times as ISO text. */
const InboxRow = Schema.Struct({
  id: Schema.String,
  msg_config_id: Schema.NullOr(Schema.String),
  body: Schema.Uint8Array,
  signature: Schema.String,
  received_at: IsoFromDate,
  fanned_out_at: Nullable(IsoFromDate),
  processed_at: Nullable(IsoFromDate),
  senders: Schema.Array(Schema.String)
})
const toEntries: (rows: ReadonlyArray<unknown>) => Effect.Effect<ReadonlyArray<InboxEntry>> = decodeRows(
  "msg_upstream_inbox",
  InboxRow
)
const firstEntry = decodeFirst("msg_upstream_inbox", InboxRow)
const decodePruned = decodeRows("msg_upstream_inbox prune", Schema.Struct({ n: Count }))

/** A row of `msg_template_status_events`. */
const TemplateStatusRow = Schema.Struct({
  id: Schema.String,
  business_account_id: Schema.String,
  template_id: Schema.String,
  template_name: Schema.String,
  language: Schema.String,
  event: Schema.String,
  reason: Schema.NullOr(Schema.String),
  category: Schema.NullOr(Schema.String),
  received_at: IsoFromDate
})
const toTemplateStatuses: (rows: ReadonlyArray<unknown>) => Effect.Effect<ReadonlyArray<TemplateStatusRecord>> =
  decodeRows("msg_template_status_events", TemplateStatusRow)

export const layerUpstreamInboxRepo = Layer.effect(
  UpstreamInboxRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const later = deferred(sql)
    return UpstreamInboxRepo.of({
      // A fresh id: in the transaction that records an inline POST, it goes out with the contact's lock and look (its
      // failure fails that transaction, so the POST is not acknowledged); alone, it runs at once.
      insert: Effect.fnUntraced(function*(e: InboxEntry) {
        yield* later(sql`
          INSERT INTO msg_upstream_inbox (id, msg_config_id, body, signature, received_at, fanned_out_at, processed_at, senders)
          VALUES (${e.id}, ${e.msg_config_id}, ${e.body}, ${e.signature}, ${e.received_at}, ${e.fanned_out_at},
            ${e.processed_at}, ${e.senders}::text[])`)
      }, Effect.orDie),

      find: Effect.fnUntraced(function*(id: string) {
        return yield* firstEntry(yield* sql`SELECT * FROM msg_upstream_inbox WHERE id = ${id}`)
      }, Effect.orDie),

      markFannedOut: Effect.fnUntraced(function*(id: string, at: string) {
        yield* sql`UPDATE msg_upstream_inbox SET fanned_out_at = ${at} WHERE id = ${id}`
      }, Effect.orDie),

      markProcessed: Effect.fnUntraced(function*(id: string, at: string) {
        yield* sql`UPDATE msg_upstream_inbox SET processed_at = ${at}, senders = '{}' WHERE id = ${id}`
      }, Effect.orDie),

      hasUnprocessedFrom: Effect.fnUntraced(function*(senders: ReadonlyArray<string>) {
        if (senders.length === 0) return false
        // The partial index of unprocessed entries (0028): a few rows, whatever the inbox holds.
        const rows = yield* sql<{ readonly found: boolean }>`
          SELECT EXISTS (SELECT 1 FROM msg_upstream_inbox WHERE processed_at IS NULL AND senders && ${senders}::text[]) AS found`
        return rows[0]?.found === true
      }, Effect.orDie),

      listUnprocessed: Effect.fnUntraced(function*(receivedBefore: string, limit: number) {
        return yield* toEntries(
          yield* sql`
          SELECT * FROM msg_upstream_inbox WHERE processed_at IS NULL AND received_at < ${receivedBefore}::timestamptz
          ORDER BY received_at, id LIMIT ${limit}`
        )
      }, Effect.orDie),

      prune: Effect.fnUntraced(function*(before: string) {
        const rows = yield* sql`
          WITH gone AS (DELETE FROM msg_upstream_inbox WHERE processed_at < ${before}::timestamptz RETURNING 1)
          SELECT count(*)::int AS n FROM gone`
        return (yield* decodePruned(rows))[0]?.n ?? 0
      }, Effect.orDie),

      recordTemplateStatus: Effect.fnUntraced(function*(e: TemplateStatusRecord) {
        yield* sql`
          INSERT INTO msg_template_status_events (id, business_account_id, template_id, template_name, language, event,
            reason, category, received_at)
          VALUES (${e.id}, ${e.business_account_id}, ${e.template_id}, ${e.template_name}, ${e.language}, ${e.event},
            ${e.reason}, ${e.category}, ${e.received_at})`
      }, Effect.orDie),

      listTemplateStatus: Effect.fnUntraced(function*(businessAccountId: string) {
        return yield* toTemplateStatuses(
          yield* sql`
          SELECT * FROM msg_template_status_events WHERE business_account_id = ${businessAccountId}
          ORDER BY received_at, id`
        )
      }, Effect.orDie)
    })
  })
)
