/**
 * Webhook registrations (decisions 2.9), their deliveries and attempts (6.6)
 * and delivery buffers (6.4), in stored and wire form; the event catalogue
 * with each event's scope (6.1).
 */
import { Schema } from "effect"
import { described } from "../shared/Described.ts"
import { documentedEnum } from "../shared/DocumentedEnum.ts"

/** Events of one phone number: only number-level webhooks receive them. */
export const NUMBER_EVENTS = [
  "msg.message.received",
  "msg.message.sent",
  "msg.message.delivered",
  "msg.message.read",
  "msg.message.failed",
  "msg.conversation.created",
  "msg.conversation.ended",
  "msg.conversation.inactive"
] as const

/** Events of the whole project: only project-level webhooks receive them. */
export const PROJECT_EVENTS = [
  "msg.phone_number.created",
  "msg.phone_number.deleted",
  "msg.config.created",
  "workflow.execution.handoff",
  "workflow.execution.failed",
  "project.event",
  "msg.contact.opted_out",
  "msg.contact.opted_in"
] as const

export type WebhookEventName = typeof NUMBER_EVENTS[number] | typeof PROJECT_EVENTS[number]

/** The only event that can be buffered (6.4). */
export const BUFFERABLE_EVENT = "msg.message.received"

/** Delivery log `event` of `upstream` deliveries, which carry no event name of their own. */
export const UPSTREAM_EVENT = "upstream"

export const WebhookKind = Schema.Literals(["ext", "upstream"])
export type WebhookKind = typeof WebhookKind.Type
export const RetrySchedule = Schema.Literals(["standard", "extended"])
export type RetrySchedule = typeof RetrySchedule.Type
export const PayloadVersion = Schema.Literals(["v1", "v2"])
export type PayloadVersion = typeof PayloadVersion.Type

export interface WebhookRecord {
  readonly id: string
  readonly project_id: string
  /** Null: a project-level webhook. */
  readonly phone_number_id: string | null
  readonly url: string
  readonly kind: WebhookKind
  readonly events: ReadonlyArray<string>
  readonly secret_key: string
  readonly headers: Readonly<Record<string, string>>
  readonly active: boolean
  readonly paused_at: string | null
  readonly pause_reason: "failure_rate" | null
  readonly retry_schedule: RetrySchedule
  readonly auto_pause: boolean
  readonly buffer_enabled: boolean
  readonly buffer_window_seconds: number
  readonly max_buffer_size: number
  readonly buffer_events: ReadonlyArray<string>
  readonly inactivity_minutes: number
  readonly payload_version: PayloadVersion
  /** Auto-pause counts finished deliveries from here on: set when the webhook is resumed (a fresh window). */
  readonly failure_window_from: string | null
  readonly created_at: string
  readonly updated_at: string
}

/** The `msg_webhook` read shape. */
/** The spec's words for a webhook's fields (decisions 2.9, 6). */
const WEBHOOK_FIELDS = {
  id: "The webhook's id (uuid)",
  project_id: "The owning project",
  phone_number_id: "The number whose events it receives; null for a project webhook",
  url: "Where deliveries are POSTed (https; a private address is refused)",
  kind: "`ext` (Parley's payloads) or `upstream` (the network's own, relayed)",
  events: "The events delivered (number events on a number's webhook, project events on a project's)",
  secret_key: "Signs each delivery: `X-Webhook-Signature` is the hex HMAC-SHA256 of the body under it",
  headers: "Headers sent with every delivery (at most 20; stored encrypted)",
  active: "Whether deliveries are sent",
  paused_at: "When it was paused automatically; null when not paused",
  pause_reason: "`failure_rate` when auto-pause stopped it",
  retry_schedule: "How failed deliveries are retried: `standard` or `extended`",
  auto_pause: "Pause after a high failure rate",
  buffer_enabled: "Batch `msg.message.received` per conversation",
  buffer_window_seconds: "How long a batch waits for more messages",
  max_buffer_size: "The most messages in one batch",
  buffer_events: "The events that are batched (`msg.message.received`)",
  inactivity_minutes: "Minutes without a message before `msg.conversation.inactive`",
  payload_version: "The payload shape: `v1` or `v2`",
  created_at: "When it was created (ISO 8601)",
  updated_at: "When it last changed (ISO 8601)"
} as const

