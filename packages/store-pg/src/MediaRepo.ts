/**
 * `MediaRepo` on PostgreSQL (migration 0004): kept media bytes (`bytea`) and
 * the business account of each upload.
 */
import { MediaRepo, type MediaUpload, type StoredMedia } from "@parley/core"
import { Effect, Layer, type Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { Count, decodeFirst, decodeRows, IsoFromDate } from "./Rows.ts"

/** A row of `msg_media`: the bytes as kept, the bigint size as a number, ISO time. */
const MediaRow = Schema.Struct({
  id: Schema.String,
  project_id: Schema.String,
  msg_config_id: Schema.String,
  network_media_id: Schema.NullOr(Schema.String),
  filename: Schema.String,
  content_type: Schema.String,
  byte_size: Count,
  sha256: Schema.String,
  bytes: Schema.Uint8Array,
  created_at: IsoFromDate
})
const firstMedia: (rows: ReadonlyArray<unknown>) => Effect.Effect<Option.Option<StoredMedia>> = decodeFirst(
  "msg_media",
  MediaRow
)

/** A row of `msg_media_uploads`. */
const MediaUploadRow = Schema.Struct({
  network_media_id: Schema.String,
  project_id: Schema.String,
  msg_config_id: Schema.String,
  business_account_id: Schema.String,
  created_at: IsoFromDate
})
const toUploads: (rows: ReadonlyArray<unknown>) => Effect.Effect<ReadonlyArray<MediaUpload>> = decodeRows(
  "msg_media_uploads",
  MediaUploadRow
)

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
        return yield* firstMedia(yield* sql`SELECT * FROM msg_media WHERE project_id = ${projectId} AND id = ${id}`)
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
        return yield* toUploads(
          yield* sql`
          SELECT * FROM msg_media_uploads WHERE project_id = ${projectId} AND network_media_id = ANY(${networkMediaIds})`
        )
      }, Effect.orDie)
    })
  })
)
