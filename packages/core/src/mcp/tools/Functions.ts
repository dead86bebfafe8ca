/** `functions`: project functions (decisions 4.4). */
import { endpoint, type Tool } from "../Action.ts"

export const Functions: Tool = {
  name: "functions",
  description: "Functions: records, code, deploys, invocations.",
  actions: [
    endpoint("list", "functions.list"),
    endpoint("get", "functions.get"),
    endpoint("create", "functions.create"),
    endpoint("update", "functions.update"),
    endpoint("deploy", "functions.deploy"),
    endpoint("invoke", "functionInvoke.invoke"),
    endpoint("invocations", "functions.invocations")
  ]
}
