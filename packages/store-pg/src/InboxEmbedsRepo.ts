/** `InboxEmbedsRepo` on PostgreSQL (migration 0022). */
import { type InboxEmbedFilter, type InboxEmbedRecord, InboxEmbedsRepo, type ListWindow } from "@parley/core"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { first, iso, jsonb, listNewestFirst } from "./Rows.ts"

interface EmbedRow {
  readonly id: string
  readonly project_id: string
  readonly name: string
  readonly scope_type: InboxEmbedRecord["scope_type"]
  readonly scope_id: string | null
  readonly scope_name: string | null
  readonly assigned_user_id: string | null
  readonly assigned_user_name: string | null
  readonly status: InboxEmbedRecord["status"]
  readonly allowed_origins: ReadonlyArray<string>
  readonly default_mode: InboxEmbedRecord["default_mode"]
  readonly language: InboxEmbedRecord["language"]
  readonly expires_at: Date | null
  readonly last_used_at: Date | null
  readonly token_hash: string
  readonly created_at: Date
  readonly updated_at: Date
}

const toEmbed = (row: EmbedRow): InboxEmbedRecord => ({
  id: row.id,
  project_id: row.project_id,
  name: row.name,
  scope_type: row.scope_type,
  scope_id: row.scope_id,
  scope_name: row.scope_name,
  assigned_user_id: row.assigned_user_id,
  assigned_user_name: row.assigned_user_name,
  status: row.status,
  allowed_origins: row.allowed_origins,
  default_mode: row.default_mode,
  language: row.language,
  expires_at: row.expires_at === null ? null : iso(row.expires_at),
  last_used_at: row.last_used_at === null ? null : iso(row.last_used_at),
  token_hash: row.token_hash,
  created_at: iso(row.created_at),
  updated_at: iso(row.updated_at)
})

export const layerInboxEmbedsRepo = Layer.effect(
  InboxEmbedsRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

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
      findById: Effect.fnUntraced(function*(projectId: string, id: string) {
        return first(yield* sql<EmbedRow>`SELECT * FROM inbox_embeds WHERE project_id = ${projectId} AND id = ${id}`, toEmbed)
      }, Effect.orDie),
      findByTokenHash: Effect.fnUntraced(function*(tokenHash: string) {
        return first(yield* sql<EmbedRow>`SELECT * FROM inbox_embeds WHERE token_hash = ${tokenHash}`, toEmbed)
      }, Effect.orDie),
      list: (projectId, filter, window: ListWindow) =>
        Effect.orDie(listNewestFirst(sql, "inbox_embeds", where(projectId, filter), window, toEmbed)),
      update: Effect.fnUntraced(function*(e: InboxEmbedRecord) {
        const rows = yield* sql<EmbedRow>`
          UPDATE inbox_embeds SET name = ${e.name}, assigned_user_id = ${e.assigned_user_id},
            assigned_user_name = ${e.assigned_user_name}, status = ${e.status},
            allowed_origins = ${jsonb(e.allowed_origins)}::jsonb, default_mode = ${e.default_mode}, language = ${e.language},
            expires_at = ${e.expires_at}, updated_at = ${e.updated_at}
          WHERE project_id = ${e.project_id} AND id = ${e.id} RETURNING *`
        return first(rows, toEmbed)
      }, Effect.orDie),
      touch: Effect.fnUntraced(function*(id: string, at: string) {
        yield* sql`
          UPDATE inbox_embeds SET last_used_at = ${at}::timestamptz
          WHERE id = ${id} AND (last_used_at IS NULL OR last_used_at < ${at}::timestamptz)`
      }, Effect.orDie)
    })
  })
)
