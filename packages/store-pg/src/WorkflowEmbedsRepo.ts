/** `WorkflowEmbedsRepo` on PostgreSQL (migration 0032). */
import { WorkflowEmbed, type WorkflowEmbedFilter, type WorkflowEmbedRecord, WorkflowEmbedsRepo, workflowEmbedsTable } from "@parley/core"
import { Effect, Layer } from "effect"
import { embedRow, pgEmbedsRepo } from "./EmbedsTable.ts"

export const layerWorkflowEmbedsRepo = Layer.effect(
  WorkflowEmbedsRepo,
  Effect.map(pgEmbedsRepo<WorkflowEmbedRecord, WorkflowEmbedFilter>(workflowEmbedsTable, embedRow(WorkflowEmbed.fields)), WorkflowEmbedsRepo.of)
)
