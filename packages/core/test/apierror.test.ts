/**
 * Errors carry facts (which resource, which id; which field, why) beside their wire form, which stays
 * `{ "error": "..." }` with the optional fields it had.
 */
import { assert, describe, it } from "@effect/vitest"
import { Schema } from "effect"
import { invalid, NotFound, notFound, notFoundNamed, Unprocessable, unprocessable } from "../src/shared/ApiError.ts"

const wire = <A>(schema: Schema.Codec<A, unknown>, error: A) => JSON.parse(JSON.stringify(Schema.encodeUnknownSync(schema)(error)))

describe("ApiError", () => {
  it("notFound names the resource and the id, and encodes to the same body as before", () => {
    const error = notFound("Workflow", "wf-1")
    assert.strictEqual(error.resource, "Workflow")
    assert.strictEqual(error.id, "wf-1")
    assert.strictEqual(error.error, "Workflow not found")
    assert.deepStrictEqual(wire(NotFound, error), { error: "Workflow not found" })
    const named = notFoundNamed("Secret", "API_TOKEN")
    assert.deepStrictEqual([named.resource, named.id], ["Secret", "API_TOKEN"])
    assert.deepStrictEqual(wire(NotFound, named), { error: "Secret API_TOKEN not found" })
  })

  it("a validation refusal names the field and the reason, its body unchanged", () => {
    const error = invalid("name", "must be 1-200 characters")
    assert.deepStrictEqual([error.field, error.reason], ["name", "must be 1-200 characters"])
    assert.deepStrictEqual(wire(Unprocessable, error), { error: "name must be 1-200 characters" })
    const detailed = unprocessable("Name has already been taken", [{ path: "workflow.name", message: "has already been taken" }])
    assert.deepStrictEqual([detailed.field, detailed.reason], ["workflow.name", "has already been taken"])
    assert.deepStrictEqual(wire(Unprocessable, detailed), {
      error: "Name has already been taken",
      details: [{ path: "workflow.name", message: "has already been taken" }]
    })
    assert.isUndefined(unprocessable("Restore the workflow to draft first").field)
  })
})
