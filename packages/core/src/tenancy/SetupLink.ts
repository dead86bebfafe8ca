/**
 * Setup links (spec "Setup link", decisions 2.13, 3.6): an address a project
 * sends its customer to, where the customer connects a number through the
 * network's embedded signup. Stored form, wire form and write bodies.
 *
 * The link's token is stored only as its SHA-256: the token (and the `url`
 * that embeds it) is answered once, by the create call.
 */
import { Schema } from "effect"
import { createHash } from "node:crypto"
import { described } from "../shared/Described.ts"
import { documentedEnum } from "../shared/DocumentedEnum.ts"

/** 30 days (decisions 8.4). */
export const SETUP_LINK_VALIDITY_MS = 30 * 24 * 60 * 60 * 1000

export const SetupLinkStatus = Schema.Literals(["active", "used", "expired", "revoked"])
export type SetupLinkStatus = typeof SetupLinkStatus.Type

export const MsgSetupStatus = Schema.Literals(["pending", "processing", "completed", "failed"])
export type MsgSetupStatus = typeof MsgSetupStatus.Type

export const CONNECTION_TYPES = ["coexistence", "dedicated"] as const
export type ConnectionType = typeof CONNECTION_TYPES[number]

export const SETUP_LINK_LANGUAGES = ["en", "es", "pt", "hi", "id", "ar"] as const
export type SetupLinkLanguage = typeof SETUP_LINK_LANGUAGES[number]

export const BILLING_MODES = ["customer_managed", "partner_managed"] as const
export type BillingMode = typeof BILLING_MODES[number]

/** The colours a link's page can be themed with (spec "Setup link" `theme_config`). */
export const THEME_COLORS = [
  "primary_color",
  "primary_foreground_color",
  "background_color",
  "text_color",
  "muted_text_color",
  "card_color",
  "muted_color",
  "border_color",
  "secondary_color",
  "secondary_foreground_color",
  "destructive_color",
  "destructive_foreground_color"
] as const
export type ThemeColor = typeof THEME_COLORS[number]
export type ThemeConfig = Partial<Record<ThemeColor, string>>

/** `#RRGGBB` only: a colour that passes this cannot carry anything else into a style sheet. */
export const isHexColor = (value: unknown): value is string => typeof value === "string" && /^#[0-9A-Fa-f]{6}$/.test(value)

/** Why an onboarding failed (decisions 2.13): the `error_code` of the failure redirect. */
export const SETUP_ERROR_CODES = [
  "upstream_auth_failed",
  "phone_verification_failed",
  "waba_limit_reached",
  "token_exchange_failed",
  "link_expired",
  "already_used"
] as const
export type SetupErrorCode = typeof SETUP_ERROR_CODES[number]

export interface SetupLinkRecord {
  readonly id: string
  readonly project_id: string
  readonly customer_id: string
  /** Hex SHA-256 of the token in the link's `url`. */
  readonly token_hash: string
  /** As stored: `expired` is written when a newer link replaces an expired one; `effectiveStatus` reads the clock. */
  readonly status: SetupLinkStatus
  readonly msg_setup_status: MsgSetupStatus
  /** Why the last attempt failed; null otherwise. */
  readonly error_code: SetupErrorCode | null
  readonly expires_at: string
  readonly success_redirect_url: string | null
  readonly failure_redirect_url: string | null
  readonly allowed_connection_types: ReadonlyArray<ConnectionType>
  readonly theme_config: ThemeConfig
  readonly language: SetupLinkLanguage | null
  readonly provision_phone_number: boolean
  readonly phone_number_country_isos: ReadonlyArray<string>
  readonly upstream_billing_mode: BillingMode
  /** Digits of the production number whose credentials the link refreshes; null for a new connection. */
  readonly reconnect_phone_number: string | null
  readonly phone_number_id: string | null
  readonly used_at: string | null
  readonly revoked_at: string | null
  readonly created_at: string
  readonly updated_at: string
}

export const hashToken = (token: string): string => createHash("sha256").update(token, "utf8").digest("hex")

/** The status at `nowMs`: an active link past `expires_at` is expired (decisions 3.6). */
export const effectiveStatus = (link: SetupLinkRecord, nowMs: number): SetupLinkStatus =>
  link.status === "active" && Date.parse(link.expires_at) <= nowMs ? "expired" : link.status

const Colors = Schema.Struct(
  Object.fromEntries(THEME_COLORS.map((k) => [k, Schema.optionalKey(Schema.String)])) as {
    readonly [K in ThemeColor]: Schema.optionalKey<Schema.String>
  }
)

