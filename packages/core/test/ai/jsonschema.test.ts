import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { validateArguments } from "../../src/ai/tools/JsonSchema.ts"

const weather = {
  type: "object",
  required: ["city", "days"],
  additionalProperties: false,
  properties: {
    city: { type: "string", minLength: 2 },
    days: { type: "integer", minimum: 1, maximum: 14 },
    unit: { enum: ["c", "f"] },
    tags: { type: "array", items: { type: "string" } },
    when: { anyOf: [{ type: "string", format: "date" }, { type: "null" }] }
  }
}

const failure = (schema: unknown, value: unknown) => Effect.flip(validateArguments(schema, value))

describe("validateArguments", () => {
  it.effect("accepts matching arguments, and anything when there is no schema", () =>
    Effect.gen(function*() {
      yield* validateArguments(weather, { city: "Oslo", days: 3, unit: "c", tags: ["x"], when: null })
      yield* validateArguments(undefined, 42)
      yield* validateArguments(null, { any: "thing" })
      yield* validateArguments(true, "x")
    }))

  it.effect("names every failing path and why, in one message", () =>
    Effect.gen(function*() {
      const error = yield* failure(weather, { city: "A", days: 0, unit: "k", tags: ["ok", 3], extra: 1 })
      assert.strictEqual(error._tag, "ToolArgumentsInvalid")
      if (error._tag !== "ToolArgumentsInvalid") return
      assert.deepStrictEqual(error.violations.map((v) => v.path), ["/city", "/days", "/unit", "/tags/1", "/extra"])
      assert.strictEqual(
        error.message,
        "Invalid arguments: /city String is too short (1 < 2); /days 0 is less than 1; " +
          "/unit does not match any of [\"c\",\"f\"]; /tags/1 must be of type string (got number); /extra is not allowed here"
      )
    }))

  it.effect("a missing property is reported at its own path", () =>
    Effect.gen(function*() {
      const error = yield* failure(weather, {})
      assert.strictEqual(error.message, "Invalid arguments: /city is required; /days is required")
      const nested = yield* failure({ properties: { a: { required: ["b"] } } }, { a: {} })
      assert.strictEqual(nested.message, "Invalid arguments: /a/b is required")
    }))

  it.effect("alternatives report their own failure, not every branch's", () =>
    Effect.gen(function*() {
      const error = yield* failure(weather, { city: "Oslo", days: 2, when: 5 })
      assert.strictEqual(error._tag, "ToolArgumentsInvalid")
      if (error._tag !== "ToolArgumentsInvalid") return
      assert.deepStrictEqual(error.violations.map((v) => v.path), ["/when"])
    }))

  it.effect("lists at most eight failures", () =>
    Effect.gen(function*() {
      const error = yield* failure({ type: "array", items: { type: "string" } }, Array.from({ length: 11 }, (_, i) => i))
      assert.match(error.message, /; and 3 more$/)
      assert.strictEqual(error.message.split("; ").length, 9)
    }))

  it.effect("refuses a schema it cannot use, and leaves the schema untouched", () =>
    Effect.gen(function*() {
      assert.strictEqual((yield* failure("string", "x"))._tag, "ToolSchemaUnusable")
      assert.strictEqual((yield* failure([], "x"))._tag, "ToolSchemaUnusable")
      const unresolved = yield* failure({ $ref: "#/$defs/missing" }, 1)
      assert.strictEqual(unresolved._tag, "ToolSchemaUnusable")
      assert.match(unresolved.message, /^The tool's schema cannot be used: Unresolved \$ref/)
      const schema = { type: "object", properties: { a: { $ref: "#/$defs/n" } }, $defs: { n: { type: "number" } } }
      const copy = structuredClone(schema)
      yield* validateArguments(schema, { a: 1 })
      assert.deepStrictEqual(schema, copy)
    }))
})
