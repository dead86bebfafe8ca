/** `workflows`: workflows, their executions and triggers (decisions 4.1-4.3). */
import { ExecutionsApi } from "../../executions/ExecutionsApi.ts"
import { TriggersApi, WorkflowsApi } from "../../workflows/WorkflowsApi.ts"
import { WorkflowLifecycleApi } from "../../executions/lifecycle/LifecycleApi.ts"
import { endpoint, type Tool } from "../Action.ts"

export const Workflows: Tool = {
  name: "workflows",
  description: "Workflows: records, definitions, status, executions, triggers, revisions, rollouts and experiments.",
  actions: [
    endpoint("list", WorkflowsApi.endpoints.list),
    endpoint("get", WorkflowsApi.endpoints.get),
    endpoint("get_definition", WorkflowsApi.endpoints.definition),
    endpoint("update_definition", WorkflowsApi.endpoints.update, {
      description: "Replace a workflow's definition: `workflow.definition` with the record's `workflow.lock_version`"
    }),
    endpoint("set_status", WorkflowsApi.endpoints.update, {
      description: "Set a workflow's status: `workflow.status` (draft, active, archived) with `workflow.lock_version`"
    }),
    endpoint("list_executions", ExecutionsApi.endpoints.list),
    endpoint("get_execution", ExecutionsApi.endpoints.get),
    endpoint("resume_execution", ExecutionsApi.endpoints.resume),
    endpoint("list_triggers", TriggersApi.endpoints.list),
    endpoint("replace_triggers", TriggersApi.endpoints.replace),
    endpoint("list_revisions", WorkflowLifecycleApi.endpoints.listRevisions),
    endpoint("get_revision", WorkflowLifecycleApi.endpoints.getRevision),
    endpoint("compare_revisions", WorkflowLifecycleApi.endpoints.compareRevisions),
    endpoint("save_revision", WorkflowLifecycleApi.endpoints.saveRevision),
    endpoint("restore_revision", WorkflowLifecycleApi.endpoints.restoreRevision),
    endpoint("migrate_runs", WorkflowLifecycleApi.endpoints.migrateRuns),
    endpoint("get_rollout", WorkflowLifecycleApi.endpoints.getRollout),
    endpoint("start_rollout", WorkflowLifecycleApi.endpoints.startRollout),
    endpoint("promote_rollout", WorkflowLifecycleApi.endpoints.promoteRollout),
    endpoint("roll_back_rollout", WorkflowLifecycleApi.endpoints.rollBack),
    endpoint("get_experiment", WorkflowLifecycleApi.endpoints.getExperiment),
    endpoint("get_drop_off", WorkflowLifecycleApi.endpoints.dropOff)
  ]
}
