/** The behaviour every `WorkflowEmbedsRepo` adapter owes: the embed repos' suite with the viewer's record and filters. */
import { Effect, type Layer } from "effect"
import type { ProjectsRepo } from "../../projects/ProjectsRepo.ts"
import type { WorkflowEmbedFilter, WorkflowEmbedRecord } from "../../viewer/WorkflowEmbed.ts"
import { WorkflowEmbedsRepo } from "../../viewer/WorkflowEmbedsRepo.ts"
import { embedsRepoConformance } from "./EmbedsRepoConformance.ts"

export const workflowEmbedsRepoConformance = <E>(name: string, storage: Layer.Layer<WorkflowEmbedsRepo | ProjectsRepo, E>): void =>
  embedsRepoConformance<WorkflowEmbedRecord, WorkflowEmbedFilter, WorkflowEmbedsRepo, E>(name, storage, {
    repo: Effect.service(WorkflowEmbedsRepo),
    own: { access: "view" },
    rich: {
      scope_type: "workflow",
      scope_id: "wf_1",
      scope_name: "Order bot",
      access: "edit",
      allowed_origins: ["https://app.example.com", "http://localhost:3000"]
    },
    edited: { name: "Night shift", access: "edit", allowed_origins: ["https://x.example"], default_mode: "dark", language: "es" },
    fixed: { scope_type: "workflow", scope_id: "wf_9" },
    listed: {
      first: {},
      second: { scope_type: "workflow", scope_id: "wf_2" },
      filters: [[{ scope_type: "workflow", scope_id: "wf_2" }, "second"]]
    }
  })
