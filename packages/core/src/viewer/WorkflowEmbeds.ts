/**
 * Workflow viewer embeds (issue 31 §3): create, list, read, update and revoke them, and open the
 * viewer's requests by token. The token rules are the inbox's (`embeds/Embeds.ts`): random, answered once,
 * stored as its hash, refused once revoked, after `expires_at` and while its project is disabled.
 */
import { Context, Effect, Layer, Option } from "effect"
import { type EmbedsService, makeEmbeds, type OpenedEmbed } from "../embeds/Embeds.ts"
import { StoredWorkflows } from "../workflows/StoredWorkflows.ts"
import type {
  WorkflowEmbedCreateInput,
  WorkflowEmbedFilter,
  WorkflowEmbedRecord,
  WorkflowEmbedScopeType,
  WorkflowEmbedUpdateInput
} from "./WorkflowEmbed.ts"
import { WorkflowEmbedsRepo } from "./WorkflowEmbedsRepo.ts"

/** An opened viewer: its embed and its project. */
export type ViewerSession = OpenedEmbed<WorkflowEmbedRecord>

/** The token's prefix: a viewer token never opens the inbox, nor an inbox token the viewer. */
export const WORKFLOW_EMBED_TOKEN_PREFIX = "we"

export class WorkflowEmbeds extends Context.Service<
  WorkflowEmbeds,
  EmbedsService<WorkflowEmbedRecord, WorkflowEmbedCreateInput, WorkflowEmbedUpdateInput, WorkflowEmbedFilter>
>()("@parley/core/viewer/WorkflowEmbeds") {
  static readonly layer = Layer.effect(
    WorkflowEmbeds,
    Effect.gen(function*() {
      const workflows = yield* StoredWorkflows
      const service = yield* makeEmbeds<
        WorkflowEmbedScopeType,
        Pick<WorkflowEmbedRecord, "access">,
        WorkflowEmbedCreateInput,
        WorkflowEmbedUpdateInput,
        WorkflowEmbedFilter
      >(yield* WorkflowEmbedsRepo, {
        service: "WorkflowEmbeds",
        resource: "Workflow embed",
        envelope: "workflow_embed",
        tokenPrefix: WORKFLOW_EMBED_TOKEN_PREFIX,
        pagePath: "viewer",
        invalidToken: "Invalid viewer token",
        defaultName: (scopeName) => scopeName ?? "Workflows",
        scopeName: (project, _workflow, id) =>
          Effect.map(workflows.findById(project.id, id), Option.match({
            onNone: () => ({ refused: "is not a workflow of this project" }),
            onSome: (workflow) => ({ name: workflow.name })
          })),
        created: (input) => Effect.succeed({ access: input.access ?? "view" }),
        updated: (current, input) => Effect.succeed({ access: input.access ?? current.access })
      })
      return WorkflowEmbeds.of(service)
    })
  )
}
