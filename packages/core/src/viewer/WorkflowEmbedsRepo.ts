/** Storage of workflow viewer embeds (issue 31 §3): the embed repos' contract with the viewer's record and filters. */
import { Context } from "effect"
import type { EmbedsRepo, EmbedTable } from "../embeds/EmbedsRepo.ts"
import type { WorkflowEmbedFilter, WorkflowEmbedRecord } from "./WorkflowEmbed.ts"

export class WorkflowEmbedsRepo extends Context.Service<WorkflowEmbedsRepo, EmbedsRepo<WorkflowEmbedRecord, WorkflowEmbedFilter>>()(
  "@parley/core/viewer/WorkflowEmbedsRepo"
) {}

/** The viewer's table: the shared columns and `access`. */
export const workflowEmbedsTable: EmbedTable<WorkflowEmbedRecord> = { table: "workflow_embeds", ownColumns: ["access"] }
