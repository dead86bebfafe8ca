/** `WorkflowEmbedsRepo` in memory, with the keys the Postgres schema enforces. */
import { Effect, Layer } from "effect"
import { memoryEmbeds } from "../embeds/MemoryEmbeds.ts"
import type { WorkflowEmbedFilter, WorkflowEmbedRecord } from "./WorkflowEmbed.ts"
import { WorkflowEmbedsRepo, workflowEmbedsTable } from "./WorkflowEmbedsRepo.ts"

export const layerMemoryWorkflowEmbedsRepo = Layer.effect(
  WorkflowEmbedsRepo,
  Effect.map(memoryEmbeds<WorkflowEmbedRecord, WorkflowEmbedFilter>(workflowEmbedsTable), WorkflowEmbedsRepo.of)
)
