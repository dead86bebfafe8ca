/**
 * The messaging network's own objects, as its API answers them: typed views
 * decoded from the bytes the network sent. They are lenient on purpose: a
 * field the network adds is ignored, and every field the network may omit is
 * optional, so a new network release never turns a good answer into an error.
 * Callers who need every field (the proxy, mirrors of templates) keep the
 * answer's bytes, which travel next to these views unchanged.
 *
 * Values that are the network's own literals (`messaging_product`, the webhook
 * `object` name) are kept exactly as the network spells them.
 */
import { Schema } from "effect"

/** The `messaging_product` literal the network requires on every send and upload, and reports in its answers. */
export const MessagingProduct = "whatsapp" as const

/** The `object` name of the network's business-account webhooks. */
export const WebhookObjectName = "whatsapp_business_account" as const

/** The version segment Parley uses when the caller gives none (decisions §9). */
export const DefaultApiVersion = "v24.0"

const versionPattern = /^v\d{1,3}\.\d{1,2}$/

/** A version segment as the network spells it (`v24.0`, `v21.0`, ...); any such segment is forwarded as given. */
export const isApiVersion = (segment: string): boolean => versionPattern.test(segment)

// ---------------------------------------------------------------------------------------------
// Errors

/** `error_data` of a network error object. */
export const NetworkErrorData = Schema.Struct({
  messaging_product: Schema.optionalKey(Schema.String),
  details: Schema.optionalKey(Schema.String)
})

/** The `error` member of the network's error object (decisions §7.3). */
export const NetworkErrorDetail = Schema.Struct({
  /** `(#<code>) <title>`. */
  message: Schema.String,
  type: Schema.optionalKey(Schema.String),
  code: Schema.Number,
  error_subcode: Schema.optionalKey(Schema.Number),
  error_data: Schema.optionalKey(NetworkErrorData),
  error_user_title: Schema.optionalKey(Schema.String),
  error_user_msg: Schema.optionalKey(Schema.String),
  /** The network's trace id. */
  fbtrace_id: Schema.optionalKey(Schema.String)
})
export type NetworkErrorDetail = typeof NetworkErrorDetail.Type

/** The whole error body: `{ "error": { ... } }`. */
export const NetworkErrorBody = Schema.Struct({ error: NetworkErrorDetail })
export type NetworkErrorBody = typeof NetworkErrorBody.Type

// ---------------------------------------------------------------------------------------------
// Common answers

/** `{ "success": true }`: mark read, deletes, edits, flow metadata, subscriptions. */
export const SuccessAnswer = Schema.Struct({ success: Schema.Boolean })
export type SuccessAnswer = typeof SuccessAnswer.Type

/** `GET oauth/access_token`: the token an embedded-signup code is exchanged for. */
export const SignupToken = Schema.Struct({ access_token: Schema.String, token_type: Schema.optionalKey(Schema.String) })
export type SignupToken = typeof SignupToken.Type

/** The network's paging object on its own lists (templates, blocked users, numbers). */
export const NetworkPaging = Schema.Struct({
  cursors: Schema.optionalKey(Schema.Struct({
    before: Schema.optionalKey(Schema.String),
    after: Schema.optionalKey(Schema.String)
  })),
  next: Schema.optionalKey(Schema.String),
  previous: Schema.optionalKey(Schema.String)
})
export type NetworkPaging = typeof NetworkPaging.Type

// ---------------------------------------------------------------------------------------------
// Messages

/** One addressee of an accepted send: `wa_id` for a phone number, `user_id` for a business-scoped target. */
export const SendContact = Schema.Struct({
  input: Schema.String,
  wa_id: Schema.optionalKey(Schema.String),
  user_id: Schema.optionalKey(Schema.String)
})

/** The network's answer to an accepted message: success means accepted, not delivered. */
export const MessageAccepted = Schema.Struct({
  messaging_product: Schema.String,
  contacts: Schema.optionalKey(Schema.Array(SendContact)),
  messages: Schema.Array(Schema.Struct({
    id: Schema.String,
    /** Only on paced templates: `accepted` or `held_for_quality_assessment`. */
    message_status: Schema.optionalKey(Schema.String)
  }))
})
export type MessageAccepted = typeof MessageAccepted.Type

/**
 * What `POST /<phone_number_id>/messages` answers: a message envelope gets
 * `MessageAccepted`, a mark-read envelope (`status: "read"`) gets `{ success }`.
 */
export const SendAnswer = Schema.Union([MessageAccepted, SuccessAnswer])
export type SendAnswer = typeof SendAnswer.Type

/** The network message id of an accepted send; undefined for a mark-read answer. */
export const acceptedMessageId = (answer: SendAnswer): string | undefined =>
  "messages" in answer ? answer.messages[0]?.id : undefined

/**
 * A lenient view of a send envelope, for callers that record what they
 * forward (the proxy's outbound message). The envelope itself is forwarded as
 * bytes; this view only reads it.
 */
