/**
 * An example for every operation of the document: each JSON request body and each JSON answer without one gets a
 * value built from its own schema (so it always conforms, and a new endpoint has one without anyone writing it),
 * with realistic values chosen by the field's name (`*_at` a date-time, `phone_number_id` the sandbox number's id,
 * `*_url` a URL). Request bodies show the required fields only where there are some (what a first call needs);
 * answers show every field.
 */
import { Predicate } from "effect"

import { SANDBOX_BUSINESS_ACCOUNT_ID, SANDBOX_PHONE_NUMBER_ID } from "../http/RequestExamples.ts"

type Spec = Record<string, any>

const AT = "2026-11-24T09:30:00.000Z"
const UUID = "0193f1c2-7b4e-7a10-9c3d-5e6f7a8b9c0d"

/** Values by field name, tried before the type's generic one (each checked against the schema's type). */
const byName = (name: string): unknown => {
  if (name === "phone_number_id") return SANDBOX_PHONE_NUMBER_ID
  if (name === "waba_id" || name === "business_account_id") return SANDBOX_BUSINESS_ACCOUNT_ID
  if (name === "wa_id") return "15551234567"
  if (/(^|_)(phone_number|to|from|display_phone_number)$/.test(name)) return "+15551234567"
  if (name === "id" || name.endsWith("_id")) return UUID
  if (name.endsWith("_at") || name === "timestamp" || name === "since" || name === "until") return AT
  if (name === "url" || name.endsWith("_url")) return "https://example.com/hooks/parley"
  if (name === "email") return "ops@example.com"
  if (name === "slug") return "support-bot"
  if (name === "description") return "Answers questions on the support number"
  if (name === "name") return "Support bot"
  if (name === "language") return "en"
  if (name === "text" || name === "body" || name === "message") return "Hello! How can we help?"
  return undefined
}

const MAX_DEPTH = 8

const resolve = (schema: Spec, components: Spec): Spec => {
  let current = schema
  for (let hops = 0; typeof current?.$ref === "string" && hops < 16; hops++) {
    current = components[current.$ref.replace("#/components/schemas/", "")] ?? {}
  }
  return current ?? {}
}

const clampNumber = (schema: Spec, preferred: number): number => {
  let value = preferred
  if (typeof schema.minimum === "number") value = Math.max(value, schema.minimum)
  if (typeof schema.exclusiveMinimum === "number") value = Math.max(value, schema.exclusiveMinimum + 1)
  if (typeof schema.maximum === "number") value = Math.min(value, schema.maximum)
  if (typeof schema.exclusiveMaximum === "number") value = Math.min(value, schema.exclusiveMaximum - 1)
  return schema.type === "integer" ? Math.ceil(value) : value
}

const fitString = (schema: Spec, value: string): string => {
  const min = typeof schema.minLength === "number" ? schema.minLength : 0
  const max = typeof schema.maxLength === "number" ? schema.maxLength : Infinity
  const padded = value.length < min ? value + "x".repeat(min - value.length) : value
  return padded.slice(0, max)
}

const typeOf = (schema: Spec): string | undefined =>
  Array.isArray(schema.type) ? schema.type.find((t: string) => t !== "null") : schema.type

const conforms = (schema: Spec, value: unknown): boolean => {
  const type = typeOf(schema)
  if (type === "string") return typeof value === "string"
  if (type === "integer") return Number.isInteger(value)
  if (type === "number") return typeof value === "number"
  if (type === "boolean") return typeof value === "boolean"
  return type === undefined && value !== undefined
}

