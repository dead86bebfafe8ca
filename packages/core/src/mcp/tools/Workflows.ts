/** `workflows`: workflows, their executions and triggers (decisions 4.1-4.3). */
import { endpoint, type Tool } from "../Action.ts"

export const Workflows: Tool = {
  name: "workflows",
  description: "Workflows: records, definitions, status, executions and triggers.",
  actions: [
    endpoint("list", "workflows.list"),
    endpoint("get", "workflows.get"),
    endpoint("get_definition", "workflows.definition"),
    endpoint("update_definition", "workflows.update", {
      description: "Replace a workflow's definition: `workflow.definition` with the record's `workflow.lock_version`"
    }),
    endpoint("set_status", "workflows.update", {
      description: "Set a workflow's status: `workflow.status` (draft, active, archived) with `workflow.lock_version`"
    }),
    endpoint("list_executions", "executions.list"),
    endpoint("get_execution", "executions.get"),
    endpoint("resume_execution", "executions.resume"),
    endpoint("list_triggers", "triggers.list"),
    endpoint("replace_triggers", "triggers.replace")
  ]
}
