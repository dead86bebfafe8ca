/** `customers`: the Platform API's customers (decisions 4.8). */
import { endpoint, type Tool } from "../Action.ts"

export const Customers: Tool = {
  name: "customers",
  description: "The project's customers (the businesses whose numbers it connects).",
  actions: [
    endpoint("list", "customers.list"),
    endpoint("get", "customers.get"),
    endpoint("create", "customers.create"),
    endpoint("update", "customers.update"),
    endpoint("delete", "customers.delete")
  ]
}
