/**
 * `WebhooksErasure` on PostgreSQL: contact erasure's deletion of the deliveries and buffers that name the contact,
 * at most `limit` rows a call.
 */
import { WebhooksErasure } from "@parley/core"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { bytesMention, jsonMentions } from "./Mentions.ts"

export const layerWebhooksErasure = Layer.effect(
  WebhooksErasure,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return WebhooksErasure.of({
      deleteDeliveries: Effect.fnUntraced(
        function*(projectId: string, phoneNumber: string | null, terms: ReadonlyArray<string>, limit: number) {
          // Attempts go by the foreign key's cascade.
          const deliveries = yield* sql`
            DELETE FROM webhook_deliveries WHERE id IN (
              SELECT id FROM webhook_deliveries
              WHERE project_id = ${projectId}
                AND (conversation_phone_number = ${phoneNumber} OR ${bytesMention(sql, "body", terms)})
              LIMIT ${limit})
            RETURNING 1`
          if (deliveries.length >= limit) return deliveries.length
          const buffers = yield* sql`
            DELETE FROM webhook_buffers WHERE id IN (
              SELECT id FROM webhook_buffers
              WHERE project_id = ${projectId}
                AND (conversation_phone_number = ${phoneNumber} OR ${jsonMentions(sql, "items", terms)})
              LIMIT ${limit - deliveries.length})
            RETURNING 1`
          return deliveries.length + buffers.length
        },
        Effect.orDie
      )
    })
  })
)
