/**
 * The interactive forms (flows) of a business account: how the network reports one (`GET /<flow_id>`, always a
 * `DRAFT` here) and the metadata it lets a business change (`POST /<flow_id>`: name, categories, endpoint, app).
 */
import { Predicate } from "effect"
import { fail, type FlowRecord, ok, type Outcome, type SimState } from "./Model.ts"
import { simError } from "../../network/ErrorCodes.ts"

export const flowCategories = [
  "SIGN_UP",
  "SIGN_IN",
  "APPOINTMENT_BOOKING",
  "LEAD_GENERATION",
  "CONTACT_US",
  "CUSTOMER_SUPPORT",
  "SURVEY",
  "OTHER"
] as const

export const flowView = (flow: FlowRecord) => ({
  id: flow.id,
  name: flow.name,
  status: "DRAFT",
  categories: flow.categories,
  validation_errors: [],
  ...(flow.endpointUri !== undefined ? { endpoint_uri: flow.endpointUri } : {}),
  ...(flow.applicationId !== undefined ? { application: { id: flow.applicationId } } : {})
})

export const updateFlow = (state: SimState, flow: FlowRecord, body: unknown): Outcome => {
  if (!Predicate.isObject(body)) return fail(simError(100, "The request body must be a JSON object"))
  const { application_id, categories, endpoint_uri, name } = body
  if (name === undefined && categories === undefined && endpoint_uri === undefined && application_id === undefined) {
    return fail(simError(100, "Nothing to update: give name, categories, endpoint_uri or application_id"))
  }
  if (name !== undefined && (typeof name !== "string" || name.trim().length === 0)) {
    return fail(simError(100, "Param name must be a non-empty string"))
  }
  if (categories !== undefined) {
    const valid = Array.isArray(categories) && categories.length > 0 &&
      categories.every((c) => (flowCategories as ReadonlyArray<unknown>).includes(c))
    if (!valid) return fail(simError(100, `Param categories must be a non-empty array of {${flowCategories.join(", ")}}`))
  }
  if (
    endpoint_uri !== undefined &&
    (typeof endpoint_uri !== "string" || !URL.canParse(endpoint_uri) || !/^https?:/i.test(endpoint_uri))
  ) {
    return fail(simError(100, "Param endpoint_uri must be a valid URI"))
  }
  if (application_id !== undefined && typeof application_id !== "string") {
    return fail(simError(100, "Param application_id must be a string"))
  }
  if (typeof name === "string") flow.name = name
  if (Array.isArray(categories)) flow.categories = categories as Array<string>
  if (typeof endpoint_uri === "string") flow.endpointUri = endpoint_uri
  if (typeof application_id === "string") flow.applicationId = application_id
  state.touch("flow", flow.id)
  return ok({ success: true })
}
