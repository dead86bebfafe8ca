/**
 * Inbox embeds (decisions 2.17, 3.6, 4.7): a token that opens the embedded inbox at `/embed/<token>` for one
 * scope of a project (the whole project, one customer's numbers or one number). The token is shown once and
 * stored as its sha256 hash.
 */
import { Schema } from "effect"
import { EMBED_LANGUAGES, EMBED_MODES, type EmbedLanguage, type EmbedMode, type EmbedStatus } from "../embeds/EmbedAccess.ts"

export const EMBED_SCOPE_TYPES = ["project", "customer", "phone_number"] as const
export type EmbedScopeType = (typeof EMBED_SCOPE_TYPES)[number]
export { EMBED_LANGUAGES, EMBED_MODES, type EmbedLanguage, type EmbedMode, type EmbedStatus } from "../embeds/EmbedAccess.ts"

export interface InboxEmbedRecord {
  readonly id: string
  readonly project_id: string
  readonly name: string
  readonly scope_type: EmbedScopeType
  /** Null for `project`; a customer id; a network `phone_number_id`. */
  readonly scope_id: string | null
  readonly scope_name: string | null
  readonly assigned_user_id: string | null
  readonly assigned_user_name: string | null
  readonly status: EmbedStatus
  readonly allowed_origins: ReadonlyArray<string>
  readonly default_mode: EmbedMode
  readonly language: EmbedLanguage
  readonly expires_at: string | null
  readonly last_used_at: string | null
  /** sha256 hex of the token. */
  readonly token_hash: string
  readonly created_at: string
  readonly updated_at: string
}

export const InboxEmbed = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  scope_type: Schema.Literals(EMBED_SCOPE_TYPES),
  scope_id: Schema.NullOr(Schema.String),
  scope_name: Schema.NullOr(Schema.String),
  assigned_user_id: Schema.NullOr(Schema.String),
  assigned_user_name: Schema.NullOr(Schema.String),
  status: Schema.Literals(["active", "revoked"]),
  allowed_origins: Schema.Array(Schema.String),
  default_mode: Schema.Literals(EMBED_MODES),
  language: Schema.Literals(EMBED_LANGUAGES),
  expires_at: Schema.NullOr(Schema.String),
  last_used_at: Schema.NullOr(Schema.String),
  created_at: Schema.String,
  updated_at: Schema.String
}).annotate({ identifier: "InboxEmbed" })
export type InboxEmbed = typeof InboxEmbed.Type

/** The create answer: the record plus the token and its address, shown this once. */
export const CreatedInboxEmbed = Schema.Struct({ ...InboxEmbed.fields, token: Schema.String, embed_url: Schema.String })
  .annotate({ identifier: "CreatedInboxEmbed" })

export const toInboxEmbed = (e: InboxEmbedRecord): InboxEmbed => ({
  id: e.id,
  name: e.name,
  scope_type: e.scope_type,
  scope_id: e.scope_id,
  scope_name: e.scope_name,
  assigned_user_id: e.assigned_user_id,
  assigned_user_name: e.assigned_user_name,
  status: e.status,
  allowed_origins: e.allowed_origins,
  default_mode: e.default_mode,
  language: e.language,
  expires_at: e.expires_at,
  last_used_at: e.last_used_at,
  created_at: e.created_at,
  updated_at: e.updated_at
})

const Editable = {
  name: Schema.optionalKey(Schema.String),
  assigned_user_id: Schema.optionalKey(Schema.NullOr(Schema.String)),
  // Parley keeps no user directory: the name shown for the assigned user is the caller's to give.
  assigned_user_name: Schema.optionalKey(Schema.NullOr(Schema.String)),
  allowed_origins: Schema.optionalKey(Schema.Array(Schema.String)),
  default_mode: Schema.optionalKey(Schema.Literals(EMBED_MODES)),
  language: Schema.optionalKey(Schema.Literals(EMBED_LANGUAGES)),
  expires_at: Schema.optionalKey(Schema.NullOr(Schema.String))
}

/** Body of `POST /inbox_embeds` inside the `inbox_embed` envelope. */
export const InboxEmbedCreateInput = Schema.Struct({
  scope_type: Schema.Literals(EMBED_SCOPE_TYPES),
  scope_id: Schema.optionalKey(Schema.NullOr(Schema.String)),
  ...Editable
})
export type InboxEmbedCreateInput = typeof InboxEmbedCreateInput.Type

/** Body of `PATCH /inbox_embeds/<id>`: scope fields are immutable and ignored like any unknown key. */
export const InboxEmbedUpdateInput = Schema.Struct(Editable)
export type InboxEmbedUpdateInput = typeof InboxEmbedUpdateInput.Type

export interface InboxEmbedFilter {
  readonly status?: EmbedStatus | undefined
  readonly scope_type?: EmbedScopeType | undefined
  readonly scope_id?: string | undefined
  readonly assigned_user_id?: string | undefined
}
