/** `WorkflowEmbedsRepo` in memory, with the keys the Postgres schema enforces. */
import { Effect, Layer } from "effect"
import { memoryEmbeds } from "../embeds/MemoryEmbeds.ts"
import type { WorkflowEmbedFilter, WorkflowEmbedRecord } from "./WorkflowEmbed.ts"
import { WorkflowEmbedsRepo } from "./WorkflowEmbedsRepo.ts"

export const layerMemoryWorkflowEmbedsRepo = Layer.effect(
  WorkflowEmbedsRepo,
  Effect.map(
    memoryEmbeds<WorkflowEmbedRecord, WorkflowEmbedFilter>({
      table: "workflow_embeds",
      matches: (filter) => (e) =>
        (filter.status === undefined || e.status === filter.status) &&
        (filter.scope_type === undefined || e.scope_type === filter.scope_type) &&
        (filter.scope_id === undefined || e.scope_id === filter.scope_id),
      edited: (current, next) => ({
        ...current,
        name: next.name,
        access: next.access,
        status: next.status,
        allowed_origins: next.allowed_origins,
        default_mode: next.default_mode,
        language: next.language,
        expires_at: next.expires_at,
        updated_at: next.updated_at
      })
    }),
    WorkflowEmbedsRepo.of
  )
)
