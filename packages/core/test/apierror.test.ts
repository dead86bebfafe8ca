/** Errors carry facts (which resource, which id) beside their wire form, which stays `{ "error": "..." }`. */
import { assert, describe, it } from "@effect/vitest"
import { Schema } from "effect"
import { NotFound, notFound } from "../src/shared/ApiError.ts"

describe("ApiError", () => {
  it("notFound names the resource and the id, and encodes to the same body as before", () => {
    const error = notFound("Workflow", "wf-1")
    assert.strictEqual(error.resource, "Workflow")
    assert.strictEqual(error.id, "wf-1")
    assert.strictEqual(error.error, "Workflow not found")
    assert.deepStrictEqual(Schema.encodeUnknownSync(NotFound)(error), { error: "Workflow not found" })
    assert.deepStrictEqual(JSON.parse(JSON.stringify(Schema.encodeUnknownSync(NotFound)(notFound("Media")))), { error: "Media not found" })
    assert.isUndefined(notFound("Media").id)
  })
})
