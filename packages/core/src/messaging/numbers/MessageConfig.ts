/**
 * Message configs (spec "Message config (connected number)", decisions 2.11,
 * 2.12): one per number a project connected, with the number's network
 * credentials and the facts the network reports about it. Stored form, the
 * wire forms (the config itself, and the phone number listing), and the write
 * bodies.
 *
 * Credentials (`access_token`, `webhook_verify_token`, `app_secret`,
 * `webhook_destination_url`) are write-only: they travel inside `Redacted`
 * from the request to the store, so a log line or a rendered record never
 * shows them, and no wire schema has a field for them.
 */
import { Redacted, Schema } from "effect"
import type { PhoneNumberFacts } from "../../network/NetworkObjects.ts"
import { described } from "../../shared/Described.ts"

export const MessageConfigKind = Schema.Literals(["production", "sandbox"])
export type MessageConfigKind = typeof MessageConfigKind.Type

/**
 * What the network reports about a number (decisions 2.11), refreshed on
 * connection, on the matching upstream webhooks and at most every 15 minutes
 * when read. Null until the network said.
 */
export interface NetworkFacts {
  readonly verified_name: string | null
  /** `GREEN`, `YELLOW`, `RED`, `UNKNOWN`. */
  readonly quality_rating: string | null
  /** `CONNECTED`, `DISCONNECTED`, `PENDING`, ... */
  readonly status: string | null
  /** The messaging-limit tier: `TIER_50` ... `TIER_UNLIMITED`, `TIER_NOT_SET`. */
  readonly throughput_tier: string | null
  /** Messages per second level (`STANDARD`, `HIGH`, `NOT_APPLICABLE`). */
  readonly throughput_level: string | null
  readonly name_status: string | null
  readonly code_verification_status: string | null
  readonly is_coexistence: boolean | null
  readonly is_official_business_account: boolean | null
  readonly is_pin_enabled: boolean | null
  readonly calls_enabled: boolean | null
}

export const emptyFacts: NetworkFacts = {
  verified_name: null,
  quality_rating: null,
  status: null,
  throughput_tier: null,
  throughput_level: null,
  name_status: null,
  code_verification_status: null,
  is_coexistence: null,
  is_official_business_account: null,
  is_pin_enabled: null,
  calls_enabled: null
}

/** The facts in a `GET /<phone_number_id>` answer; what it does not say keeps its previous value. */
export const factsFrom = (previous: NetworkFacts, answer: PhoneNumberFacts): NetworkFacts => ({
  verified_name: answer.verified_name ?? previous.verified_name,
  quality_rating: answer.quality_rating ?? previous.quality_rating,
  status: answer.status ?? previous.status,
  throughput_tier: answer.messaging_limit_tier ?? previous.throughput_tier,
  throughput_level: answer.throughput?.level ?? previous.throughput_level,
  name_status: answer.name_status ?? previous.name_status,
  code_verification_status: answer.code_verification_status ?? previous.code_verification_status,
  is_coexistence: answer.is_on_biz_app ?? previous.is_coexistence,
  is_official_business_account: answer.is_official_business_account ?? previous.is_official_business_account,
  is_pin_enabled: answer.is_pin_enabled ?? previous.is_pin_enabled,
  calls_enabled: previous.calls_enabled
})