export const MsgWebhook = Schema.Struct(described({
  id: Schema.String,
  project_id: Schema.String,
  phone_number_id: Schema.NullOr(Schema.String),
  url: Schema.String,
  kind: WebhookKind,
  events: Schema.Array(Schema.String),
  secret_key: Schema.String,
  headers: Schema.Record(Schema.String, Schema.String),
  active: Schema.Boolean,
  paused_at: Schema.NullOr(Schema.String),
  pause_reason: Schema.NullOr(Schema.Literal("failure_rate")),
  retry_schedule: RetrySchedule,
  auto_pause: Schema.Boolean,
  buffer_enabled: Schema.Boolean,
  buffer_window_seconds: Schema.Int,
  max_buffer_size: Schema.Int,
  buffer_events: Schema.Array(Schema.String),
  inactivity_minutes: Schema.Int,
  payload_version: PayloadVersion,
  created_at: Schema.String,
  updated_at: Schema.String
}, WEBHOOK_FIELDS))
export type MsgWebhook = typeof MsgWebhook.Type

export const toMsgWebhook = (w: WebhookRecord): MsgWebhook => ({
  id: w.id,
  project_id: w.project_id,
  phone_number_id: w.phone_number_id,
  url: w.url,
  kind: w.kind,
  events: w.events,
  secret_key: w.secret_key,
  headers: w.headers,
  active: w.active,
  paused_at: w.paused_at,
  pause_reason: w.pause_reason,
  retry_schedule: w.retry_schedule,
  auto_pause: w.auto_pause,
  buffer_enabled: w.buffer_enabled,
  buffer_window_seconds: w.buffer_window_seconds,
  max_buffer_size: w.max_buffer_size,
  buffer_events: w.buffer_events,
  inactivity_minutes: w.inactivity_minutes,
  payload_version: w.payload_version,
  created_at: w.created_at,
  updated_at: w.updated_at
})

/** Fields every write may carry; ranges and rules are checked by the service, so refusals read well. */
const settingFields = {
  url: Schema.optionalKey(Schema.String),
  events: Schema.optionalKey(Schema.Array(documentedEnum([...NUMBER_EVENTS, ...PROJECT_EVENTS]))),
  secret_key: Schema.optionalKey(Schema.String),
  headers: Schema.optionalKey(Schema.Record(Schema.String, Schema.String)),
  active: Schema.optionalKey(Schema.Boolean),
  retry_schedule: Schema.optionalKey(RetrySchedule),
  auto_pause: Schema.optionalKey(Schema.Boolean),
  buffer_enabled: Schema.optionalKey(Schema.Boolean),
  buffer_window_seconds: Schema.optionalKey(Schema.Number),
  max_buffer_size: Schema.optionalKey(Schema.Number),
  buffer_events: Schema.optionalKey(Schema.Array(documentedEnum([BUFFERABLE_EVENT]))),
  inactivity_minutes: Schema.optionalKey(Schema.Number),
  payload_version: Schema.optionalKey(PayloadVersion)
}

/** `msg_webhook` of a create: `url` and `secret_key` required; omitted `kind` is `ext`. */
export const WebhookInput = Schema.Struct({
  ...settingFields,
  kind: Schema.optionalKey(Schema.NullOr(WebhookKind)),
  url: Schema.String,
  secret_key: Schema.String,
  /** `POST /msg/webhooks` only: without it the webhook is project-level. */
  phone_number_id: Schema.optionalKey(Schema.NullOr(Schema.String))
})
export type WebhookInput = typeof WebhookInput.Type

