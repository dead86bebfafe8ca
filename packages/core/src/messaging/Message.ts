/**
 * What Parley keeps of the conversations on its numbers (spec "Message
 * (proxy)", "Conversation (proxy)", decisions 2.10, 3.5): contacts,
 * conversations, messages with their `ext`, the media copies Parley keeps of
 * inbound media, the raw upstream payloads it acknowledged, and template
 * status reports. Stored forms and the wire forms the proxy answers with.
 */
import { publicUrlOf } from "../shared/PublicUrl.ts"

export type Direction = "inbound" | "outbound"
export const MESSAGE_STATUSES = ["pending", "sent", "delivered", "read", "failed"] as const
export type MessageStatus = (typeof MESSAGE_STATUSES)[number]
export type ProcessingStatus = "pending" | "completed" | "blocked"
/** Where an outbound message came from (decisions 2.10; `workflow`: sent by an execution); null on inbound messages. */
export type MessageOrigin = "api" | "workflow" | "business_app" | "history_sync" | "broadcast"
export type ConversationStatus = "active" | "ended"
export type ConversationEndReason = "manual" | "agent" | "inactivity"
/** Who sent an outbound message from an embedded inbox: its assigned user, else the embed by name (decisions 2.17). */
export interface SentBy {
  readonly type: "user" | "inbox_embed"
  readonly id: string
  readonly name: string | null
}

/** Media types: the messages whose content is a file Parley keeps a copy of. */
export const MEDIA_TYPES: ReadonlyArray<string> = ["image", "audio", "video", "document", "sticker"]

/** A contact of a project, known by phone number, business-scoped user id, or both. */
export interface ContactRecord {
  readonly id: string
  readonly project_id: string
  /** Phone number digits; null when the contact is known only by a business-scoped id. */
  readonly wa_id: string | null
  readonly business_scoped_user_id: string | null
  readonly parent_business_scoped_user_id: string | null
  readonly username: string | null
  /** Profile name the network last reported. */
  readonly profile_name: string | null
  readonly created_at: string
  readonly updated_at: string
}

export interface ConversationRecord {
  readonly id: string
  readonly project_id: string
  readonly msg_config_id: string
  readonly phone_number_id: string
  readonly contact_id: string
  /** The contact's phone number digits; null for business-scoped contacts. */
  readonly phone_number: string | null
  readonly business_scoped_user_id: string | null
  readonly parent_business_scoped_user_id: string | null
  readonly username: string | null
  readonly contact_name: string | null
  readonly status: ConversationStatus
  readonly end_reason: ConversationEndReason | null
  readonly ended_at: string | null
  readonly last_active_at: string
  /** Custom, replaced as a whole on update (decisions 2.10). */
  readonly metadata: Readonly<Record<string, unknown>> | null
  readonly assigned_user_id: string | null
  readonly messages_count: number
  /** Network id of the latest message (either direction). */
  readonly last_message_id: string | null
  readonly last_message_type: string | null
  /** Epoch seconds, as messages carry it. */
  readonly last_message_timestamp: string | null
  readonly last_message_text: string | null
  readonly last_inbound_at: string | null
  readonly last_outbound_at: string | null
  readonly created_at: string
  readonly updated_at: string
}

/** The copy of a message's media Parley keeps (`ext.media_data`, served at `ext.media_url`). */
export interface MessageMedia {
  /** Id of the stored media (`MediaRepo`). */
  readonly id: string
  readonly filename: string
  readonly content_type: string
  readonly byte_size: number
}