export const OutboundEnvelope = Schema.Struct({
  messaging_product: Schema.optionalKey(Schema.String),
  recipient_type: Schema.optionalKey(Schema.String),
  /** Phone number; wins over `recipient` when both are present. */
  to: Schema.optionalKey(Schema.String),
  /** Business-scoped user id (or its parent), used when no phone number is known. */
  recipient: Schema.optionalKey(Schema.String),
  type: Schema.optionalKey(Schema.String),
  /** `read` on a mark-read envelope. */
  status: Schema.optionalKey(Schema.String),
  message_id: Schema.optionalKey(Schema.String),
  context: Schema.optionalKey(Schema.Struct({ message_id: Schema.optionalKey(Schema.String) })),
  biz_opaque_callback_data: Schema.optionalKey(Schema.String),
  text: Schema.optionalKey(Schema.Struct({ body: Schema.String })),
  template: Schema.optionalKey(Schema.Struct({
    name: Schema.String,
    language: Schema.Struct({ code: Schema.String }),
    components: Schema.optionalKey(Schema.Array(Schema.Unknown))
  }))
})
export type OutboundEnvelope = typeof OutboundEnvelope.Type

// ---------------------------------------------------------------------------------------------
// Media

export const MediaUploaded = Schema.Struct({ id: Schema.String })
export type MediaUploaded = typeof MediaUploaded.Type

/** `POST /app/uploads`: a resumable upload session (`upload:<id>`). */
export const UploadSession = Schema.Struct({ id: Schema.String })
export type UploadSession = typeof UploadSession.Type

/** `POST /upload:<id>` with the bytes: the asset handle template header examples take. */
export const UploadedAsset = Schema.Struct({ h: Schema.String })
export type UploadedAsset = typeof UploadedAsset.Type

/** `GET /<media_id>`: `url` is the network's short-lived, bearer-only address of the bytes. */
export const MediaInfo = Schema.Struct({
  messaging_product: Schema.optionalKey(Schema.String),
  id: Schema.String,
  url: Schema.String,
  mime_type: Schema.String,
  sha256: Schema.String,
  /** A number; some network releases answer it as a string, both decode to a number. */
  file_size: Schema.Union([Schema.Number, Schema.NumberFromString])
})
export type MediaInfo = typeof MediaInfo.Type

// ---------------------------------------------------------------------------------------------
// Templates (decisions §2.19)

export const TemplateButton = Schema.Record(Schema.String, Schema.Unknown)

export const TemplateComponent = Schema.Struct({
  type: Schema.String,
  format: Schema.optionalKey(Schema.String),
  text: Schema.optionalKey(Schema.String),
  example: Schema.optionalKey(Schema.Unknown),
  buttons: Schema.optionalKey(Schema.Array(TemplateButton)),
  add_security_recommendation: Schema.optionalKey(Schema.Boolean),
  code_expiration_minutes: Schema.optionalKey(Schema.Number)
})
export type TemplateComponent = typeof TemplateComponent.Type

export const NetworkTemplate = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  language: Schema.String,
  /** `PENDING`, `APPROVED`, `REJECTED`, `PAUSED`, `DISABLED`, ... (decisions §3.6). */
  status: Schema.String,
  category: Schema.String,
  sub_category: Schema.optionalKey(Schema.String),
  parameter_format: Schema.optionalKey(Schema.String),
  components: Schema.Array(TemplateComponent),
  rejected_reason: Schema.optionalKey(Schema.String)
})
export type NetworkTemplate = typeof NetworkTemplate.Type

export const TemplatePage = Schema.Struct({
  data: Schema.Array(NetworkTemplate),
  paging: Schema.optionalKey(NetworkPaging)
})
export type TemplatePage = typeof TemplatePage.Type

/** The answer to a template creation: always `PENDING` first. */
export const TemplateCreated = Schema.Struct({
  id: Schema.String,
  status: Schema.String,
  category: Schema.String
})
export type TemplateCreated = typeof TemplateCreated.Type

// ---------------------------------------------------------------------------------------------
// Block users

export const BlockedUser = Schema.Struct({
  messaging_product: Schema.optionalKey(Schema.String),
  wa_id: Schema.optionalKey(Schema.String),
  user_id: Schema.optionalKey(Schema.String)
})

export const BlockedUsersPage = Schema.Struct({
  data: Schema.Array(BlockedUser),
  paging: Schema.optionalKey(NetworkPaging)
})
export type BlockedUsersPage = typeof BlockedUsersPage.Type

const BlockUsersResult = Schema.Struct({
  input: Schema.String,
  wa_id: Schema.optionalKey(Schema.String),
  user_id: Schema.optionalKey(Schema.String)
})

/** Block (`added_users`) or unblock (`removed_users`) answer; a partial failure is a 139100 error object instead. */
export const BlockUsersAnswer = Schema.Struct({
  messaging_product: Schema.optionalKey(Schema.String),
  block_users: Schema.Struct({
    added_users: Schema.optionalKey(Schema.Array(BlockUsersResult)),
    removed_users: Schema.optionalKey(Schema.Array(BlockUsersResult)),
    failed_users: Schema.optionalKey(Schema.Array(Schema.Struct({
      input: Schema.String,
      errors: Schema.optionalKey(Schema.Array(Schema.Unknown))
    })))
  })
})
export type BlockUsersAnswer = typeof BlockUsersAnswer.Type

