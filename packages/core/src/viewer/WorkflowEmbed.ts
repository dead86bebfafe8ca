/**
 * Workflow viewer embeds (issue 31 §3): a token that opens the workflow and execution viewer at
 * `/viewer/<token>` for one project's workflows or one workflow. `access` says whether the page may change things
 * (save a definition, resume or end a run, start a test run) or only look. Like the inbox's, the token is shown
 * once and stored as its sha256 hash.
 */
import { Schema } from "effect"
import { editableEmbedFields, embedAnswerFields, type EmbedFilterOf, type EmbedRecordOf, embedScopeInput, toEmbedAnswer } from "../embeds/Embed.ts"

export const WORKFLOW_EMBED_SCOPE_TYPES = ["project", "workflow"] as const
export type WorkflowEmbedScopeType = (typeof WORKFLOW_EMBED_SCOPE_TYPES)[number]
export const WORKFLOW_EMBED_ACCESS = ["view", "edit"] as const
export type WorkflowEmbedAccess = (typeof WORKFLOW_EMBED_ACCESS)[number]

export interface WorkflowEmbedRecord extends EmbedRecordOf<WorkflowEmbedScopeType> {
  readonly access: WorkflowEmbedAccess
}

const { head, tail } = embedAnswerFields(WORKFLOW_EMBED_SCOPE_TYPES)

export const WorkflowEmbed = Schema.Struct({ ...head, access: Schema.Literals(WORKFLOW_EMBED_ACCESS), ...tail })
  .annotate({ identifier: "WorkflowEmbed" })
export type WorkflowEmbed = typeof WorkflowEmbed.Type

/** The create answer: the record plus the token and its address, shown this once. */
export const CreatedWorkflowEmbed = Schema.Struct({ ...WorkflowEmbed.fields, token: Schema.String, embed_url: Schema.String })
  .annotate({ identifier: "CreatedWorkflowEmbed" })

export const toWorkflowEmbed: (record: WorkflowEmbedRecord) => WorkflowEmbed = toEmbedAnswer

const Editable = { ...editableEmbedFields, access: Schema.optionalKey(Schema.Literals(WORKFLOW_EMBED_ACCESS)) }

/** Body of `POST /workflow_embeds` inside the `workflow_embed` envelope. */
export const WorkflowEmbedCreateInput = Schema.Struct({ ...embedScopeInput(WORKFLOW_EMBED_SCOPE_TYPES), ...Editable })
export type WorkflowEmbedCreateInput = typeof WorkflowEmbedCreateInput.Type

/** Body of `PATCH /workflow_embeds/<id>`: scope fields are immutable and ignored like any unknown key. */
export const WorkflowEmbedUpdateInput = Schema.Struct(Editable)
export type WorkflowEmbedUpdateInput = typeof WorkflowEmbedUpdateInput.Type

export type WorkflowEmbedFilter = EmbedFilterOf<WorkflowEmbedScopeType>
