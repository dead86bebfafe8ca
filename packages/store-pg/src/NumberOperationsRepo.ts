/**
 * `DisplayNameRequestsRepo` and `NumberHealthRepo` on PostgreSQL (migration 0020). The partial unique index
 * `msg_display_name_requests_open_key` keeps one open request per number across hosts.
 */
import {
  type DisplayNameRequestRecord,
  DisplayNameRequestsRepo,
  type DisplayNameRequestStatus,
  type HealthReport,
  type ListWindow,
  NumberHealthRepo,
  type NumberHealthState
} from "@parley/core"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { first, iso, isoOrNull, jsonb, listNewestFirst, mapUnique } from "./Rows.ts"

interface RequestRow {
  readonly id: string
  readonly project_id: string
  readonly msg_config_id: string
  readonly requested_display_name: string
  readonly previous_display_name: string
  readonly status: DisplayNameRequestStatus
  readonly submitted_at: Date
  readonly reviewed_at: Date | null
  readonly applied_at: Date | null
  readonly upstream_error_code: number | null
  readonly upstream_error_subcode: number | null
  readonly upstream_error_type: string | null
  readonly upstream_error_message: string | null
  readonly created_at: Date
  readonly updated_at: Date
}

const toRequest = (row: RequestRow): DisplayNameRequestRecord => ({
  id: row.id,
  project_id: row.project_id,
  msg_config_id: row.msg_config_id,
  requested_display_name: row.requested_display_name,
  previous_display_name: row.previous_display_name,
  status: row.status,
  submitted_at: iso(row.submitted_at),
  reviewed_at: isoOrNull(row.reviewed_at),
  applied_at: isoOrNull(row.applied_at),
  upstream_error_code: row.upstream_error_code,
  upstream_error_subcode: row.upstream_error_subcode,
  upstream_error_type: row.upstream_error_type,
  upstream_error_message: row.upstream_error_message,
  created_at: iso(row.created_at),
  updated_at: iso(row.updated_at)
})

const FINAL = ["declined", "failed", "applied", "expired", "cancelled"]

export const layerDisplayNameRequestsRepo = Layer.effect(
  DisplayNameRequestsRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return DisplayNameRequestsRepo.of({
      insert: Effect.fnUntraced(function*(r: DisplayNameRequestRecord) {
        yield* sql`
          INSERT INTO msg_display_name_requests (id, project_id, msg_config_id, requested_display_name,
            previous_display_name, status, submitted_at, reviewed_at, applied_at, upstream_error_code,
            upstream_error_subcode, upstream_error_type, upstream_error_message, created_at, updated_at)
          VALUES (${r.id}, ${r.project_id}, ${r.msg_config_id}, ${r.requested_display_name}, ${r.previous_display_name},
            ${r.status}, ${r.submitted_at}, ${r.reviewed_at}, ${r.applied_at}, ${r.upstream_error_code},
            ${r.upstream_error_subcode}, ${r.upstream_error_type}, ${r.upstream_error_message}, ${r.created_at},
            ${r.updated_at})`
      }, Effect.catchTag("SqlError", mapUnique({ msg_display_name_requests_open_key: "msg_config_id" }))),

      update: Effect.fnUntraced(function*(r: DisplayNameRequestRecord) {
        const rows = yield* sql<RequestRow>`
          UPDATE msg_display_name_requests SET status = ${r.status}, reviewed_at = ${r.reviewed_at},
            applied_at = ${r.applied_at}, upstream_error_code = ${r.upstream_error_code},
            upstream_error_subcode = ${r.upstream_error_subcode}, upstream_error_type = ${r.upstream_error_type},
            upstream_error_message = ${r.upstream_error_message}, updated_at = ${r.updated_at}
          WHERE project_id = ${r.project_id} AND id = ${r.id}
          RETURNING *`
        return first(rows, toRequest)
      }, Effect.orDie),

      findById: Effect.fnUntraced(function*(projectId: string, id: string) {
        const rows = yield* sql<RequestRow>`
          SELECT * FROM msg_display_name_requests WHERE project_id = ${projectId} AND id = ${id}`
        return first(rows, toRequest)
      }, Effect.orDie),

      findOpen: Effect.fnUntraced(function*(msgConfigId: string) {
        const rows = yield* sql<RequestRow>`
          SELECT * FROM msg_display_name_requests
          WHERE msg_config_id = ${msgConfigId} AND status NOT IN ${sql.in(FINAL)}`
        return first(rows, toRequest)
      }, Effect.orDie),

      list: Effect.fnUntraced(function*(projectId: string, msgConfigId: string, window: ListWindow) {
        return yield* listNewestFirst(
          sql,
          "msg_display_name_requests",
          sql`project_id = ${projectId} AND msg_config_id = ${msgConfigId}`,
          window,
          toRequest
        )
      }, Effect.orDie)
    })
  })
)

interface HealthRow {
  readonly msg_config_id: string
  readonly credentials: string
  readonly report: HealthReport | null
  readonly checked_at: Date | null
  readonly failures: number
  readonly held_until: Date | null
}

export const layerNumberHealthRepo = Layer.effect(
  NumberHealthRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return NumberHealthRepo.of({
      get: Effect.fnUntraced(function*(msgConfigId: string) {
        const rows = yield* sql<HealthRow>`SELECT * FROM msg_number_health WHERE msg_config_id = ${msgConfigId}`
        return first(rows, (row): NumberHealthState => ({
          msg_config_id: row.msg_config_id,
          credentials: row.credentials,
          report: row.report,
          checked_at: isoOrNull(row.checked_at),
          failures: row.failures,
          held_until: isoOrNull(row.held_until)
        }))
      }, Effect.orDie),

      put: Effect.fnUntraced(function*(s: NumberHealthState) {
        yield* sql`
          INSERT INTO msg_number_health (msg_config_id, credentials, report, checked_at, failures, held_until)
          VALUES (${s.msg_config_id}, ${s.credentials}, ${s.report === null ? null : jsonb(s.report)}::jsonb,
            ${s.checked_at}, ${s.failures}, ${s.held_until})
          ON CONFLICT (msg_config_id) DO UPDATE SET credentials = EXCLUDED.credentials, report = EXCLUDED.report,
            checked_at = EXCLUDED.checked_at, failures = EXCLUDED.failures, held_until = EXCLUDED.held_until`
      }, Effect.orDie)
    })
  })
)

export const layerNumberOperationsStorage = Layer.mergeAll(layerDisplayNameRequestsRepo, layerNumberHealthRepo)
