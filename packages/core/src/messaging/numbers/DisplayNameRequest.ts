/**
 * Display name requests (spec "Display name request", decisions 2.15, 3.6):
 * a number's change of the name contacts see, submitted to the network and
 * followed through its review. The stored record, its wire form and the
 * request body.
 */
import { Schema } from "effect"

export const DisplayNameRequestStatus = Schema.Literals([
  "submitted",
  "pending_review",
  "available_without_review",
  "no_review",
  "approved",
  "deferred",
  "declined",
  "expired",
  "failed",
  "applied",
  "cancelled"
])
export type DisplayNameRequestStatus = typeof DisplayNameRequestStatus.Type

/** States nothing moves out of (decisions 3.6). */
export const FINAL_DISPLAY_NAME_STATUSES: ReadonlySet<DisplayNameRequestStatus> = new Set([
  "declined",
  "failed",
  "applied",
  "expired",
  "cancelled"
])

export const isOpenDisplayNameRequest = (status: DisplayNameRequestStatus) => !FINAL_DISPLAY_NAME_STATUSES.has(status)

/** The record as stored and answered (plus its project, which is not answered). */
export interface DisplayNameRequestRecord {
  readonly id: string
  readonly project_id: string
  readonly msg_config_id: string
  readonly requested_display_name: string
  readonly previous_display_name: string
  readonly status: DisplayNameRequestStatus
  readonly submitted_at: string
  readonly reviewed_at: string | null
  readonly applied_at: string | null
  readonly upstream_error_code: number | null
  readonly upstream_error_subcode: number | null
  readonly upstream_error_type: string | null
  readonly upstream_error_message: string | null
  readonly created_at: string
  readonly updated_at: string
}

export const DisplayNameRequest = Schema.Struct({
  id: Schema.String,
  msg_config_id: Schema.String,
  requested_display_name: Schema.String,
  previous_display_name: Schema.String,
  status: DisplayNameRequestStatus,
  submitted_at: Schema.String,
  reviewed_at: Schema.NullOr(Schema.String),
  applied_at: Schema.NullOr(Schema.String),
  upstream_error_code: Schema.NullOr(Schema.Number),
  upstream_error_subcode: Schema.NullOr(Schema.Number),
  upstream_error_type: Schema.NullOr(Schema.String),
  upstream_error_message: Schema.NullOr(Schema.String),
  created_at: Schema.String,
  updated_at: Schema.String
})
export type DisplayNameRequest = typeof DisplayNameRequest.Type

export const toDisplayNameRequest = ({ project_id: _project, ...wire }: DisplayNameRequestRecord): DisplayNameRequest =>
  wire

/** `display_name_request` of `POST /msg/phone_numbers/<pnid>/display_name_requests`. */
export const DisplayNameRequestInput = Schema.Struct({
  new_display_name: Schema.String
})
export type DisplayNameRequestInput = typeof DisplayNameRequestInput.Type
