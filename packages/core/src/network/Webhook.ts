/**
 * The network's webhooks (decisions §4.11): the envelope it POSTs, the values
 * of its `messages`, template-status and quality changes, and the
 * `X-Hub-Signature-256` it signs them with. The simulator builds its payloads
 * from these schemas; ingestion decodes with them.
 *
 * The schemas are lenient like the network's other objects: unknown fields
 * are ignored when decoding, so keep the raw bytes when every field matters
 * (the raw payload is what ingestion stores and forwards).
 */
import { Schema } from "effect"
import { createHmac, timingSafeEqual } from "node:crypto"

/** `metadata` of a `messages` change: which business number the change is about. */
export const WebhookMetadata = Schema.Struct({
  display_phone_number: Schema.String,
  phone_number_id: Schema.String
})

/**
 * One contact of a `messages` change. `wa_id` is the phone number and may be
 * absent when the contact is known only by its business-scoped user id
 * (`user_id`, with `parent_user_id` when parent ids are enabled).
 */
export const WebhookContact = Schema.Struct({
  profile: Schema.optionalKey(Schema.Struct({
    name: Schema.optionalKey(Schema.String),
    username: Schema.optionalKey(Schema.String)
  })),
  wa_id: Schema.optionalKey(Schema.String),
  user_id: Schema.optionalKey(Schema.String),
  parent_user_id: Schema.optionalKey(Schema.String),
  identity_key_hash: Schema.optionalKey(Schema.String)
})
export type WebhookContact = typeof WebhookContact.Type

/** An error as the network reports it inside webhooks (failed statuses, unsupported messages). */
export const WebhookError = Schema.Struct({
  code: Schema.Number,
  title: Schema.String,
  message: Schema.optionalKey(Schema.String),
  error_data: Schema.optionalKey(Schema.Struct({ details: Schema.optionalKey(Schema.String) })),
  href: Schema.optionalKey(Schema.String)
})
export type WebhookError = typeof WebhookError.Type

/** A media object of an inbound message (`image`, `audio`, `video`, `document`, `sticker`). */
export const WebhookMedia = Schema.Struct({
  id: Schema.String,
  mime_type: Schema.optionalKey(Schema.String),
  sha256: Schema.optionalKey(Schema.String),
  caption: Schema.optionalKey(Schema.String),
  filename: Schema.optionalKey(Schema.String),
  voice: Schema.optionalKey(Schema.Boolean),
  animated: Schema.optionalKey(Schema.Boolean)
})

/**
 * An inbound message. `type` names the member holding its content (`text`,
 * `image`, `interactive`, `reaction`, `location`, `contacts`, `button`,
 * `order`, `system`, ...). `from` is the phone number and may be absent;
 * `from_user_id` is the business-scoped user id.
 */
export const WebhookMessage = Schema.Struct({
  from: Schema.optionalKey(Schema.String),
  from_user_id: Schema.optionalKey(Schema.String),
  from_parent_user_id: Schema.optionalKey(Schema.String),
  id: Schema.String,
  timestamp: Schema.String,
  type: Schema.String,
  context: Schema.optionalKey(Schema.Struct({
    from: Schema.optionalKey(Schema.String),
    id: Schema.optionalKey(Schema.String),
    forwarded: Schema.optionalKey(Schema.Boolean),
    frequently_forwarded: Schema.optionalKey(Schema.Boolean),
    referred_product: Schema.optionalKey(Schema.Unknown)
  })),
  referral: Schema.optionalKey(Schema.Unknown),
  text: Schema.optionalKey(Schema.Struct({ body: Schema.String })),
  image: Schema.optionalKey(WebhookMedia),
  audio: Schema.optionalKey(WebhookMedia),
  video: Schema.optionalKey(WebhookMedia),
  document: Schema.optionalKey(WebhookMedia),
  sticker: Schema.optionalKey(WebhookMedia),
  interactive: Schema.optionalKey(Schema.Unknown),
  reaction: Schema.optionalKey(Schema.Struct({
    message_id: Schema.String,
    emoji: Schema.optionalKey(Schema.String)
  })),
  location: Schema.optionalKey(Schema.Struct({
    latitude: Schema.Number,
    longitude: Schema.Number,
    name: Schema.optionalKey(Schema.String),
    address: Schema.optionalKey(Schema.String),
    url: Schema.optionalKey(Schema.String)
  })),
  contacts: Schema.optionalKey(Schema.Array(Schema.Unknown)),
  button: Schema.optionalKey(Schema.Struct({
    payload: Schema.optionalKey(Schema.String),
    text: Schema.String
  })),
  order: Schema.optionalKey(Schema.Unknown),
  system: Schema.optionalKey(Schema.Unknown),
  errors: Schema.optionalKey(Schema.Array(WebhookError))
})
export type WebhookMessage = typeof WebhookMessage.Type