export interface MessageRecord {
  /** Parley's own id of the message (uuid); the network's id is `network_id`. */
  readonly id: string
  readonly project_id: string
  readonly msg_config_id: string
  readonly phone_number_id: string
  readonly conversation_id: string
  readonly contact_id: string
  /** The network's message id (`wamid...`); null for an outbound message the network has not answered yet. */
  readonly network_id: string | null
  readonly direction: Direction
  readonly type: string
  /** Epoch seconds as a string: the network's for inbound messages, the recording time for outbound ones. */
  readonly timestamp: string
  /**
   * The other members of the network's message object, as received (inbound)
   * or sent (outbound): `from`, the `<type>` object, `context`, `referral`,
   * identity fields, `errors`. Never `id`, `timestamp`, `type` or `ext`.
   */
  readonly fields: Readonly<Record<string, unknown>>
  readonly status: MessageStatus
  readonly processing_status: ProcessingStatus
  readonly origin: MessageOrigin | null
  readonly has_media: boolean
  readonly content: string | null
  readonly transcript: string | null
  readonly media: MessageMedia | null
  readonly message_type_data: Readonly<Record<string, unknown>> | null
  /** Raw network status objects in arrival order (decisions 3.5). */
  readonly statuses: ReadonlyArray<unknown>
  /** Further static `ext` keys: `flow_response`, `flow_token`, `flow_name`, `order_text`. */
  readonly ext_data: Readonly<Record<string, unknown>>
  readonly contact_name: string | null
  /** The contact's phone number digits, null for business-scoped contacts. */
  readonly phone_number: string | null
  readonly created_at: string
  readonly updated_at: string
}

/** One status report as received, kept to deduplicate by (id, status, timestamp) and to replay late. */
export interface StatusEventRecord {
  readonly phone_number_id: string
  readonly network_id: string
  readonly status: string
  readonly timestamp: string
  readonly raw: unknown
  readonly received_at: string
}

/** Stored media bytes and what describes them. */
export interface StoredMedia {
  readonly id: string
  readonly project_id: string
  readonly msg_config_id: string
  /** The network's media id it was fetched with; null for media Parley got otherwise. */
  readonly network_media_id: string | null
  readonly filename: string
  readonly content_type: string
  readonly byte_size: number
  readonly sha256: string
  readonly bytes: Uint8Array
  readonly created_at: string
}

/** A raw upstream webhook POST, acknowledged once stored here (decisions 4.11). */
export interface InboxEntry {
  readonly id: string
  /** The config whose own app posted it (per-config path), or null (the host's app). */
  readonly msg_config_id: string | null
  readonly body: Uint8Array
  /** `X-Hub-Signature-256` as received, forwarded unchanged to `webhook_destination_url`. */
  readonly signature: string
  readonly received_at: string
  /** When its `upstream.payload` domain event and forwards were written. */
  readonly fanned_out_at: string | null
  readonly processed_at: string | null
  /**
   * Who wrote the messages it carries (`windowKey` per number and sender), recorded as it arrived and cleared once it
   * is processed: the 24-hour window of a message acknowledged but not recorded yet (decisions 7.5).
   */
  readonly senders: ReadonlyArray<string>
}

/** A sender's key on a number, for the 24-hour window: its phone number, else its business-scoped id. */
export const windowKey = (phoneNumberId: string, sender: string) => `${phoneNumberId}:${sender}`

/** A `message_template_status_update` as the network reported it (the template mirror reads these later). */
export interface TemplateStatusRecord {
  readonly id: string
  readonly business_account_id: string
  readonly template_id: string
  readonly template_name: string
  readonly language: string
  /** `APPROVED`, `REJECTED`, `PAUSED`, ... */
  readonly event: string
  readonly reason: string | null
  readonly category: string | null
  readonly received_at: string
}

// ---------------------------------------------------------------------------------------------
// Filters

export interface MessageFilter {
  readonly msg_config_id?: string | undefined
  readonly conversation_id?: string | undefined
  readonly direction?: Direction | undefined
  readonly status?: MessageStatus | undefined
  /** Inclusive bounds on `created_at`. */
  readonly since?: string | undefined
  readonly until?: string | undefined
  /** The contact's phone number digits. */
  readonly phone_number?: string | undefined
  readonly type?: string | undefined
  readonly has_media?: boolean | undefined
}

export interface ConversationFilter {
  readonly msg_config_id?: string | undefined
  readonly status?: ConversationStatus | undefined
  readonly phone_number?: string | undefined
  readonly assigned_user_id?: string | undefined
  /** Only conversations nobody is assigned to. */
  readonly unassigned?: boolean | undefined
  /** Inclusive bounds on `last_active_at`. */
  readonly last_active_since?: string | undefined
  readonly last_active_until?: string | undefined
}

