/**
 * What other capabilities read of the stored workflows and their triggers, project-scoped and without a principal:
 * executions find the workflow a run starts on or calls, count its runs, and index the triggers that start runs.
 * Workflows' repositories stay theirs (issue 28 §2); each method is one statement of theirs, nothing added.
 */
import { Context, Effect, Layer, type Option } from "effect"
import type { TriggerRecord, TriggerType } from "./Trigger.ts"
import type { WorkflowRecord } from "./Workflow.ts"
import { TriggersRepo, WorkflowsRepo } from "./WorkflowsRepo.ts"

export class StoredWorkflows extends Context.Service<StoredWorkflows, {
  readonly findById: (projectId: string, id: string) => Effect.Effect<Option.Option<WorkflowRecord>>
  /** A run of the workflow was created (decisions 2.1): `execution_count` + 1, `last_executed_at` at least `at`. */
  readonly countExecution: (projectId: string, id: string, at: string) => Effect.Effect<void>
  /** The workflow's triggers, oldest first. */
  readonly triggersOf: (projectId: string, workflowId: string) => Effect.Effect<ReadonlyArray<TriggerRecord>>
  /** Every trigger of the type in the project, with the status and name of its workflow. */
  readonly triggersByType: (
    projectId: string,
    type: TriggerType
  ) => Effect.Effect<ReadonlyArray<{ readonly trigger: TriggerRecord; readonly workflowStatus: string; readonly workflowName: string }>>
}>()("@parley/core/workflows/StoredWorkflows") {
  static readonly layer = Layer.effect(
    StoredWorkflows,
    Effect.gen(function*() {
      const workflows = yield* WorkflowsRepo
      const triggers = yield* TriggersRepo
      return StoredWorkflows.of({
        findById: workflows.findById,
        countExecution: workflows.countExecution,
        triggersOf: triggers.listByWorkflow,
        triggersByType: triggers.listByType
      })
    })
  )
}