/** A status update of an outbound message: `sent`, `delivered`, `read`, `failed` (with `errors`), `played`. */
export const WebhookStatus = Schema.Struct({
  id: Schema.String,
  status: Schema.String,
  timestamp: Schema.String,
  /** Phone number of the recipient; absent when the message went to a business-scoped user id only. */
  recipient_id: Schema.optionalKey(Schema.String),
  recipient_user_id: Schema.optionalKey(Schema.String),
  recipient_parent_user_id: Schema.optionalKey(Schema.String),
  recipient_type: Schema.optionalKey(Schema.String),
  biz_opaque_callback_data: Schema.optionalKey(Schema.String),
  conversation: Schema.optionalKey(Schema.Struct({
    id: Schema.String,
    expiration_timestamp: Schema.optionalKey(Schema.String),
    origin: Schema.optionalKey(Schema.Struct({ type: Schema.String }))
  })),
  pricing: Schema.optionalKey(Schema.Struct({
    billable: Schema.optionalKey(Schema.Boolean),
    pricing_model: Schema.String,
    category: Schema.String,
    type: Schema.optionalKey(Schema.String)
  })),
  errors: Schema.optionalKey(Schema.Array(WebhookError))
})
export type WebhookStatus = typeof WebhookStatus.Type

/** `value` of a change whose `field` is `messages`: inbound messages, statuses, or errors. */
export const MessagesChangeValue = Schema.Struct({
  messaging_product: Schema.String,
  metadata: WebhookMetadata,
  contacts: Schema.optionalKey(Schema.Array(WebhookContact)),
  messages: Schema.optionalKey(Schema.Array(WebhookMessage)),
  statuses: Schema.optionalKey(Schema.Array(WebhookStatus)),
  errors: Schema.optionalKey(Schema.Array(WebhookError))
})
export type MessagesChangeValue = typeof MessagesChangeValue.Type

/** `value` of a `message_template_status_update` change. */
export const TemplateStatusChangeValue = Schema.Struct({
  /** `APPROVED`, `REJECTED`, `PAUSED`, `DISABLED`, `REINSTATED`, ... */
  event: Schema.String,
  message_template_id: Schema.Number,
  message_template_name: Schema.String,
  message_template_language: Schema.String,
  reason: Schema.optionalKey(Schema.NullOr(Schema.String)),
  message_template_category: Schema.optionalKey(Schema.String)
})
export type TemplateStatusChangeValue = typeof TemplateStatusChangeValue.Type

/** `value` of a `phone_number_quality_update` change. */
export const QualityChangeValue = Schema.Struct({
  display_phone_number: Schema.String,
  /** `DOWNGRADE`, `UPGRADE`, `FLAGGED`, `UNFLAGGED`, `ONBOARDING`. */
  event: Schema.String,
  current_limit: Schema.String
})
export type QualityChangeValue = typeof QualityChangeValue.Type

/** One change of an entry: `field` names the kind, `value` is decoded per kind. */
export const WebhookChange = Schema.Struct({ field: Schema.String, value: Schema.Unknown })
export type WebhookChange = typeof WebhookChange.Type

/** One entry: `id` is the business account id. */
export const WebhookEntry = Schema.Struct({ id: Schema.String, changes: Schema.Array(WebhookChange) })
export type WebhookEntry = typeof WebhookEntry.Type

/** The body of every network webhook POST. */
export const WebhookPayload = Schema.Struct({ object: Schema.String, entry: Schema.Array(WebhookEntry) })
export type WebhookPayload = typeof WebhookPayload.Type

// ---------------------------------------------------------------------------------------------
// Signature

/** Name of the signature header (HTTP header names are case-insensitive). */
export const HubSignatureHeader = "X-Hub-Signature-256"

/** The `X-Hub-Signature-256` value of `rawBody`: `sha256=` + hex HMAC-SHA256 keyed with the app secret. */
export const hubSignature = (rawBody: Uint8Array, appSecret: string): string =>
  `sha256=${createHmac("sha256", appSecret).update(rawBody).digest("hex")}`

const signaturePattern = /^sha256=([0-9a-fA-F]{64})$/

/**
 * Whether `header` is the signature of exactly these bytes under `appSecret`.
 * False for a missing or malformed header; the comparison is constant-time.
 * Check the bytes as received: a re-serialised body has other bytes.
 */
export const verifyHubSignature = (
  rawBody: Uint8Array,
  header: string | null | undefined,
  appSecret: string
): boolean => {
  if (typeof header !== "string") return false
  const match = signaturePattern.exec(header.trim())
  if (match === null) return false
  const expected = createHmac("sha256", appSecret).update(rawBody).digest()
  return timingSafeEqual(Buffer.from(match[1]!, "hex"), expected)
}
