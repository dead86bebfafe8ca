/**
 * Inbox embeds (decisions 2.17, 3.6, 4.7): a token that opens the embedded inbox at `/embed/<token>` for one
 * scope of a project (the whole project, one customer's numbers or one number). The token is shown once and
 * stored as its sha256 hash.
 */
import { Schema } from "effect"
import { editableEmbedFields, embedAnswerFields, type EmbedFilterOf, type EmbedRecordOf, embedScopeInput, toEmbedAnswer } from "../embeds/Embed.ts"

export const EMBED_SCOPE_TYPES = ["project", "customer", "phone_number"] as const
export type EmbedScopeType = (typeof EMBED_SCOPE_TYPES)[number]
export { EMBED_LANGUAGES, EMBED_MODES, type EmbedLanguage, type EmbedMode, type EmbedStatus } from "../embeds/EmbedAccess.ts"

export interface InboxEmbedRecord extends EmbedRecordOf<EmbedScopeType> {
  readonly assigned_user_id: string | null
  readonly assigned_user_name: string | null
}

const { head, tail } = embedAnswerFields(EMBED_SCOPE_TYPES)

export const InboxEmbed = Schema.Struct({
  ...head,
  assigned_user_id: Schema.NullOr(Schema.String),
  assigned_user_name: Schema.NullOr(Schema.String),
  ...tail
}).annotate({ identifier: "InboxEmbed" })
export type InboxEmbed = typeof InboxEmbed.Type

/** The create answer: the record plus the token and its address, shown this once. */
export const CreatedInboxEmbed = Schema.Struct({ ...InboxEmbed.fields, token: Schema.String, embed_url: Schema.String })
  .annotate({ identifier: "CreatedInboxEmbed" })

export const toInboxEmbed: (record: InboxEmbedRecord) => InboxEmbed = toEmbedAnswer

const Editable = {
  ...editableEmbedFields,
  assigned_user_id: Schema.optionalKey(Schema.NullOr(Schema.String)),
  // Parley keeps no user directory: the name shown for the assigned user is the caller's to give.
  assigned_user_name: Schema.optionalKey(Schema.NullOr(Schema.String))
}

/** Body of `POST /inbox_embeds` inside the `inbox_embed` envelope. */
export const InboxEmbedCreateInput = Schema.Struct({ ...embedScopeInput(EMBED_SCOPE_TYPES), ...Editable })
export type InboxEmbedCreateInput = typeof InboxEmbedCreateInput.Type

/** Body of `PATCH /inbox_embeds/<id>`: scope fields are immutable and ignored like any unknown key. */
export const InboxEmbedUpdateInput = Schema.Struct(Editable)
export type InboxEmbedUpdateInput = typeof InboxEmbedUpdateInput.Type

export interface InboxEmbedFilter extends EmbedFilterOf<EmbedScopeType> {
  readonly assigned_user_id?: string | undefined
}
