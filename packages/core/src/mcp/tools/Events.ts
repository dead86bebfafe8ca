/** `events`: project events and their definitions (decisions 4.5). */
import { endpoint, type Tool } from "../Action.ts"

export const Events: Tool = {
  name: "events",
  description: "Project events: list, emit, and their definitions.",
  actions: [
    endpoint("list", "events.list"),
    endpoint("emit", "events.emit"),
    endpoint("list_definitions", "eventDefinitions.list")
  ]
}