/** The spec's words for a setup link's fields ("Setup link"). */
const SETUP_LINK_FIELDS = {
  id: "The link's id (uuid)",
  customer_id: "The customer whose number it connects",
  status: "`active` until used, expired or revoked",
  msg_setup_status: "How the customer's attempt went: `pending`, `processing`, `completed` or `failed`",
  error_code: "Why the last attempt failed, when it did",
  token: "The link's secret token: in the create answer only",
  url: "The address to send the customer to: in the create answer only",
  expires_at: "When the link stops working",
  success_redirect_url: "Where the customer goes after connecting (with the outcome in the query)",
  failure_redirect_url: "Where the customer goes when connecting fails (with `error_code`)",
  allowed_connection_types: "`coexistence` (also on the business app) and/or `dedicated`",
  theme_config: "Colours of the page: `primary_color`, `background_color`, `text_color`, ...",
  language: "The page's language (`en`, `es`, ...); null follows the browser",
  provision_phone_number: "Offer a new number in `phone_number_country_isos`",
  phone_number_country_isos: "Countries a new number may be provisioned in",
  upstream_billing_mode: "`customer_managed` or `partner_managed`",
  reconnect_phone_number: "An existing production number of the customer whose credentials the link refreshes",
  phone_number_id: "The number it connected, once used",
  used_at: "When it was used",
  revoked_at: "When it was revoked",
  created_at: "When it was created (ISO 8601)",
  updated_at: "When it last changed (ISO 8601)"
} as const

export const SetupLink = Schema.Struct(described({
  id: Schema.String,
  customer_id: Schema.String,
  status: SetupLinkStatus,
  msg_setup_status: MsgSetupStatus,
  error_code: Schema.NullOr(Schema.String),
  /** Create answer only: the token and the address embedding it are not stored. */
  token: Schema.optionalKey(Schema.String),
  url: Schema.optionalKey(Schema.String),
  expires_at: Schema.String,
  success_redirect_url: Schema.NullOr(Schema.String),
  failure_redirect_url: Schema.NullOr(Schema.String),
  allowed_connection_types: Schema.Array(Schema.String),
  theme_config: Colors,
  language: Schema.NullOr(Schema.String),
  provision_phone_number: Schema.Boolean,
  phone_number_country_isos: Schema.Array(Schema.String),
  upstream_billing_mode: Schema.String,
  reconnect_phone_number: Schema.NullOr(Schema.String),
  phone_number_id: Schema.NullOr(Schema.String),
  used_at: Schema.NullOr(Schema.String),
  revoked_at: Schema.NullOr(Schema.String),
  created_at: Schema.String,
  updated_at: Schema.String
}, SETUP_LINK_FIELDS))
export type SetupLink = typeof SetupLink.Type

/** The wire form at `nowMs`; `created` adds the token and its address (create answer only). */
export const toSetupLink = (
  link: SetupLinkRecord,
  nowMs: number,
  created?: { readonly token: string; readonly url: string }
): SetupLink => ({
  id: link.id,
  customer_id: link.customer_id,
  status: effectiveStatus(link, nowMs),
  msg_setup_status: link.msg_setup_status,
  error_code: link.error_code,
  ...(created !== undefined ? { token: created.token, url: created.url } : {}),
  expires_at: link.expires_at,
  success_redirect_url: link.success_redirect_url,
  failure_redirect_url: link.failure_redirect_url,
  allowed_connection_types: link.allowed_connection_types,
  theme_config: link.theme_config,
  language: link.language,
  provision_phone_number: link.provision_phone_number,
  phone_number_country_isos: link.phone_number_country_isos,
  upstream_billing_mode: link.upstream_billing_mode,
  reconnect_phone_number: link.reconnect_phone_number,
  phone_number_id: link.phone_number_id,
  used_at: link.used_at,
  revoked_at: link.revoked_at,
  created_at: link.created_at,
  updated_at: link.updated_at
})

/**
 * Body of `POST /customers/<id>/setup_links` inside `setup_link`. Values are
 * taken loosely and checked by `SetupLinks`, so each refusal names its field.
 */
export const SetupLinkCreateInput = Schema.Struct({
  success_redirect_url: Schema.optionalKey(Schema.NullOr(Schema.String)),
  failure_redirect_url: Schema.optionalKey(Schema.NullOr(Schema.String)),
  upstream_billing_mode: Schema.optionalKey(Schema.NullOr(documentedEnum(BILLING_MODES))),
  reconnect_phone_number: Schema.optionalKey(Schema.NullOr(Schema.String)),
  provision_phone_number: Schema.optionalKey(Schema.NullOr(Schema.Boolean)),
  phone_number_country_isos: Schema.optionalKey(Schema.NullOr(Schema.Array(Schema.String))),
  allowed_connection_types: Schema.optionalKey(Schema.NullOr(Schema.Array(documentedEnum(CONNECTION_TYPES)))),
  theme_config: Schema.optionalKey(Schema.NullOr(Schema.Record(Schema.String, Schema.Unknown))),
  language: Schema.optionalKey(Schema.NullOr(documentedEnum(SETUP_LINK_LANGUAGES)))
})
export type SetupLinkCreateInput = typeof SetupLinkCreateInput.Type

/** Body of `PATCH /customers/<id>/setup_links/<link_id>` inside `setup_link` (decisions 4.8). */
export const SetupLinkUpdateInput = Schema.Struct({
  status: Schema.optionalKey(documentedEnum(["revoked"])),
  success_redirect_url: Schema.optionalKey(Schema.NullOr(Schema.String)),
  failure_redirect_url: Schema.optionalKey(Schema.NullOr(Schema.String)),
  theme_config: Schema.optionalKey(Schema.NullOr(Schema.Record(Schema.String, Schema.Unknown))),
  language: Schema.optionalKey(Schema.NullOr(documentedEnum(SETUP_LINK_LANGUAGES)))
})
export type SetupLinkUpdateInput = typeof SetupLinkUpdateInput.Type
