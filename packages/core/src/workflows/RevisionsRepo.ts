/**
 * Storage of a workflow's revision history (issue 32 §3): the graphs (shared, by content hash, with the revisions
 * runs are pinned to), every save of a definition, and the staged rollout. Always scoped by project and workflow.
 */
import { Context, type Effect, type Option, type Stream } from "effect"
import type { ListSlice, ListWindow } from "../shared/Pagination.ts"
import type { RevisionSummaryRecord, RolloutRecord, SaveRecord } from "./Revision.ts"
import type { Definition } from "./Workflow.ts"

export class RevisionsRepo extends Context.Service<RevisionsRepo, {
  /** Stores the save, and the graph under `save.revision_id` unless already stored. */
  readonly recordSave: (save: SaveRecord, definition: Definition) => Effect.Effect<void>
  /**
   * The workflow's revisions, newest first by (created_at, id): every graph saved or run, with its latest saves and
   * how many runs started on it (and wait now); the window's part of them.
   */
  readonly list: (projectId: string, workflowId: string, window: ListWindow) => Effect.Effect<ListSlice<RevisionSummaryRecord>>
  readonly get: (
    projectId: string,
    workflowId: string,
    revisionId: string
  ) => Effect.Effect<Option.Option<RevisionSummaryRecord & { readonly definition: Definition }>>
  readonly getRollout: (projectId: string, workflowId: string) => Effect.Effect<Option.Option<RolloutRecord>>
  /** Starts or replaces the workflow's rollout. */
  readonly putRollout: (rollout: RolloutRecord) => Effect.Effect<void>
  /** Ends the rollout; false when there was none. */
  readonly deleteRollout: (projectId: string, workflowId: string) => Effect.Effect<boolean>
  /** A signal after any rollout changed, from any process sharing the store (caches start over). */
  readonly changes: Stream.Stream<void>
}>()("@parley/core/ports/RevisionsRepo") {}
