/** Storage of workflow viewer embeds (issue 31 §3), scoped by project; found by token hash to open the viewer. */
import { Context, type Effect, type Option } from "effect"
import type { ListSlice, ListWindow } from "../shared/Pagination.ts"
import type { WorkflowEmbedFilter, WorkflowEmbedRecord } from "./WorkflowEmbed.ts"

export class WorkflowEmbedsRepo extends Context.Service<WorkflowEmbedsRepo, {
  readonly insert: (embed: WorkflowEmbedRecord) => Effect.Effect<void>
  readonly findById: (projectId: string, id: string) => Effect.Effect<Option.Option<WorkflowEmbedRecord>>
  readonly findByTokenHash: (tokenHash: string) => Effect.Effect<Option.Option<WorkflowEmbedRecord>>
  /** Newest first by (created_at, id). */
  readonly list: (
    projectId: string,
    filter: WorkflowEmbedFilter,
    window: ListWindow
  ) => Effect.Effect<ListSlice<WorkflowEmbedRecord>>
  /** Replaces the editable fields, `status` and `updated_at`; None when gone. Scope and token never change. */
  readonly update: (embed: WorkflowEmbedRecord) => Effect.Effect<Option.Option<WorkflowEmbedRecord>>
  /** Sets `last_used_at` when it is older than `at` (never moves it back). */
  readonly touch: (id: string, at: string) => Effect.Effect<void>
}>()("@parley/core/viewer/WorkflowEmbedsRepo") {}
