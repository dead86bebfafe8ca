/** `events`: project events and their definitions (decisions 4.5). */
import { EventDefinitionsApi, EventsApi } from "../../events/EventsApi.ts"
import { endpoint, type Tool } from "../Action.ts"

export const Events: Tool = {
  name: "events",
  description: "Project events: list, emit, and their definitions.",
  actions: [
    endpoint("list", EventsApi.endpoints.list),
    endpoint("emit", EventsApi.endpoints.emit),
    endpoint("list_definitions", EventDefinitionsApi.endpoints.list)
  ]
}
