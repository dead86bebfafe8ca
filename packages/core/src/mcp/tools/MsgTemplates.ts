/** `msg_templates`: the template mirror (decisions 4.8.1) and template creation through the proxy. */
import { MessagingProxyApi } from "../../messaging/ProxyApi.ts"
import { MsgTemplatesApi } from "../../messaging/templates/TemplatesApi.ts"
import { endpoint, type Tool } from "../Action.ts"

export const MsgTemplates: Tool = {
  name: "msg_templates",
  description: "Message templates of the project's business accounts.",
  actions: [
    endpoint("list", MsgTemplatesApi.endpoints.list),
    endpoint("get", MsgTemplatesApi.endpoints.get),
    endpoint("create", MessagingProxyApi.endpoints.createTemplate, {
      fixed: { version: "v24.0" },
      description: "Create a template on `business_account_id`: the rest of params is the network's body " +
        "(`name`, `language`, `category`, `components`)"
    })
  ]
}