/** `msg_webhook` of a PATCH: any field; `kind` only with its current value. */
export const WebhookUpdateInput = Schema.Struct({
  ...settingFields,
  kind: Schema.optionalKey(Schema.NullOr(WebhookKind))
})
export type WebhookUpdateInput = typeof WebhookUpdateInput.Type

/** Filters of the webhook lists; `created_*` inclusive, `url_contains` case-insensitive. */
export interface WebhookFilter {
  /** Only the webhooks of this number. */
  readonly phone_number_id?: string | undefined
  readonly url_contains?: string | undefined
  readonly kind?: WebhookKind | undefined
  readonly active?: boolean | undefined
  readonly created_after?: string | undefined
  readonly created_before?: string | undefined
}

export const webhookCursorKeyOf = (w: { readonly created_at: string; readonly id: string }) => ({
  sortKey: w.created_at,
  id: w.id
})

// ---------------------------------------------------------------------------------------------
// Deliveries

export const DeliveryStatus = Schema.Literals(["pending", "delivered", "failed"])
export type DeliveryStatus = typeof DeliveryStatus.Type

export interface WebhookDeliveryRecord {
  readonly id: string
  readonly project_id: string
  readonly webhook_id: string
  /** Where the latest attempt went (the webhook's URL when the delivery was created, until then). */
  readonly webhook_url: string
  readonly event: string
  readonly status: DeliveryStatus
  readonly response_status: number | null
  readonly delivered_at: string | null
  readonly failed_at: string | null
  readonly last_attempt_at: string | null
  readonly next_attempt_at: string | null
  readonly attempt_count: number
  /** The attempt after which a failure is final (3 standard, 8 extended; one more per manual retry). */
  readonly max_attempts: number
  readonly retry_schedule: RetrySchedule
  readonly error_message: string | null
  readonly created_at: string
  readonly msg_config_id: string | null
  readonly phone_number_id: string | null
  readonly conversation_phone_number: string | null
  /** `X-Idempotency-Key`, the same on every attempt and on manual retries. */
  readonly idempotency_key: string
  /** `X-Webhook-Payload-Version`; null on `upstream` deliveries. */
  readonly payload_version: PayloadVersion | null
  /** Items of a batch (`X-Batch-Size`); null for a single event. */
  readonly batch_size: number | null
  /** A `/test` delivery: `X-Webhook-Test`, one attempt, never counted for auto-pause. */
  readonly test: boolean
  /** What the delivery is for (domain event id, buffer id): one delivery per webhook and source. */
  readonly source_key: string | null
  /** The exact bytes sent, base64. */
  readonly body: string
}

export interface WebhookAttemptRecord {
  readonly delivery_id: string
  /** 1 for the first attempt. */
  readonly attempt: number
  readonly attempted_at: string
  readonly response_status: number | null
  readonly duration_ms: number
  readonly error: string | null
}

/** Filters of `GET /webhook_deliveries`. */
export interface DeliveryFilter {
  readonly status?: DeliveryStatus | undefined
  readonly event?: string | undefined
  readonly webhook_id?: string | undefined
  /** Failed deliveries and pending ones whose last attempt failed. */
  readonly errors_only?: boolean | undefined
  /** Created at or after (the `period` filter). */
  readonly created_after?: string | undefined
}

/** The `period` filter of the delivery log: deliveries created within the last 24 hours, 7 or 30 days. */
export const DeliveryPeriod = Schema.Literals(["24h", "7d", "30d"])
export type DeliveryPeriod = typeof DeliveryPeriod.Type

export const DELIVERY_PERIOD_MS: Readonly<Record<DeliveryPeriod, number>> = {
  "24h": 86_400_000,
  "7d": 7 * 86_400_000,
  "30d": 30 * 86_400_000
}

/** Filters of `GET /webhook_deliveries` as the caller gives them. */
export interface DeliveryQuery extends Omit<DeliveryFilter, "created_after"> {
  readonly period?: DeliveryPeriod | undefined
}

