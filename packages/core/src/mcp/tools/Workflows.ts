/** `workflows`: workflows, their executions and triggers (decisions 4.1-4.3). */
import { ExecutionsApi } from "../../executions/ExecutionsApi.ts"
import { TriggersApi, WorkflowsApi } from "../../workflows/WorkflowsApi.ts"
import { endpoint, type Tool } from "../Action.ts"

export const Workflows: Tool = {
  name: "workflows",
  description: "Workflows: records, definitions, status, executions and triggers.",
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
    endpoint("replace_triggers", TriggersApi.endpoints.replace)
  ]
}
