/**
 * Broadcasts (spec "Broadcast", decisions 2.14, 3.4, 4.9): one approved
 * template sent from one number to many recipients, with delivery counters.
 * Stored forms, the counters' meaning, and the wire forms of both surfaces.
 *
 * A recipient's stored `status` is what the sender did (`pending`, `sent`,
 * `failed`, `suppressed`); what happened after (delivered, read, a failed
 * report before delivery, a reply) is read from the recipient's message, so
 * the counters follow the status reports without a second copy to keep in step.
 */
import { Schema } from "effect"
import { nameUuid } from "../shared/Ids.ts"
import { described } from "../shared/Described.ts"

export const BroadcastStatus = Schema.Literals(["draft", "scheduled", "sending", "completed", "stopped"])
export type BroadcastStatus = typeof BroadcastStatus.Type

export const StopReason = Schema.Literals(["manual", "template_paused", "number_disconnected", "no_recipients"])
export type StopReason = typeof StopReason.Type

export const RecipientStatus = Schema.Literals(["pending", "sent", "failed", "suppressed"])
export type RecipientStatus = typeof RecipientStatus.Type

export interface BroadcastRecord {
  readonly id: string
  readonly project_id: string
  readonly name: string
  readonly status: BroadcastStatus
  readonly msg_config_id: string
  readonly msg_template_id: string
  /** The template as it was named at creation (the wire's `msg_template`), refreshed when the sender reads it. */
  readonly template: BroadcastTemplate
  readonly scheduled_at: string | null
  readonly started_at: string | null
  readonly completed_at: string | null
  readonly stopped_at: string | null
  readonly stop_reason: StopReason | null
  /** The host sending it and until when (a lease): one sender at a time across hosts; a dead host's lapses. */
  readonly lease_owner: string | null
  readonly lease_until: string | null
  readonly created_at: string
  readonly updated_at: string
}

export interface BroadcastTemplate {
  readonly id: string
  readonly name: string
  readonly language_code: string
  readonly category: string
  readonly status: string
}

export interface RecipientErrorDetails {
  readonly error_code: string
  readonly error_subcode: string | null
}

export interface RecipientRecord {
  readonly id: string
  readonly broadcast_id: string
  readonly project_id: string
  /** Digits without `+` (decisions 1.2); unique within the broadcast. */
  readonly phone_number: string
  readonly contact_id: string | null
  readonly status: RecipientStatus
  /**
   * The Parley id the recipient's message is recorded under, fixed per attempt (`recipientMessageId`): a sender
   * that finds it recorded knows the attempt was made, so a restart never sends it twice.
   */
  readonly message_id: string
  /** Attempts the network refused for throughput (130429, 131056) or could not answer: they are tried again. */
  readonly attempts: number
  /** Not tried again before this time (backoff, or the grace of a send in doubt). */
  readonly retry_at: string | null
  /** When a sender last took it into a batch: only a recipient taken before may have a recorded message. */
  readonly attempted_at: string | null
  /** Held for the recipient's quiet hours until then (guardrails); null or absent otherwise. */
  readonly held_until?: string | null | undefined
  readonly template_parameters: unknown
  readonly sent_at: string | null
  readonly failed_at: string | null
  readonly error_message: string | null
  readonly error_details: RecipientErrorDetails | null
  readonly created_at: string
  readonly updated_at: string
}

/** A recipient as read: the stored row and what its message says since. */
export interface RecipientView extends RecipientRecord {
  /** The network's message id once sent. */
  readonly network_message_id: string | null
  /** `sent` moved to `failed` by a failed report before delivery. */
  readonly effective_status: RecipientStatus
  readonly delivered_at: string | null
  readonly read_at: string | null
  readonly responded_at: string | null
}

/** The counters of decisions 2.14. */
export interface BroadcastCounts {
  readonly total: number
  readonly sent: number
  readonly failed: number
  readonly delivered: number
  readonly read: number
  readonly responded: number
  readonly pending: number
  /** Pending recipients held for their quiet hours (guardrails). */
  readonly held: number
}

export const zeroCounts: BroadcastCounts = { total: 0, sent: 0, failed: 0, delivered: 0, read: 0, responded: 0, pending: 0, held: 0 }

/** How long after its message a recipient's reply counts as a response (decisions 2.14). */
export const RESPONSE_WINDOW_MS = 24 * 60 * 60 * 1000

/** The phone number an erased recipient keeps (decisions: erasure): no digits, so it matches no contact. */
export const ANONYMISED_PHONE = "anonymised"

/** The message id a recipient's attempt is sent under. */
export const recipientMessageId = (recipientId: string, attempt: number) => nameUuid(`broadcast-recipient:${recipientId}:${attempt}`)

/** The key a recipient's send carries as `biz_opaque_callback_data`: status reports name the recipient with it. */
export const recipientSendKey = (recipientId: string) => `broadcast:${recipientId}`

/** responded ÷ sent × 100, two decimals, 0 when nothing was sent. */
export const responseRate = (c: BroadcastCounts) => (c.sent === 0 ? 0 : Math.round((c.responded / c.sent) * 10_000) / 100)

// ---- wire

export const MsgBroadcastTemplate = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  language_code: Schema.String,
  category: Schema.String,
  status: Schema.String
})

const Stats = Schema.Struct({
  total: Schema.Int,
  sent: Schema.Int,
  failed: Schema.Int,
  delivered: Schema.Int,
  read: Schema.Int,
  responded: Schema.Int,
  pending: Schema.Int,
  held: Schema.Int
})

