/**
 * `MessagingErasure` on PostgreSQL: contact erasure's deletions of messaging's rows. Each removes at most `limit`
 * rows of its table, chosen by a sub-select, so a contact with years of history is erased in many short statements
 * rather than one long one.
 */
import { MessagingErasure } from "@parley/core"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { bytesMention } from "./Mentions.ts"

/** The contact's conversations, as a sub-select: what executions' and events' erasures find their rows by. */
export const conversationsOf = (sql: SqlClient.SqlClient, projectId: string, contactId: string) =>
  sql`SELECT id FROM msg_conversations WHERE project_id = ${projectId} AND contact_id = ${contactId}`

export const layerMessagingErasure = Layer.effect(
  MessagingErasure,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return MessagingErasure.of({
      deleteUpstreamPayloads: Effect.fnUntraced(
        function*(projectId: string, contactId: string, terms: ReadonlyArray<string>, limit: number) {
          const reports = yield* sql`
            DELETE FROM msg_status_events WHERE (phone_number_id, network_id, status, timestamp) IN (
              SELECT e.phone_number_id, e.network_id, e.status, e.timestamp
              FROM msg_status_events e JOIN msg_messages m
                ON m.phone_number_id = e.phone_number_id AND m.network_id = e.network_id
              WHERE m.project_id = ${projectId} AND m.contact_id = ${contactId}
              LIMIT ${limit})
            RETURNING 1`
          if (reports.length >= limit) return reports.length
          // The inbox is not scoped by project (ingestion stores it before it knows one): a payload names its contact.
          const named = terms.filter((t) => t !== contactId)
          if (named.length === 0) return reports.length
          const payloads = yield* sql`
            DELETE FROM msg_upstream_inbox WHERE id IN (
              SELECT id FROM msg_upstream_inbox WHERE ${bytesMention(sql, "body", named)} LIMIT ${limit - reports.length})
            RETURNING 1`
          return reports.length + payloads.length
        },
        Effect.orDie
      ),
      deleteMedia: Effect.fnUntraced(function*(projectId: string, contactId: string, limit: number) {
        const rows = yield* sql`
          DELETE FROM msg_media WHERE id IN (
            SELECT m.media->>'id' FROM msg_messages m
            WHERE m.project_id = ${projectId} AND m.contact_id = ${contactId} AND m.media IS NOT NULL
              AND EXISTS (SELECT 1 FROM msg_media d WHERE d.id = m.media->>'id')
            LIMIT ${limit})
          AND project_id = ${projectId}
          RETURNING 1`
        return rows.length
      }, Effect.orDie),
      deleteMessages: Effect.fnUntraced(function*(projectId: string, contactId: string, limit: number) {
        const rows = yield* sql`
          DELETE FROM msg_messages WHERE id IN (
            SELECT id FROM msg_messages WHERE project_id = ${projectId} AND contact_id = ${contactId} LIMIT ${limit})
          RETURNING 1`
        return rows.length
      }, Effect.orDie),
      // Messages that arrived while the erasure ran go by the foreign key's cascade.
      deleteConversations: Effect.fnUntraced(function*(projectId: string, contactId: string, limit: number) {
        const rows = yield* sql`
          DELETE FROM msg_conversations WHERE id IN (SELECT id FROM (${conversationsOf(sql, projectId, contactId)}) AS c LIMIT ${limit})
          RETURNING 1`
        return rows.length
      }, Effect.orDie),
      deleteContact: Effect.fnUntraced(function*(projectId: string, contactId: string) {
        const rows = yield* sql`DELETE FROM msg_contacts WHERE project_id = ${projectId} AND id = ${contactId} RETURNING 1`
        return rows.length
      }, Effect.orDie)
    })
  })
)
