/**
 * `UpstreamInboxRepo` on PostgreSQL (migration 0004): raw upstream webhooks
 * until processed, and template status reports.
 */
import { type InboxEntry, type TemplateStatusRecord, UpstreamInboxRepo } from "@parley/core"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { first, iso, isoOrNull } from "./Rows.ts"

interface InboxRow {
  readonly id: string
  readonly msg_config_id: string | null
  readonly body: Uint8Array
  readonly signature: string
  readonly received_at: Date
  readonly fanned_out_at: Date | null
  readonly processed_at: Date | null
  readonly senders: ReadonlyArray<string>
}

const toEntry = (row: InboxRow): InboxEntry => ({
  id: row.id,
  msg_config_id: row.msg_config_id,
  body: row.body,
  signature: row.signature,
  received_at: iso(row.received_at),
  fanned_out_at: isoOrNull(row.fanned_out_at),
  processed_at: isoOrNull(row.processed_at),
  senders: row.senders
})

interface TemplateStatusRow {
  readonly id: string
  readonly business_account_id: string
  readonly template_id: string
  readonly template_name: string
  readonly language: string
  readonly event: string
  readonly reason: string | null
  readonly category: string | null
  readonly received_at: Date
}

const toTemplateStatus = (row: TemplateStatusRow): TemplateStatusRecord => ({
  id: row.id,
  business_account_id: row.business_account_id,
  template_id: row.template_id,
  template_name: row.template_name,
  language: row.language,
  event: row.event,
  reason: row.reason,
  category: row.category,
  received_at: iso(row.received_at)
})

export const layerUpstreamInboxRepo = Layer.effect(
  UpstreamInboxRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return UpstreamInboxRepo.of({
      insert: Effect.fnUntraced(function*(e: InboxEntry) {
        yield* sql`
          INSERT INTO msg_upstream_inbox (id, msg_config_id, body, signature, received_at, fanned_out_at, processed_at, senders)
          VALUES (${e.id}, ${e.msg_config_id}, ${e.body}, ${e.signature}, ${e.received_at}, ${e.fanned_out_at},
            ${e.processed_at}, ${e.senders}::text[])`
      }, Effect.orDie),

      find: Effect.fnUntraced(function*(id: string) {
        const rows = yield* sql<InboxRow>`SELECT * FROM msg_upstream_inbox WHERE id = ${id}`
        return first(rows, toEntry)
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
        const rows = yield* sql<InboxRow>`
          SELECT * FROM msg_upstream_inbox WHERE processed_at IS NULL AND received_at < ${receivedBefore}::timestamptz
          ORDER BY received_at, id LIMIT ${limit}`
        return rows.map(toEntry)
      }, Effect.orDie),

      prune: Effect.fnUntraced(function*(before: string) {
        const rows = yield* sql<{ readonly n: number }>`
          WITH gone AS (DELETE FROM msg_upstream_inbox WHERE processed_at < ${before}::timestamptz RETURNING 1)
          SELECT count(*)::int AS n FROM gone`
        return rows[0]?.n ?? 0
      }, Effect.orDie),

      recordTemplateStatus: Effect.fnUntraced(function*(e: TemplateStatusRecord) {
        yield* sql`
          INSERT INTO msg_template_status_events (id, business_account_id, template_id, template_name, language, event,
            reason, category, received_at)
          VALUES (${e.id}, ${e.business_account_id}, ${e.template_id}, ${e.template_name}, ${e.language}, ${e.event},
            ${e.reason}, ${e.category}, ${e.received_at})`
      }, Effect.orDie),

      listTemplateStatus: Effect.fnUntraced(function*(businessAccountId: string) {
        const rows = yield* sql<TemplateStatusRow>`
          SELECT * FROM msg_template_status_events WHERE business_account_id = ${businessAccountId}
          ORDER BY received_at, id`
        return rows.map(toTemplateStatus)
      }, Effect.orDie)
    })
  })
)