/** The stored record of a connected number. */
export interface MessageConfigRecord {
  readonly id: string
  readonly project_id: string
  readonly name: string
  /** The name contacts see: the network's verified name, else the display number. */
  readonly display_name: string
  readonly kind: MessageConfigKind
  /** Unique across the host among live (not disconnected) configs. */
  readonly phone_number_id: string
  readonly business_account_id: string
  readonly display_phone_number: string
  /** Digits only (decisions 1.2). */
  readonly display_phone_number_normalized: string
  readonly customer_id: string | null
  readonly inbound_processing_enabled: boolean
  readonly access_token: Redacted.Redacted<string>
  readonly webhook_verify_token: Redacted.Redacted<string> | null
  readonly app_secret: Redacted.Redacted<string> | null
  readonly webhook_destination_url: Redacted.Redacted<string> | null
  readonly facts: NetworkFacts
  /** When the facts were last read from the network. */
  readonly refreshed_at: string | null
  /** Last successful upstream webhook handshake on the config's own path (decisions 4.11). */
  readonly webhook_verified_at: string | null
  /**
   * The service provisioned the number for the customer (a setup link with `provision_phone_number`, decisions
   * 2.13): disconnecting it releases the number to the network. Set when the config is created, never changed.
   */
  readonly provisioned: boolean
  /** Set when disconnected: the config stays for history, the number is free again. */
  readonly deleted_at: string | null
  readonly created_at: string
  readonly updated_at: string
}

/** Filters of `GET /msg/phone_numbers` (decisions 4.8). */
export interface MessageConfigFilter {
  readonly customer_id?: string | undefined
  readonly kind?: MessageConfigKind | undefined
}

export { phoneDigits } from "../../network/Contacts.ts"


/** The read fields of a message config (spec "Message config"); the credentials are never among them. */
/** The spec's words for a connected number's fields ("Message config"). */
const MESSAGE_CONFIG_FIELDS = {
  id: "The configuration's id (uuid)",
  name: "Its name in the project",
  display_name: "The name the network shows for the number",
  kind: "`production` (or `sandbox`)",
  phone_number_id: "The network's id of the number",
  business_account_id: "The network's id of its business account",
  display_phone_number: "The number as the network displays it",
  display_phone_number_normalized: "The number's digits",
  customer_id: "The customer it belongs to, if any",
  inbound_processing_enabled: "Whether inbound messages reach workflows",
  created_at: "When it was connected (ISO 8601)",
  updated_at: "When it last changed (ISO 8601)"
} as const

export const MessageConfig = Schema.Struct(described({
  id: Schema.String,
  name: Schema.String,
  display_name: Schema.String,
  kind: MessageConfigKind,
  phone_number_id: Schema.String,
  business_account_id: Schema.String,
  display_phone_number: Schema.String,
  display_phone_number_normalized: Schema.String,
  customer_id: Schema.NullOr(Schema.String),
  inbound_processing_enabled: Schema.Boolean,
  created_at: Schema.String,
  updated_at: Schema.String
}, MESSAGE_CONFIG_FIELDS))
export type MessageConfig = typeof MessageConfig.Type

export const toMessageConfig = (c: MessageConfigRecord): MessageConfig => ({
  id: c.id,
  name: c.name,
  display_name: c.display_name,
  kind: c.kind,
  phone_number_id: c.phone_number_id,
  business_account_id: c.business_account_id,
  display_phone_number: c.display_phone_number,
  display_phone_number_normalized: c.display_phone_number_normalized,
  customer_id: c.customer_id,
  inbound_processing_enabled: c.inbound_processing_enabled,
  created_at: c.created_at,
  updated_at: c.updated_at
})

const orUnknown = (value: string | null) => value ?? "UNKNOWN"

/** A number as `GET /msg/phone_numbers` lists it (spec "Phone number", decisions 2.11). */
export const PhoneNumber = Schema.Struct({
  id: Schema.String,
  phone_number_id: Schema.String,
  name: Schema.String,
  business_account_id: Schema.String,
  display_phone_number: Schema.String,
  quality_rating: Schema.String,
  throughput_tier: Schema.String,
  status: Schema.String,
  customer_id: Schema.NullOr(Schema.String),
  kind: MessageConfigKind,
  is_coexistence: Schema.Boolean,
  calls_enabled: Schema.Boolean,
  is_official_business_account: Schema.Boolean,
  is_pin_enabled: Schema.Boolean,
  inbound_processing_enabled: Schema.Boolean,
  verified_name: Schema.NullOr(Schema.String),
  name_status: Schema.String,
  code_verification_status: Schema.NullOr(Schema.String),
  msg_business_manager_messaging_limit: Schema.String,
  webhook_verified_at: Schema.NullOr(Schema.String),
  created_at: Schema.String,
  updated_at: Schema.String
})
export type PhoneNumber = typeof PhoneNumber.Type

