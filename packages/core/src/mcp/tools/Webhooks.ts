/** `webhooks`: the project's webhook registrations (decisions 4.6). */
import { WebhooksApi } from "../../webhooks/WebhooksApi.ts"
import { endpoint, type Tool } from "../Action.ts"

export const Webhooks: Tool = {
  name: "webhooks",
  description: "Webhook registrations of the project and its numbers.",
  actions: [
    endpoint("list", WebhooksApi.endpoints.list),
    endpoint("get", WebhooksApi.endpoints.get),
    endpoint("create", WebhooksApi.endpoints.create),
    endpoint("update", WebhooksApi.endpoints.update),
    endpoint("delete", WebhooksApi.endpoints.delete),
    endpoint("test", WebhooksApi.endpoints.test)
  ]
}
