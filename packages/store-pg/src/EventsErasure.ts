/** `EventsErasure` on PostgreSQL: contact erasure's deletion of project events, at most `limit` rows a statement. */
import { EventsErasure } from "@parley/core"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { conversationsOf } from "./MessagingErasure.ts"

export const layerEventsErasure = Layer.effect(
  EventsErasure,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return EventsErasure.of({
      deleteConversationEvents: Effect.fnUntraced(function*(projectId: string, contactId: string, limit: number) {
        const rows = yield* sql`
          DELETE FROM events WHERE id IN (
            SELECT id FROM events
            WHERE project_id = ${projectId} AND conversation_id IN (${conversationsOf(sql, projectId, contactId)}) LIMIT ${limit})
          RETURNING 1`
        return rows.length
      }, Effect.orDie)
    })
  })
)
