/** `guardrails`: opt-outs, quiet hours and frequency caps every send honours (issue 32 §1, §2). */
import { GuardrailsApi } from "../../guardrails/GuardrailsApi.ts"
import { endpoint, type Tool } from "../Action.ts"

export const Guardrails: Tool = {
  name: "guardrails",
  description: "Opt-outs of contacts, and the project's and numbers' guardrail settings (keywords, quiet hours, frequency caps).",
  actions: [
    endpoint("list_opt_outs", GuardrailsApi.endpoints.listOptOuts),
    endpoint("add_opt_out", GuardrailsApi.endpoints.addOptOut),
    endpoint("remove_opt_out", GuardrailsApi.endpoints.removeOptOut),
    endpoint("list_settings", GuardrailsApi.endpoints.listSettings),
    endpoint("set_settings", GuardrailsApi.endpoints.putSettings),
    endpoint("set_time_zone", GuardrailsApi.endpoints.setTimeZone),
    endpoint("clear_time_zone", GuardrailsApi.endpoints.clearTimeZone)
  ]
}