export const WebhookDelivery = Schema.Struct({
  id: Schema.String,
  event: Schema.String,
  status: DeliveryStatus,
  response_status: Schema.NullOr(Schema.Number),
  delivered_at: Schema.NullOr(Schema.String),
  failed_at: Schema.NullOr(Schema.String),
  last_attempt_at: Schema.NullOr(Schema.String),
  next_attempt_at: Schema.NullOr(Schema.String),
  attempt_count: Schema.Number,
  error_message: Schema.NullOr(Schema.String),
  created_at: Schema.String,
  webhook_id: Schema.String,
  webhook_url: Schema.String,
  msg_config_id: Schema.NullOr(Schema.String),
  phone_number_id: Schema.NullOr(Schema.String),
  conversation_phone_number: Schema.NullOr(Schema.String)
})
export type WebhookDelivery = typeof WebhookDelivery.Type

export const WebhookAttempt = Schema.Struct({
  attempted_at: Schema.String,
  response_status: Schema.NullOr(Schema.Number),
  duration_ms: Schema.Number,
  error: Schema.NullOr(Schema.String)
})

export const WebhookDeliveryDetail = Schema.Struct({
  ...WebhookDelivery.fields,
  idempotency_key: Schema.String,
  request_body: Schema.String,
  attempts: Schema.Array(WebhookAttempt)
})
export type WebhookDeliveryDetail = typeof WebhookDeliveryDetail.Type

export const toWebhookDelivery = (d: WebhookDeliveryRecord): WebhookDelivery => ({
  id: d.id,
  event: d.event,
  status: d.status,
  response_status: d.response_status,
  delivered_at: d.delivered_at,
  failed_at: d.failed_at,
  last_attempt_at: d.last_attempt_at,
  next_attempt_at: d.next_attempt_at,
  attempt_count: d.attempt_count,
  error_message: d.error_message,
  created_at: d.created_at,
  webhook_id: d.webhook_id,
  webhook_url: d.webhook_url,
  msg_config_id: d.msg_config_id,
  phone_number_id: d.phone_number_id,
  conversation_phone_number: d.conversation_phone_number
})

export const toWebhookDeliveryDetail = (
  d: WebhookDeliveryRecord,
  attempts: ReadonlyArray<WebhookAttemptRecord>
): WebhookDeliveryDetail => ({
  ...toWebhookDelivery(d),
  idempotency_key: d.idempotency_key,
  request_body: Buffer.from(d.body, "base64").toString("utf8"),
  attempts: attempts.map((a) => ({
    attempted_at: a.attempted_at,
    response_status: a.response_status,
    duration_ms: a.duration_ms,
    error: a.error
  }))
})

/** Answer of `POST /msg/webhooks/<id>/test` (decisions 4.6), with the logged delivery's id. */
export const WebhookTestResult = Schema.Struct({
  success: Schema.Boolean,
  response_status: Schema.NullOr(Schema.Number),
  error: Schema.optionalKey(Schema.String),
  delivery_id: Schema.String
})
export type WebhookTestResult = typeof WebhookTestResult.Type

export const deliveryCursorKeyOf = webhookCursorKeyOf

// ---------------------------------------------------------------------------------------------
// Buffers

/** One buffered payload and when its event happened (the domain event's time), which orders the batch. */
export interface BufferedItem {
  readonly received_at: string
  readonly payload: unknown
}

/** The open buffer of one (webhook, conversation): single payloads waiting to go as one batch. */
export interface WebhookBufferRecord {
  readonly id: string
  readonly project_id: string
  readonly webhook_id: string
  readonly conversation_key: string
  readonly event: string
  /** Single payloads, already in the webhook's payload version, in the order they were added. */
  readonly items: ReadonlyArray<BufferedItem>
  readonly payload_version: PayloadVersion
  readonly first_at: string
  /** When the batch goes: the window after the latest item, capped at 120 s after the first. */
  readonly due_at: string
  readonly msg_config_id: string | null
  readonly phone_number_id: string | null
  readonly conversation_phone_number: string | null
}