// ---------------------------------------------------------------------------------------------
// Usernames

/** `GET /<phone_number_id>/username` (`username` and `status`) and `POST` (`status` only). */
export const UsernameAnswer = Schema.Struct({
  username: Schema.optionalKey(Schema.String),
  /** `approved` or `reserved`. */
  status: Schema.String
})
export type UsernameAnswer = typeof UsernameAnswer.Type

export const UsernameSuggestions = Schema.Struct({
  data: Schema.Array(Schema.Struct({ username_suggestions: Schema.Array(Schema.String) }))
})
export type UsernameSuggestions = typeof UsernameSuggestions.Type

// ---------------------------------------------------------------------------------------------
// Phone numbers and health

export const HealthEntity = Schema.Struct({
  /** `PHONE_NUMBER`, `WABA`, `BUSINESS`, `APP`. */
  entity_type: Schema.String,
  id: Schema.String,
  /** `AVAILABLE`, `LIMITED`, `BLOCKED`. */
  can_send_message: Schema.String,
  errors: Schema.optionalKey(Schema.Array(Schema.Struct({
    error_code: Schema.Number,
    error_description: Schema.String,
    possible_solution: Schema.optionalKey(Schema.String)
  })))
})

export const HealthStatus = Schema.Struct({
  can_send_message: Schema.String,
  entities: Schema.Array(HealthEntity)
})
export type HealthStatus = typeof HealthStatus.Type

/**
 * Facts about one number, as `GET /<phone_number_id>?fields=...` answers them.
 * Value sets are those of decisions §2.11 (`quality_rating` `GREEN`...,
 * `messaging_limit_tier` `TIER_10K`..., `status` `CONNECTED`...).
 */
export const PhoneNumberFacts = Schema.Struct({
  id: Schema.String,
  verified_name: Schema.optionalKey(Schema.String),
  display_phone_number: Schema.optionalKey(Schema.String),
  quality_rating: Schema.optionalKey(Schema.String),
  messaging_limit_tier: Schema.optionalKey(Schema.String),
  /** `STANDARD` (80 messages/s), `HIGH` (1,000/s) or `NOT_APPLICABLE`. */
  throughput: Schema.optionalKey(Schema.Struct({ level: Schema.String })),
  status: Schema.optionalKey(Schema.String),
  name_status: Schema.optionalKey(Schema.String),
  code_verification_status: Schema.optionalKey(Schema.String),
  platform_type: Schema.optionalKey(Schema.String),
  account_mode: Schema.optionalKey(Schema.String),
  is_official_business_account: Schema.optionalKey(Schema.Boolean),
  is_pin_enabled: Schema.optionalKey(Schema.Boolean),
  /** A coexistence number (also used in the business app). */
  is_on_biz_app: Schema.optionalKey(Schema.Boolean),
  health_status: Schema.optionalKey(HealthStatus),
  /** A display name change asked for (`POST /<phone_number_id>` with `new_display_name`), while it is not applied. */
  new_display_name: Schema.optionalKey(Schema.String),
  /** Where that change stands: `PENDING_REVIEW`, `APPROVED`, `DECLINED`, `AVAILABLE_WITHOUT_REVIEW`, `EXPIRED`, `NONE`. */
  new_name_status: Schema.optionalKey(Schema.String)
})
export type PhoneNumberFacts = typeof PhoneNumberFacts.Type

/** The fields Parley asks for when it reads a number's facts. */
export const PhoneNumberFields: ReadonlyArray<string> = [
  "id",
  "verified_name",
  "display_phone_number",
  "quality_rating",
  "messaging_limit_tier",
  "throughput",
  "status",
  "name_status",
  "code_verification_status",
  "platform_type",
  "account_mode",
  "is_official_business_account",
  "is_pin_enabled",
  "is_on_biz_app"
]

export const PhoneNumberPage = Schema.Struct({
  data: Schema.Array(PhoneNumberFacts),
  paging: Schema.optionalKey(NetworkPaging)
})
export type PhoneNumberPage = typeof PhoneNumberPage.Type

/** `GET /<phone_number_id>?fields=health_status`. */
export const HealthStatusAnswer = Schema.Struct({ id: Schema.String, health_status: HealthStatus })
export type HealthStatusAnswer = typeof HealthStatusAnswer.Type

/** `GET /<waba_id>/subscribed_apps`: the apps that receive the account's webhooks. */
export const SubscribedApps = Schema.Struct({
  data: Schema.Array(Schema.Struct({
    whatsapp_business_api_data: Schema.Struct({
      id: Schema.String,
      link: Schema.optionalKey(Schema.String),
      name: Schema.optionalKey(Schema.String)
    }),
    override_callback_uri: Schema.optionalKey(Schema.String),
    /** The webhook fields the app receives, when the network lists them. */
    subscribed_fields: Schema.optionalKey(Schema.Array(Schema.String))
  }))
})
export type SubscribedApps = typeof SubscribedApps.Type
