/** `customers`: the Platform API's customers (decisions 4.8). */
import { CustomersApi } from "../../tenancy/CustomersApi.ts"
import { endpoint, type Tool } from "../Action.ts"

export const Customers: Tool = {
  name: "customers",
  description: "The project's customers (the businesses whose numbers it connects).",
  actions: [
    endpoint("list", CustomersApi.endpoints.list),
    endpoint("get", CustomersApi.endpoints.get),
    endpoint("create", CustomersApi.endpoints.create),
    endpoint("update", CustomersApi.endpoints.update),
    endpoint("delete", CustomersApi.endpoints.delete)
  ]
}
