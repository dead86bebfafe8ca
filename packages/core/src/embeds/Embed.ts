/**
 * The record every embed kind shares (the inbox's and the workflow viewer's): its common fields, their answer
 * Schema, the editable inputs they share, and the answer without the owner and the token's hash. A kind adds its
 * scope types and its own fields (`access`; `assigned_user_*`).
 */
import { Schema } from "effect"
import { EMBED_LANGUAGES, EMBED_MODES, type EmbedLanguage, type EmbedMode, type EmbedStatus } from "./EmbedAccess.ts"

export interface EmbedRecordOf<ScopeType extends string> {
  readonly id: string
  readonly project_id: string
  readonly name: string
  readonly scope_type: ScopeType
  /** Null for `project`; the scope's id otherwise. */
  readonly scope_id: string | null
  readonly scope_name: string | null
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

/** The answer's fields around a kind's own (`{ ...scopeFields(types), ...own, ...stateFields }`, the order answered). */
export const embedAnswerFields = <const ScopeTypes extends ReadonlyArray<string>>(scopeTypes: ScopeTypes) => ({
  head: {
    id: Schema.String,
    name: Schema.String,
    scope_type: Schema.Literals(scopeTypes),
    scope_id: Schema.NullOr(Schema.String),
    scope_name: Schema.NullOr(Schema.String)
  },
  tail: {
    status: Schema.Literals(["active", "revoked"]),
    allowed_origins: Schema.Array(Schema.String),
    default_mode: Schema.Literals(EMBED_MODES),
    language: Schema.Literals(EMBED_LANGUAGES),
    expires_at: Schema.NullOr(Schema.String),
    last_used_at: Schema.NullOr(Schema.String),
    created_at: Schema.String,
    updated_at: Schema.String
  }
})

/** The inputs every kind lets a caller set on create and change on update. */
export const editableEmbedFields = {
  name: Schema.optionalKey(Schema.String),
  allowed_origins: Schema.optionalKey(Schema.Array(Schema.String)),
  default_mode: Schema.optionalKey(Schema.Literals(EMBED_MODES)),
  language: Schema.optionalKey(Schema.Literals(EMBED_LANGUAGES)),
  expires_at: Schema.optionalKey(Schema.NullOr(Schema.String))
}

/** What a create input carries besides the editable fields: the scope, fixed from then on. */
export const embedScopeInput = <const ScopeTypes extends ReadonlyArray<string>>(scopeTypes: ScopeTypes) => ({
  scope_type: Schema.Literals(scopeTypes),
  scope_id: Schema.optionalKey(Schema.NullOr(Schema.String))
})

/** The answer: the record without its owner and its token's hash. */
export const toEmbedAnswer = <R extends EmbedRecordOf<string>>(
  { project_id: _, token_hash: __, ...answer }: R
): Omit<R, "project_id" | "token_hash"> => answer

/** A list filter: any of the record's columns, each compared for equality; an absent key filters nothing. */
export type EmbedFilterOf<ScopeType extends string> = {
  readonly status?: EmbedStatus | undefined
  readonly scope_type?: ScopeType | undefined
  readonly scope_id?: string | undefined
}
