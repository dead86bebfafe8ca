/** `logs`: log search over API requests, upstream events, step events and deliveries (decisions 4.7). */
import { LogSearchApi } from "../../logs/LogSearchApi.ts"
import { endpoint, type Tool } from "../Action.ts"

export const Logs: Tool = {
  name: "logs",
  description: "Searches the project's logs: API requests, upstream webhook events, workflow steps, webhook deliveries.",
  actions: [
    // The POST form: it alone takes `filters`.
    endpoint("search", LogSearchApi.endpoints.searchPost),
    endpoint("catalog", LogSearchApi.endpoints.catalog)
  ]
}