/** A value of `schema`; `name` is the property it fills, if any; `requiredOnly` trims optional request fields. */
export const exampleOf = (
  schema: Spec,
  components: Spec,
  options: { readonly name?: string; readonly requiredOnly?: boolean; readonly depth?: number } = {}
): unknown => {
  const s = resolve(schema, components)
  const depth = options.depth ?? 0
  if ("example" in s) return s.example
  if (Array.isArray(s.examples) && s.examples.length > 0) return s.examples[0]
  if ("const" in s) return s.const
  if (Array.isArray(s.enum) && s.enum.length > 0) return s.enum.find((v: unknown) => v !== null) ?? s.enum[0]
  if ("default" in s) return s.default
  const union = s.anyOf ?? s.oneOf
  if (Array.isArray(union) && union.length > 0) {
    const options_ = union.filter((member: Spec) => resolve(member, components).type !== "null")
    return exampleOf(options_[0] ?? union[0], components, options)
  }
  if (Array.isArray(s.allOf) && s.allOf.length > 0) {
    const { allOf, ...own } = s
    const base = exampleOf(own, components, options)
    const members = allOf.map((member: Spec) => exampleOf(member, components, options))
    // Objects merge; a scalar comes from the members, which carry the constraints (an `enum` on a string).
    return [base, ...members].every(Predicate.isObject)
      ? Object.assign({}, base, ...members)
      : members.find((m: unknown) => !Predicate.isObject(m)) ?? base
  }
  const named = options.name === undefined ? undefined : byName(options.name)
  if (named !== undefined && conforms(s, named)) {
    return typeof named === "string" ? fitString(s, named) : named
  }
  switch (typeOf(s)) {
    case "string":
      return fitString(s, s.format === "date-time" ? AT : s.format === "uri" ? "https://example.com" : "example")
    case "integer":
    case "number":
      return clampNumber(s, 1)
    case "boolean":
      return true
    case "null":
      return null
    case "array": {
      if (depth >= MAX_DEPTH) return []
      const count = Math.max(1, typeof s.minItems === "number" ? s.minItems : 1)
      if (typeof s.maxItems === "number" && s.maxItems === 0) return []
      const item = exampleOf(s.items ?? {}, components, { ...options, depth: depth + 1 })
      return Array.from({ length: count }, () => item)
    }
    case "object":
    default: {
      const properties: Spec = s.properties ?? {}
      const required: ReadonlyArray<string> = Array.isArray(s.required) ? s.required : []
      if (depth >= MAX_DEPTH) return {}
      const keys = options.requiredOnly === true && required.length > 0 ? required : Object.keys(properties)
      return Object.fromEntries(
        keys.filter((key) => key in properties).map((key) => [
          key,
          exampleOf(properties[key], components, { ...options, name: key, depth: depth + 1 })
        ])
      )
    }
  }
}

/** What a refusal at each status typically says (decisions 7.1, 7.2). */
const ERROR_MESSAGES: Record<string, string> = {
  "400": "Request body is not valid JSON",
  "401": "Invalid API key",
  "402": "Project events are not included in the project's plan",
  "403": "Source address is private",
  "404": "Workflow not found",
  "409": "lock_version is stale; reload and retry",
  "408": "Request timeout",
  "413": "Request body is over 10 MB",
  "422": "name is required",
  "429": "Rate limit exceeded",
  "431": "Request headers are too large",
  "500": "Internal error",
  "502": "The network could not be reached",
  "503": "Not ready: starting"
}

const example = (schema: Spec, components: Spec, status: string | undefined, requiredOnly: boolean): unknown => {
  const message = status === undefined ? undefined : ERROR_MESSAGES[status]
  const errorField = resolve(schema, components).properties?.error
  return message !== undefined && errorField !== undefined && typeOf(resolve(errorField, components)) === "string"
    ? { error: message }
    : exampleOf(schema, components, { requiredOnly })
}

const withJsonExample = (
  content: Spec | undefined,
  components: Spec,
  status: string | undefined,
  requiredOnly: boolean
): Spec | undefined => {
  const json = content?.["application/json"]
  if (json?.schema === undefined || "example" in json || "examples" in json) return content
  return { ...content, "application/json": { ...json, example: example(json.schema, components, status, requiredOnly) } }
}

/** `op` with an example on its JSON request body and on each JSON answer that has none. */
export const withExamples = (op: Spec, components: Spec): Spec => ({
  ...op,
  ...(op.requestBody === undefined
    ? {}
    : { requestBody: { ...op.requestBody, content: withJsonExample(op.requestBody.content, components, undefined, true) } }),
  responses: Object.fromEntries(
    Object.entries(op.responses ?? {}).map(([status, response]: [string, any]) => [
      status,
      response?.content === undefined ? response : { ...response, content: withJsonExample(response.content, components, status, false) }
    ])
  )
})
