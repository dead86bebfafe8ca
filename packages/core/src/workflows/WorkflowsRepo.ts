/** Storage of workflows (with their definition) and their triggers, always scoped by project. */
import { Context, type Effect, type Option } from "effect"
import type { ListSlice, ListWindow } from "../shared/Pagination.ts"
import type { TriggerRecord, TriggerType } from "./Trigger.ts"
import type { WorkflowFilter, WorkflowRecord, WorkflowStatus, WorkflowSummary } from "./Workflow.ts"
import type { WorkflowReference, WorkflowReferrer } from "./WorkflowReferences.ts"
import type { Duplicate } from "../ports/StorageError.ts"

export class WorkflowsRepo extends Context.Service<WorkflowsRepo, {
  /** Fails with Duplicate("name") for a name taken case-insensitively, Duplicate("slug") for a taken slug. */
  readonly insert: (workflow: WorkflowRecord) => Effect.Effect<void, Duplicate>
  readonly findById: (projectId: string, id: string) => Effect.Effect<Option.Option<WorkflowRecord>>
  /** The workflow without its graph (a GET answers no graph: a 50-node one is tens of KB to read and parse). */
  readonly findSummary: (projectId: string, id: string) => Effect.Effect<Option.Option<WorkflowSummary>>
  /** Newest first by (created_at, id). */
  readonly list: (
    projectId: string,
    filter: WorkflowFilter,
    window: ListWindow
  ) => Effect.Effect<ListSlice<WorkflowRecord>>
  /** `list` without the graphs: what the API's list answers (50 graphs of 50 nodes are megabytes to read and parse). */
  readonly listSummaries: (
    projectId: string,
    filter: WorkflowFilter,
    window: ListWindow
  ) => Effect.Effect<ListSlice<WorkflowSummary>>
  /**
   * Replaces the record when its stored `lock_version` still equals
   * `expectedLockVersion` (compare-and-set); None when it moved or vanished.
   */
  readonly update: (
    workflow: WorkflowRecord,
    expectedLockVersion: number
  ) => Effect.Effect<Option.Option<WorkflowRecord>, Duplicate>
  /**
   * The project's workflows whose current definition holds `reference` (`definitionReferences`, stored with every
   * insert and update, gone with the workflow), of one of `statuses`: those of an earlier status in `statuses`
   * first, newest first by (created_at, id) within one status; at most `limit`. Read without any graph.
   */
  readonly referrers: (
    projectId: string,
    reference: WorkflowReference,
    statuses: ReadonlyArray<WorkflowStatus>,
    limit: number
  ) => Effect.Effect<ReadonlyArray<WorkflowReferrer>>
  /** Removes the workflow and its triggers; false when absent. */
  readonly delete: (projectId: string, id: string) => Effect.Effect<boolean>
  readonly slugTaken: (projectId: string, slug: string) => Effect.Effect<boolean>
  /** An execution was created (decisions 2.1): `execution_count` + 1, `last_executed_at` at least `at`; lock unchanged. */
  readonly countExecution: (projectId: string, id: string, at: string) => Effect.Effect<void>
}>()("@parley/core/ports/WorkflowsRepo") {}

export class TriggersRepo extends Context.Service<TriggersRepo, {
  readonly insert: (trigger: TriggerRecord) => Effect.Effect<void>
  readonly findById: (projectId: string, id: string) => Effect.Effect<Option.Option<TriggerRecord>>
  /** Oldest first. */
  readonly listByWorkflow: (projectId: string, workflowId: string) => Effect.Effect<ReadonlyArray<TriggerRecord>>
  /** Every trigger of the type in the project together with the status of its workflow. */
  readonly listByType: (
    projectId: string,
    type: TriggerType
  ) => Effect.Effect<ReadonlyArray<{ readonly trigger: TriggerRecord; readonly workflowStatus: string; readonly workflowName: string }>>
  readonly update: (trigger: TriggerRecord) => Effect.Effect<void>
  readonly delete: (projectId: string, id: string) => Effect.Effect<boolean>
}>()("@parley/core/ports/TriggersRepo") {}
