/** `webhooks`: the project's webhook registrations (decisions 4.6). */
import { endpoint, type Tool } from "../Action.ts"

export const Webhooks: Tool = {
  name: "webhooks",
  description: "Webhook registrations of the project and its numbers.",
  actions: [
    endpoint("list", "webhooks.list"),
    endpoint("get", "webhooks.get"),
    endpoint("create", "webhooks.create"),
    endpoint("update", "webhooks.update"),
    endpoint("delete", "webhooks.delete"),
    endpoint("test", "webhooks.test")
  ]
}
