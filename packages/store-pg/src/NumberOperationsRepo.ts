/**
 * `DisplayNameRequestsRepo` and `NumberHealthRepo` on PostgreSQL (migration 0020). The partial unique index
 * `msg_display_name_requests_open_key` keeps one open request per number across hosts.
 */
import {
  type DisplayNameRequestRecord,
  DisplayNameRequestsRepo,
  DisplayNameRequestStatus,
  type HealthReport,
  type ListWindow,
  NumberHealthRepo,
  type NumberHealthState
} from "@parley/core"
import { Effect, Layer, type Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import {
  decodeFirst,
  decodeRows,
  IsoFromDate,
  jsonb,
  JsonObject,
  listNewestFirst,
  mapUnique,
  Nullable
} from "./Rows.ts"

/** A row of `msg_display_name_requests`, times as ISO text. */
const RequestRow = Schema.Struct({
  id: Schema.String,
  project_id: Schema.String,
  msg_config_id: Schema.String,
  requested_display_name: Schema.String,
  previous_display_name: Schema.String,
  status: DisplayNameRequestStatus,
  submitted_at: IsoFromDate,
  reviewed_at: Nullable(IsoFromDate),
  applied_at: Nullable(IsoFromDate),
  upstream_error_code: Schema.NullOr(Schema.Number),
  upstream_error_subcode: Schema.NullOr(Schema.Number),
  upstream_error_type: Schema.NullOr(Schema.String),
  upstream_error_message: Schema.NullOr(Schema.String),
  created_at: IsoFromDate,
  updated_at: IsoFromDate
})
const toRequests: (rows: ReadonlyArray<unknown>) => Effect.Effect<ReadonlyArray<DisplayNameRequestRecord>> =
  decodeRows("msg_display_name_requests", RequestRow)
const firstRequest = decodeFirst("msg_display_name_requests", RequestRow)

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
        const rows = yield* sql`
          UPDATE msg_display_name_requests SET status = ${r.status}, reviewed_at = ${r.reviewed_at},
            applied_at = ${r.applied_at}, upstream_error_code = ${r.upstream_error_code},
            upstream_error_subcode = ${r.upstream_error_subcode}, upstream_error_type = ${r.upstream_error_type},
            upstream_error_message = ${r.upstream_error_message}, updated_at = ${r.updated_at}
          WHERE project_id = ${r.project_id} AND id = ${r.id}
          RETURNING *`
        return yield* firstRequest(rows)
      }, Effect.orDie),

      findById: Effect.fnUntraced(function*(projectId: string, id: string) {
        return yield* firstRequest(
          yield* sql`SELECT * FROM msg_display_name_requests WHERE project_id = ${projectId} AND id = ${id}`
        )
      }, Effect.orDie),

      findOpen: Effect.fnUntraced(function*(msgConfigId: string) {
        return yield* firstRequest(
          yield* sql`
          SELECT * FROM msg_display_name_requests
          WHERE msg_config_id = ${msgConfigId} AND status NOT IN ${sql.in(FINAL)}`
        )
      }, Effect.orDie),

      list: Effect.fnUntraced(function*(projectId: string, msgConfigId: string, window: ListWindow) {
        return yield* listNewestFirst(
          sql,
          "msg_display_name_requests",
          sql`project_id = ${projectId} AND msg_config_id = ${msgConfigId}`,
          window,
          toRequests
        )
      }, Effect.orDie)
    })
  })
)

/** A row of `msg_number_health`: the cached state, its report as the run wrote it. */
const HealthRow = Schema.Struct({
  msg_config_id: Schema.String,
  credentials: Schema.String,
  report: Nullable(JsonObject<HealthReport>()),
  checked_at: Nullable(IsoFromDate),
  failures: Schema.Number,
  held_until: Nullable(IsoFromDate)
})
const firstHealth: (rows: ReadonlyArray<unknown>) => Effect.Effect<Option.Option<NumberHealthState>> = decodeFirst(
  "msg_number_health",
  HealthRow
)

export const layerNumberHealthRepo = Layer.effect(
  NumberHealthRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return NumberHealthRepo.of({
      get: Effect.fnUntraced(function*(msgConfigId: string) {
        return yield* firstHealth(yield* sql`SELECT * FROM msg_number_health WHERE msg_config_id = ${msgConfigId}`)
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
