/** `workflow_embeds`: tokens that open the embedded workflow and execution viewer (issue 31 §3). */
import { endpoint, type Tool } from "../Action.ts"
import { WorkflowEmbedsApi } from "../../viewer/WorkflowEmbedsApi.ts"

export const WorkflowEmbeds: Tool = {
  name: "workflow_embeds",
  description: "Links that open the workflow and execution viewer in an iframe, for the project or one workflow.",
  actions: [
    endpoint("list", WorkflowEmbedsApi.endpoints.list),
    endpoint("create", WorkflowEmbedsApi.endpoints.create),
    endpoint("get", WorkflowEmbedsApi.endpoints.get),
    endpoint("update", WorkflowEmbedsApi.endpoints.update),
    endpoint("revoke", WorkflowEmbedsApi.endpoints.revoke)
  ]
}
