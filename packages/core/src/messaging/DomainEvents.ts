/**
 * The domain events messaging writes to the `Outbox` in the same transaction
 * as each change (see `ports/Outbox.ts`), for the webhook capability to
 * deliver. `type` is the webhook event name (decisions 6.1); `payload` is
 * `{ data, msg_config, conversation_phone_number }` where `data` is the v2
 * webhook payload of decisions 6.3 exactly, `msg_config` names the number
 * (the v1 form and delivery logs use it) and `conversation_phone_number` the
 * contact (delivery logs, decisions 6.6).
 *
 * Every accepted upstream POST also writes one `upstream.payload` entry with
 * the exact raw bytes, for `kind: upstream` webhooks.
 */
import type { MessageConfigRecord } from "./numbers/MessageConfig.ts"
import { configRef } from "./numbers/MessageConfig.ts"
import {
  type ConversationEndReason,
  type ConversationRecord,
  conversationExt,
  messageExt,
  type MessageRecord,
  type MessageStatus
} from "./Message.ts"

export const MSG_MESSAGE_RECEIVED = "msg.message.received"
export const MSG_CONVERSATION_CREATED = "msg.conversation.created"
export const MSG_CONVERSATION_ENDED = "msg.conversation.ended"
export const MSG_PHONE_NUMBER_CREATED = "msg.phone_number.created"
export const MSG_PHONE_NUMBER_DELETED = "msg.phone_number.deleted"
/** `msg.message.sent`, `.delivered`, `.read`, `.failed`: the outbound message's `ext.status` became that value. */
export const msgMessageStatusEvent = (status: Exclude<MessageStatus, "pending">) => `msg.message.${status}` as const
/** One per accepted upstream POST: `{ phone_number_ids, body_base64 }`. */
export const UPSTREAM_PAYLOAD = "upstream.payload"

/**
 * One per message stored in either direction (inbound when recorded, outbound
 * when recorded before the network answers), written with the message:
 * `ConversationActivityPayload`. Not a webhook event: webhooks arm their
 * `msg.conversation.inactive` timers from it. Kept out of
 * `MESSAGING_DOMAIN_EVENTS` (the webhook-event twins).
 */
export const MSG_CONVERSATION_ACTIVITY = "msg.conversation.activity"

/** The payload of `msg.conversation.activity`. */
export interface ConversationActivityPayload {
  readonly conversation_id: string
  /** Parley's id of the message stored. */
  readonly message_id: string
  readonly msg_config_id: string
  readonly phone_number_id: string
  /** When the message counts as activity (what moved the conversation's `last_active_at`), ISO. */
  readonly active_at: string
}

/** `msg.conversation.activity` payload. */
export const conversationActivityPayload = (message: MessageRecord, activeAt: string): ConversationActivityPayload => ({
  conversation_id: message.conversation_id,
  message_id: message.id,
  msg_config_id: message.msg_config_id,
  phone_number_id: message.phone_number_id,
  active_at: activeAt
})

/** Every domain event type messaging writes. */
export const MESSAGING_DOMAIN_EVENTS: ReadonlyArray<string> = [
  MSG_MESSAGE_RECEIVED,
  msgMessageStatusEvent("sent"),
  msgMessageStatusEvent("delivered"),
  msgMessageStatusEvent("read"),
  msgMessageStatusEvent("failed"),
  MSG_CONVERSATION_CREATED,
  MSG_CONVERSATION_ENDED,
  MSG_PHONE_NUMBER_CREATED,
  MSG_PHONE_NUMBER_DELETED,
  UPSTREAM_PAYLOAD
]

/** The payload of every `msg.*` domain event. */
export interface MsgDomainEventPayload {
  readonly data: unknown
  readonly msg_config: ReturnType<typeof configRef>
  readonly conversation_phone_number: string | null
}

/** The payload of `upstream.payload`. */
export interface UpstreamPayloadEvent {
  /** The connected numbers the POST speaks of. */
  readonly phone_number_ids: ReadonlyArray<string>
  /** The POST's body exactly as received, base64. */
  readonly body_base64: string
}

/** `conversation` of the v2 payloads (decisions 6.3); business-scoped members only when known. */
export const v2Conversation = (c: ConversationRecord) => ({
  id: c.id,
  phone_number: c.phone_number,
  contact_name: c.contact_name,
  status: c.status,
  last_active_at: c.last_active_at,
  created_at: c.created_at,
  updated_at: c.updated_at,
  metadata: c.metadata,
  phone_number_id: c.phone_number_id,
  ...(c.business_scoped_user_id !== null ? { business_scoped_user_id: c.business_scoped_user_id } : {}),
  ...(c.parent_business_scoped_user_id !== null
    ? { parent_business_scoped_user_id: c.parent_business_scoped_user_id }
    : {}),
  ...(c.username !== null ? { username: c.username } : {}),
  ext: conversationExt(c)
})

/** `message` of the v2 payloads: the network's fields and `ext` (optional `ext` keys only when set). */
export const v2Message = (publicUrl: string, m: MessageRecord) => {
  const ext = messageExt(publicUrl, m)
  const optional = ["transcript", "media_url", "media_data", "message_type_data", "statuses"]
  const kept: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(ext)) {
    if (optional.includes(key) && (value === null || (Array.isArray(value) && value.length === 0))) continue
    // Form replies and orders only when they apply.
    if (["flow_response", "flow_token", "flow_name", "order_text"].includes(key) && value === null) continue
    kept[key] = value
  }
  return { id: m.network_id ?? m.id, timestamp: m.timestamp, type: m.type, ...m.fields, ext: kept }
}

/** `msg.message.*` payload. */
export const messageEventPayload = (
  publicUrl: string,
  config: MessageConfigRecord,
  message: MessageRecord,
  conversation: ConversationRecord,
  isNewConversation: boolean
): MsgDomainEventPayload => ({
  data: {
    message: v2Message(publicUrl, message),
    conversation: v2Conversation(conversation),
    is_new_conversation: isNewConversation,
    phone_number_id: config.phone_number_id
  },
  msg_config: configRef(config),
  conversation_phone_number: conversation.phone_number
})

/** `msg.conversation.created` / `.ended` payload; `ended` adds the reason. */
export const conversationEventPayload = (
  config: MessageConfigRecord,
  conversation: ConversationRecord,
  reason?: ConversationEndReason
): MsgDomainEventPayload => ({
  data: {
    conversation: v2Conversation(conversation),
    phone_number_id: config.phone_number_id,
    ...(reason !== undefined ? { reason } : {})
  },
  msg_config: configRef(config),
  conversation_phone_number: conversation.phone_number
})

/** `msg.phone_number.created` / `.deleted` payload (decisions 6.3 "Number lifecycle"). */
export const phoneNumberEventPayload = (config: MessageConfigRecord): MsgDomainEventPayload => ({
  data: {
    phone_number_id: config.phone_number_id,
    project: { id: config.project_id },
    customer: config.customer_id === null ? null : { id: config.customer_id }
  },
  msg_config: configRef(config),
  conversation_phone_number: null
})
