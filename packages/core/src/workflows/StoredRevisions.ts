/**
 * What executions' lifecycle reads and stages of a workflow's stored revisions (issue 32 §3): the revisions runs are
 * pinned to, and the staged rollout that picks a revision per contact. Saves are recorded by `Workflows` alone;
 * `RevisionsRepo` stays workflows' own (issue 28 §2), each method here one statement of it.
 */
import { Context, Effect, Layer, type Option, type Stream } from "effect"
import type { ListSlice, ListWindow } from "../shared/Pagination.ts"
import type { RevisionSummaryRecord, RolloutRecord } from "./Revision.ts"
import { RevisionsRepo } from "./RevisionsRepo.ts"
import type { Definition } from "./Workflow.ts"

export class StoredRevisions extends Context.Service<StoredRevisions, {
  /** The workflow's revisions, newest first by (created_at, id), with their latest saves and run counts. */
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
}>()("@parley/core/workflows/StoredRevisions") {
  static readonly layer = Layer.effect(
    StoredRevisions,
    Effect.gen(function*() {
      const repo = yield* RevisionsRepo
      return StoredRevisions.of({
        list: repo.list,
        get: repo.get,
        getRollout: repo.getRollout,
        putRollout: repo.putRollout,
        deleteRollout: repo.deleteRollout,
        changes: repo.changes
      })
    })
  )
}
