/**
 * Checking a model's tool arguments against the tool's JSON Schema (`input_schema` of function tools, `body_schema`
 * of webhook tools; decisions 2.3.9, 10.6) with a real validator (`@cfworker/json-schema`, draft 2020-12). A
 * failure names each failing path and why, in one short message the model can act on in its next call.
 */
import { type OutputUnit, type Schema as JsonSchemaObject, Validator } from "@cfworker/json-schema"
import { Effect, Predicate, Schema } from "effect"

export interface SchemaViolation {
  /** JSON Pointer into the arguments, `/` for the whole value. */
  readonly path: string
  readonly reason: string
}

/** The arguments do not match the schema. `message` is what the model is told. */
export class ToolArgumentsInvalid extends Schema.TaggedError<ToolArgumentsInvalid>()("ToolArgumentsInvalid", {
  violations: Schema.Array(Schema.Struct({ path: Schema.String, reason: Schema.String })),
  message: Schema.String
}) {}

/** The schema itself cannot be used (not a schema, an unresolvable `$ref`, a bad `pattern`). */
export class ToolSchemaUnusable extends Schema.TaggedError<ToolSchemaUnusable>()("ToolSchemaUnusable", {
  message: Schema.String
}) {}

/** At most this many violations are listed; a model fixes the first ones and tries again. */
const MAX_LISTED = 8

// Keywords whose failure only says "something below failed"; the failures below say what.
const SUMMARIES = new Set([
  "properties",
  "patternProperties",
  "additionalProperties",
  "unevaluatedProperties",
  "items",
  "prefixItems",
  "additionalItems",
  "unevaluatedItems",
  "allOf",
  "$ref",
  "$recursiveRef",
  "dependentSchemas",
  "if",
  "then",
  "else"
])

// Inside `anyOf`/`oneOf` every branch fails somewhere; the keyword's own failure is the useful one.
const inAlternative = /\/(?:anyOf|oneOf)\/\d+\//

const pointer = (instanceLocation: string): string => instanceLocation === "#" ? "/" : instanceLocation.slice(1)

const violation = (unit: OutputUnit): SchemaViolation => {
  const path = pointer(unit.instanceLocation)
  if (unit.keyword === "required") {
    const name = /required property "(.*)"/.exec(unit.error)?.[1]
    if (name !== undefined) return { path: `${path === "/" ? "" : path}/${name}`, reason: "is required" }
  }
  if (unit.keyword === "type") {
    const types = /type "(.*)" is invalid\. Expected (.*)\.$/.exec(unit.error)
    if (types !== null) return { path, reason: `must be of type ${types[2]!.replaceAll("\"", "")} (got ${types[1]})` }
  }
  if (unit.keyword === "false") return { path, reason: "is not allowed here" }
  return { path, reason: unit.error.replace(/^Instance /, "").replace(/\.$/, "") }
}

/** The failures of a validation that matter to whoever fixes the value: the leaves, not their summaries. */
const violations = (units: ReadonlyArray<OutputUnit>): Array<SchemaViolation> =>
  units.filter((u) => !SUMMARIES.has(u.keyword) && !inAlternative.test(u.keywordLocation)).map(violation)

const describe = (list: ReadonlyArray<SchemaViolation>): string => {
  const shown = list.slice(0, MAX_LISTED).map((v) => `${v.path} ${v.reason}`)
  const more = list.length > MAX_LISTED ? `; and ${list.length - MAX_LISTED} more` : ""
  return `Invalid arguments: ${shown.join("; ")}${more}`
}

/**
 * Checks `value` against `schema` (a JSON Schema object or boolean; absent means anything goes). The schema is
 * copied first: the validator annotates the object it is given, and this one belongs to a node's configuration.
 */
export const validateArguments = (
  schema: unknown,
  value: unknown
): Effect.Effect<void, ToolArgumentsInvalid | ToolSchemaUnusable> => {
  if (schema === undefined || schema === null) return Effect.void
  if (!Predicate.isBoolean(schema) && !(Predicate.isObject(schema) && !Array.isArray(schema))) {
    return Effect.fail(new ToolSchemaUnusable({ message: "The tool's schema is not a JSON Schema object" }))
  }
  return Effect.try({
    try: () => new Validator(structuredClone(schema) as JsonSchemaObject | boolean, "2020-12", false).validate(value),
    catch: (cause) => new ToolSchemaUnusable({ message: `The tool's schema cannot be used: ${String((cause as Error).message ?? cause).split("\n")[0]}` })
  }).pipe(Effect.flatMap((result) => {
    if (result.valid) return Effect.void
    const list = violations(result.errors)
    // Every failure was a summary (e.g. `false` as the whole schema): say so rather than nothing.
    const shown = list.length > 0 ? list : [{ path: "/", reason: "does not match the schema" }]
    return Effect.fail(new ToolArgumentsInvalid({ violations: shown, message: describe(shown) }))
  }))
}