export interface ContactFilter {
  /** Contacts with at least one conversation on this number. */
  readonly msg_config_id?: string | undefined
  readonly wa_id?: string | undefined
}

// ---------------------------------------------------------------------------------------------
// Wire forms

/** Where the kept copy of a media is served (with `X-API-Key`): `{PARLEY_PUBLIC_URL}/platform/v1/msg/media/<id>/content`. */
export const mediaUrl = (publicUrl: string, mediaId: string): string =>
  publicUrlOf(publicUrl, `platform/v1/msg/media/${mediaId}/content`).toString()

export const toMediaData = (publicUrl: string, media: MessageMedia) => ({
  url: mediaUrl(publicUrl, media.id),
  filename: media.filename,
  content_type: media.content_type,
  byte_size: media.byte_size
})

/** Every `ext` key of a message (decisions 2.10), in the order they are written. */
export const messageExt = (publicUrl: string, m: MessageRecord): Record<string, unknown> => ({
  direction: m.direction,
  status: m.status,
  processing_status: m.processing_status,
  origin: m.origin,
  phone_number: m.phone_number,
  phone_number_id: m.phone_number_id,
  has_media: m.has_media,
  msg_conversation_id: m.conversation_id,
  contact_name: m.contact_name,
  content: m.content,
  transcript: m.transcript,
  media_url: m.media === null ? null : mediaUrl(publicUrl, m.media.id),
  media_data: m.media === null ? null : toMediaData(publicUrl, m.media),
  message_type_data: m.message_type_data,
  statuses: m.statuses,
  flow_response: m.ext_data["flow_response"] ?? null,
  flow_token: m.ext_data["flow_token"] ?? null,
  flow_name: m.ext_data["flow_name"] ?? null,
  order_text: m.ext_data["order_text"] ?? null,
  // Only messages sent from an embedded inbox say who sent them.
  ...(m.ext_data["sent_by"] !== undefined ? { sent_by: m.ext_data["sent_by"] } : {})
})

/**
 * A message as the proxy answers it: the network's fields (`id` is the
 * network id; Parley's own id until the network answered a send) and `ext`.
 */
export const toProxyMessage = (publicUrl: string, m: MessageRecord): Record<string, unknown> => ({
  id: m.network_id ?? m.id,
  timestamp: m.timestamp,
  type: m.type,
  ...m.fields,
  ext: messageExt(publicUrl, m)
})

/** The eight keys of a conversation's `ext` (spec "Conversation (proxy)"). */
export const conversationExt = (c: ConversationRecord) => ({
  contact_name: c.contact_name,
  messages_count: c.messages_count,
  last_message_id: c.last_message_id,
  last_message_type: c.last_message_type,
  last_message_timestamp: c.last_message_timestamp,
  last_message_text: c.last_message_text,
  last_inbound_at: c.last_inbound_at,
  last_outbound_at: c.last_outbound_at
})

/** A conversation as the proxy and the Platform API answer it (spec "Conversation (proxy)", decisions 2.10). */
export const toProxyConversation = (c: ConversationRecord) => ({
  id: c.id,
  phone_number: c.phone_number,
  status: c.status,
  last_active_at: c.last_active_at,
  created_at: c.created_at,
  updated_at: c.updated_at,
  msg_config_id: c.msg_config_id,
  phone_number_id: c.phone_number_id,
  metadata: c.metadata,
  business_scoped_user_id: c.business_scoped_user_id,
  parent_business_scoped_user_id: c.parent_business_scoped_user_id,
  username: c.username,
  assigned_user_id: c.assigned_user_id,
  ext: conversationExt(c)
})

export const toProxyContact = (c: ContactRecord) => ({
  id: c.id,
  wa_id: c.wa_id,
  business_scoped_user_id: c.business_scoped_user_id,
  parent_business_scoped_user_id: c.parent_business_scoped_user_id,
  username: c.username,
  profile_name: c.profile_name,
  created_at: c.created_at,
  updated_at: c.updated_at
})

/** Cursor position of messages, conversations and contacts: newest first by (created_at, id). */
export const createdCursorKeyOf = (r: { readonly created_at: string; readonly id: string }) => ({
  sortKey: r.created_at,
  id: r.id
})
