/** `InboxEmbedsRepo` on PostgreSQL (migration 0022). */
import { InboxEmbed, type InboxEmbedFilter, type InboxEmbedRecord, InboxEmbedsRepo, type ListWindow } from "@parley/core"
import { Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { embedsTable } from "./EmbedsTable.ts"
import { decodeRows, IsoFromDate, jsonb } from "./Rows.ts"

/** A row of `inbox_embeds`, decoded into the record (the answer's fields, the owner, the token hash, ISO times). */
const EmbedRow = Schema.Struct({
  ...InboxEmbed.fields,
  project_id: Schema.String,
  token_hash: Schema.String,
  expires_at: Schema.NullOr(IsoFromDate),
  last_used_at: Schema.NullOr(IsoFromDate),
  created_at: IsoFromDate,
  updated_at: IsoFromDate
})
const toEmbeds = decodeRows(EmbedRow)

export const layerInboxEmbedsRepo = Layer.effect(
  InboxEmbedsRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const table = embedsTable(sql, "inbox_embeds", toEmbeds)

    const where = (projectId: string, filter: InboxEmbedFilter) =>
      sql.and([
        sql`project_id = ${projectId}`,
        ...(filter.status !== undefined ? [sql`status = ${filter.status}`] : []),
        ...(filter.scope_type !== undefined ? [sql`scope_type = ${filter.scope_type}`] : []),
        ...(filter.scope_id !== undefined ? [sql`scope_id = ${filter.scope_id}`] : []),
        ...(filter.assigned_user_id !== undefined ? [sql`assigned_user_id = ${filter.assigned_user_id}`] : [])
      ])

    return InboxEmbedsRepo.of({
      insert: Effect.fnUntraced(function*(e: InboxEmbedRecord) {
        yield* sql`
          INSERT INTO inbox_embeds (id, project_id, name, scope_type, scope_id, scope_name, assigned_user_id, assigned_user_name,
            status, allowed_origins, default_mode, language, expires_at, last_used_at, token_hash, created_at, updated_at)
          VALUES (${e.id}, ${e.project_id}, ${e.name}, ${e.scope_type}, ${e.scope_id}, ${e.scope_name}, ${e.assigned_user_id},
            ${e.assigned_user_name}, ${e.status}, ${jsonb(e.allowed_origins)}::jsonb, ${e.default_mode}, ${e.language},
            ${e.expires_at}, ${e.last_used_at}, ${e.token_hash}, ${e.created_at}, ${e.updated_at})`
      }, Effect.orDie),
      findById: table.findById,
      findByTokenHash: table.findByTokenHash,
      list: (projectId, filter, window: ListWindow) => table.list(where(projectId, filter), window),
      update: Effect.fnUntraced(function*(e: InboxEmbedRecord) {
        const rows = yield* sql`
          UPDATE inbox_embeds SET name = ${e.name}, assigned_user_id = ${e.assigned_user_id},
            assigned_user_name = ${e.assigned_user_name}, status = ${e.status},
            allowed_origins = ${jsonb(e.allowed_origins)}::jsonb, default_mode = ${e.default_mode}, language = ${e.language},
            expires_at = ${e.expires_at}, updated_at = ${e.updated_at}
          WHERE project_id = ${e.project_id} AND id = ${e.id} RETURNING *`
        return yield* table.first(rows)
      }, Effect.orDie),
      touch: table.touch
    })
  })
)
