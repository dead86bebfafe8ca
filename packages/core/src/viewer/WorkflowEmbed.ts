/**
 * Workflow viewer embeds (issue 31 §3): a token that opens the workflow and execution viewer at
 * `/viewer/<token>` for one project's workflows or one workflow. `access` says whether the page may change things
 * (save a definition, resume or end a run, start a test run) or only look. Like the inbox's, the token is shown
 * once and stored as its sha256 hash.
 */
import { Schema } from "effect"
import { EMBED_LANGUAGES, EMBED_MODES, type EmbedLanguage, type EmbedMode, type EmbedStatus } from "../embeds/EmbedAccess.ts"

export const WORKFLOW_EMBED_SCOPE_TYPES = ["project", "workflow"] as const
export type WorkflowEmbedScopeType = (typeof WORKFLOW_EMBED_SCOPE_TYPES)[number]
export const WORKFLOW_EMBED_ACCESS = ["view", "edit"] as const
export type WorkflowEmbedAccess = (typeof WORKFLOW_EMBED_ACCESS)[number]

export interface WorkflowEmbedRecord {
  readonly id: string
  readonly project_id: string
  readonly name: string
  readonly scope_type: WorkflowEmbedScopeType
  /** Null for `project`; the workflow's id for `workflow`. */
  readonly scope_id: string | null
  readonly scope_name: string | null
  readonly access: WorkflowEmbedAccess
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

export const WorkflowEmbed = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  scope_type: Schema.Literals(WORKFLOW_EMBED_SCOPE_TYPES),
  scope_id: Schema.NullOr(Schema.String),
  scope_name: Schema.NullOr(Schema.String),
  access: Schema.Literals(WORKFLOW_EMBED_ACCESS),
  status: Schema.Literals(["active", "revoked"]),
  allowed_origins: Schema.Array(Schema.String),
  default_mode: Schema.Literals(EMBED_MODES),
  language: Schema.Literals(EMBED_LANGUAGES),
  expires_at: Schema.NullOr(Schema.String),
  last_used_at: Schema.NullOr(Schema.String),
  created_at: Schema.String,
  updated_at: Schema.String
}).annotate({ identifier: "WorkflowEmbed" })
export type WorkflowEmbed = typeof WorkflowEmbed.Type

/** The create answer: the record plus the token and its address, shown this once. */
export const CreatedWorkflowEmbed = Schema.Struct({ ...WorkflowEmbed.fields, token: Schema.String, embed_url: Schema.String })
  .annotate({ identifier: "CreatedWorkflowEmbed" })

export const toWorkflowEmbed = ({ project_id: _, token_hash: __, ...answer }: WorkflowEmbedRecord): WorkflowEmbed => answer

const Editable = {
  name: Schema.optionalKey(Schema.String),
  access: Schema.optionalKey(Schema.Literals(WORKFLOW_EMBED_ACCESS)),
  allowed_origins: Schema.optionalKey(Schema.Array(Schema.String)),
  default_mode: Schema.optionalKey(Schema.Literals(EMBED_MODES)),
  language: Schema.optionalKey(Schema.Literals(EMBED_LANGUAGES)),
  expires_at: Schema.optionalKey(Schema.NullOr(Schema.String))
}

/** Body of `POST /workflow_embeds` inside the `workflow_embed` envelope. */
export const WorkflowEmbedCreateInput = Schema.Struct({
  scope_type: Schema.Literals(WORKFLOW_EMBED_SCOPE_TYPES),
  scope_id: Schema.optionalKey(Schema.NullOr(Schema.String)),
  ...Editable
})
export type WorkflowEmbedCreateInput = typeof WorkflowEmbedCreateInput.Type

/** Body of `PATCH /workflow_embeds/<id>`: scope fields are immutable and ignored like any unknown key. */
export const WorkflowEmbedUpdateInput = Schema.Struct(Editable)
export type WorkflowEmbedUpdateInput = typeof WorkflowEmbedUpdateInput.Type

export interface WorkflowEmbedFilter {
  readonly status?: EmbedStatus | undefined
  readonly scope_type?: WorkflowEmbedScopeType | undefined
  readonly scope_id?: string | undefined
}
