/**
 * `MediaRepo` on PostgreSQL (migration 0004): kept media bytes (`bytea`) and
 * the business account of each upload.
 */
import { MediaRepo, type MediaUpload, type StoredMedia } from "@parley/core"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { first, iso } from "./Rows.ts"

interface MediaRow {
  readonly id: string
  readonly project_id: string
  readonly msg_config_id: string
  readonly network_media_id: string | null
  readonly filename: string
  readonly content_type: string
  /** bigint: the driver gives it as a string. */
  readonly byte_size: string | number
  readonly sha256: string
  readonly bytes: Uint8Array
  readonly created_at: Date
}

const toMedia = (row: MediaRow): StoredMedia => ({
  id: row.id,
  project_id: row.project_id,
  msg_config_id: row.msg_config_id,
  network_media_id: row.network_media_id,
  filename: row.filename,
  content_type: row.content_type,
  byte_size: Number(row.byte_size),
  sha256: row.sha256,
  bytes: row.bytes,
  created_at: iso(row.created_at)
})

interface MediaUploadRow {
  readonly network_media_id: string
  readonly project_id: string
  readonly msg_config_id: string
  readonly business_account_id: string
  readonly created_at: Date
}

export const layerMediaRepo = Layer.effect(
  MediaRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return MediaRepo.of({
      insert: Effect.fnUntraced(function*(m: StoredMedia) {
        yield* sql`
          INSERT INTO msg_media (id, project_id, msg_config_id, network_media_id, filename, content_type, byte_size, sha256,
            bytes, created_at)
          VALUES (${m.id}, ${m.project_id}, ${m.msg_config_id}, ${m.network_media_id}, ${m.filename}, ${m.content_type},
            ${m.byte_size}, ${m.sha256}, ${m.bytes}, ${m.created_at})`
      }, Effect.orDie),

      find: Effect.fnUntraced(function*(projectId: string, id: string) {
        const rows = yield* sql<MediaRow>`SELECT * FROM msg_media WHERE project_id = ${projectId} AND id = ${id}`
        return first(rows, toMedia)
      }, Effect.orDie),

      delete: Effect.fnUntraced(function*(projectId: string, id: string) {
        const rows = yield* sql`DELETE FROM msg_media WHERE project_id = ${projectId} AND id = ${id} RETURNING id`
        return rows.length > 0
      }, Effect.orDie),

      recordUpload: Effect.fnUntraced(function*(u: MediaUpload) {
        yield* sql`
          INSERT INTO msg_media_uploads (network_media_id, project_id, msg_config_id, business_account_id, created_at)
          VALUES (${u.network_media_id}, ${u.project_id}, ${u.msg_config_id}, ${u.business_account_id}, ${u.created_at})
          ON CONFLICT (project_id, network_media_id) DO UPDATE SET msg_config_id = EXCLUDED.msg_config_id,
            business_account_id = EXCLUDED.business_account_id, created_at = EXCLUDED.created_at`
      }, Effect.orDie),

      findUploads: Effect.fnUntraced(function*(projectId: string, networkMediaIds: ReadonlyArray<string>) {
        if (networkMediaIds.length === 0) return []
        const rows = yield* sql<MediaUploadRow>`
          SELECT * FROM msg_media_uploads WHERE project_id = ${projectId} AND network_media_id = ANY(${networkMediaIds})`
        return rows.map((row): MediaUpload => ({ ...row, created_at: iso(row.created_at) }))
      }, Effect.orDie)
    })
  })
)