/** The spec's words for a broadcast's fields ("Broadcast", "Broadcast status"). */
const BROADCAST_FIELDS = {
  id: "The broadcast's id (uuid)",
  name: "Its name",
  status: "`draft`, `scheduled`, `sending`, `completed` or `stopped`",
  msg_config_id: "The connected number it sends from",
  msg_template: "The approved template it sends: `id`, `name`, `language_code`, `category`, `status`",
  scheduled_at: "When it starts sending, once scheduled",
  started_at: "When sending started",
  completed_at: "When every recipient was handled; null until then",
  stopped_at: "Present once stopped",
  stop_reason: "Why it stopped, when it did",
  total_recipients: "Recipients added",
  sent_count: "Messages accepted by the network",
  failed_count: "Sends that failed",
  delivered_count: "Messages delivered",
  read_count: "Messages read",
  responded_count: "Recipients who answered",
  pending_count: "Recipients not sent to yet",
  held_count: "Pending recipients held until their quiet hours end",
  response_rate: "Percentage of recipients who answered",
  stats: "The same counters as one object: total, sent, failed, delivered, read, responded, pending, held",
  created_at: "When it was created (ISO 8601)",
  updated_at: "When it last changed (ISO 8601)"
} as const

export const MsgBroadcast = Schema.Struct(described({
  id: Schema.String,
  name: Schema.String,
  status: BroadcastStatus,
  msg_config_id: Schema.String,
  msg_template: MsgBroadcastTemplate,
  scheduled_at: Schema.NullOr(Schema.String),
  started_at: Schema.NullOr(Schema.String),
  completed_at: Schema.NullOr(Schema.String),
  stopped_at: Schema.optionalKey(Schema.String),
  stop_reason: Schema.NullOr(StopReason),
  total_recipients: Schema.Int,
  sent_count: Schema.Int,
  failed_count: Schema.Int,
  delivered_count: Schema.Int,
  read_count: Schema.Int,
  responded_count: Schema.Int,
  pending_count: Schema.Int,
  held_count: Schema.Int,
  response_rate: Schema.Finite,
  stats: Stats,
  created_at: Schema.String,
  updated_at: Schema.String
}, BROADCAST_FIELDS))
export type MsgBroadcast = typeof MsgBroadcast.Type

export const toMsgBroadcast = (b: BroadcastRecord, c: BroadcastCounts): MsgBroadcast => ({
  id: b.id,
  name: b.name,
  status: b.status,
  msg_config_id: b.msg_config_id,
  msg_template: b.template,
  scheduled_at: b.scheduled_at,
  started_at: b.started_at,
  completed_at: b.completed_at,
  ...(b.stopped_at !== null ? { stopped_at: b.stopped_at } : {}),
  stop_reason: b.stop_reason,
  total_recipients: c.total,
  sent_count: c.sent,
  failed_count: c.failed,
  delivered_count: c.delivered,
  read_count: c.read,
  responded_count: c.responded,
  pending_count: c.pending,
  held_count: c.held,
  response_rate: responseRate(c),
  stats: c,
  created_at: b.created_at,
  updated_at: b.updated_at
})

export const MsgBroadcastRecipient = Schema.Struct({
  id: Schema.String,
  phone_number: Schema.String,
  contact_id: Schema.NullOr(Schema.String),
  status: RecipientStatus,
  message_id: Schema.NullOr(Schema.String),
  sent_at: Schema.NullOr(Schema.String),
  delivered_at: Schema.NullOr(Schema.String),
  read_at: Schema.NullOr(Schema.String),
  responded_at: Schema.NullOr(Schema.String),
  failed_at: Schema.NullOr(Schema.String),
  error_message: Schema.NullOr(Schema.String),
  error_details: Schema.NullOr(Schema.Struct({ error_code: Schema.String, error_subcode: Schema.NullOr(Schema.String) })),
  template_parameters: Schema.Unknown,
  created_at: Schema.String,
  updated_at: Schema.String
})
export type MsgBroadcastRecipient = typeof MsgBroadcastRecipient.Type

export const toMsgBroadcastRecipient = (r: RecipientView): MsgBroadcastRecipient => ({
  id: r.id,
  phone_number: r.phone_number,
  contact_id: r.contact_id,
  status: r.effective_status,
  message_id: r.network_message_id,
  sent_at: r.sent_at,
  delivered_at: r.delivered_at,
  read_at: r.read_at,
  responded_at: r.responded_at,
  failed_at: r.failed_at,
  error_message: r.error_message,
  error_details: r.error_details,
  template_parameters: r.template_parameters,
  created_at: r.created_at,
  updated_at: r.updated_at
})

/** `msg_broadcast` of the create body (decisions 2.14). */
export const MsgBroadcastCreateInput = Schema.Struct({
  name: Schema.String,
  msg_config_id: Schema.optionalKey(Schema.String),
  phone_number_id: Schema.optionalKey(Schema.String),
  msg_template_id: Schema.String,
  scheduled_at: Schema.optionalKey(Schema.NullOr(Schema.String))
})
export type MsgBroadcastCreateInput = typeof MsgBroadcastCreateInput.Type

export const MsgBroadcastRecipientInput = Schema.Struct({
  phone_number: Schema.optionalKey(Schema.String),
  contact_id: Schema.optionalKey(Schema.String),
  template_parameters: Schema.optionalKey(Schema.Unknown)
})
export type MsgBroadcastRecipientInput = typeof MsgBroadcastRecipientInput.Type

export interface BroadcastFilter {
  readonly status?: BroadcastStatus | undefined
  readonly msg_config_id?: string | undefined
  readonly msg_template_id?: string | undefined
}
