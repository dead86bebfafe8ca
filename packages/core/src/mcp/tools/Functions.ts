/** `functions`: project functions (decisions 4.4). */
import { FunctionInvokeApi, FunctionsApi } from "../../functions/FunctionsApi.ts"
import { endpoint, type Tool } from "../Action.ts"

export const Functions: Tool = {
  name: "functions",
  description: "Functions: records, code, deploys, invocations.",
  actions: [
    endpoint("list", FunctionsApi.endpoints.list),
    endpoint("get", FunctionsApi.endpoints.get),
    endpoint("create", FunctionsApi.endpoints.create),
    endpoint("update", FunctionsApi.endpoints.update),
    endpoint("deploy", FunctionsApi.endpoints.deploy),
    endpoint("invoke", FunctionInvokeApi.endpoints.invoke),
    endpoint("invocations", FunctionsApi.endpoints.invocations)
  ]
}