export const toPhoneNumber = (c: MessageConfigRecord): PhoneNumber => ({
  id: c.id,
  phone_number_id: c.phone_number_id,
  name: c.name,
  business_account_id: c.business_account_id,
  display_phone_number: c.display_phone_number,
  quality_rating: orUnknown(c.facts.quality_rating),
  throughput_tier: c.facts.throughput_tier ?? "TIER_NOT_SET",
  status: orUnknown(c.facts.status),
  customer_id: c.customer_id,
  kind: c.kind,
  is_coexistence: c.facts.is_coexistence ?? false,
  calls_enabled: c.facts.calls_enabled ?? false,
  is_official_business_account: c.facts.is_official_business_account ?? false,
  is_pin_enabled: c.facts.is_pin_enabled ?? false,
  inbound_processing_enabled: c.inbound_processing_enabled,
  verified_name: c.facts.verified_name,
  name_status: c.facts.name_status ?? "NONE",
  code_verification_status: c.facts.code_verification_status,
  msg_business_manager_messaging_limit: c.facts.throughput_tier ?? "TIER_NOT_SET",
  webhook_verified_at: c.webhook_verified_at,
  created_at: c.created_at,
  updated_at: c.updated_at
})

/** The four members a domain event names its number with (decisions 6.7 `msg_config`). */
export const configRef = (c: MessageConfigRecord) => ({
  id: c.id,
  phone_number_id: c.phone_number_id,
  display_phone_number: c.display_phone_number,
  name: c.name
})

const NonBlank = Schema.String.check(Schema.isNonEmpty())

/** `msg_config` of a manual connection (decisions 2.12, 4.8). */
export const MessageConfigCreateInput = Schema.Struct({
  phone_number_id: NonBlank,
  business_account_id: NonBlank,
  access_token: NonBlank,
  name: Schema.optionalKey(Schema.NullOr(Schema.String)),
  kind: Schema.optionalKey(MessageConfigKind),
  webhook_verify_token: Schema.optionalKey(Schema.NullOr(Schema.String)),
  webhook_destination_url: Schema.optionalKey(Schema.NullOr(Schema.String)),
  app_secret: Schema.optionalKey(Schema.NullOr(Schema.String)),
  inbound_processing_enabled: Schema.optionalKey(Schema.Boolean)
})
export type MessageConfigCreateInput = typeof MessageConfigCreateInput.Type

/** `msg_config` of an update (spec "Message config" update body): every field optional. */
export const MessageConfigUpdateInput = Schema.Struct({
  kind: Schema.optionalKey(MessageConfigKind),
  name: Schema.optionalKey(Schema.NullOr(Schema.String)),
  phone_number_id: Schema.optionalKey(NonBlank),
  business_account_id: Schema.optionalKey(NonBlank),
  access_token: Schema.optionalKey(NonBlank),
  webhook_verify_token: Schema.optionalKey(Schema.NullOr(Schema.String)),
  webhook_destination_url: Schema.optionalKey(Schema.NullOr(Schema.String)),
  app_secret: Schema.optionalKey(Schema.NullOr(Schema.String)),
  inbound_processing_enabled: Schema.optionalKey(Schema.Boolean)
})
export type MessageConfigUpdateInput = typeof MessageConfigUpdateInput.Type

/** A write-only secret as stored: blank or null means none. */
export const secretOf = (value: string | null | undefined): Redacted.Redacted<string> | null =>
  value === undefined || value === null || value.trim() === "" ? null : Redacted.make(value)
