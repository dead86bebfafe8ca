/** The request-text scan: NUL characters, unpaired surrogates and nesting depth, named by field, in one linear pass. */
import { assert, describe, it } from "@effect/vitest"
import { describeTextProblem, jsonTextProblem, MAX_JSON_DEPTH, stringProblem } from "../src/shared/JsonText.ts"

const problem = (text: string) => {
  const found = jsonTextProblem(text)
  return found === undefined ? undefined : describeTextProblem(found).message
}

describe("jsonTextProblem", () => {
  it("accepts ordinary JSON, escapes and paired surrogates", () => {
    assert.isUndefined(problem(JSON.stringify({ a: "x\n\"y\\", b: [1, { c: "😀" }], d: "\ud83d\ude00" })))
    assert.isUndefined(problem(`{"a":"\\ud83d\\ude00","b":"\\u00e9\\\\u0000"}`), "an escaped backslash before u0000 is not an escape")
  })

  it("names the field holding a NUL character", () => {
    assert.strictEqual(problem(JSON.stringify({ workflow: { name: "a\u0000b" } })), "workflow.name contains a NUL character")
    assert.strictEqual(problem(JSON.stringify({ items: ["ok", { x: ["y", "z\u0000"] }] })), "items.1.x.1 contains a NUL character")
    assert.strictEqual(problem(JSON.stringify({ "bad\u0000key": 1 })), "body contains a NUL character")
    assert.strictEqual(problem(JSON.stringify("\u0000")), "body contains a NUL character")
  })

  it("names the field holding an unpaired surrogate", () => {
    assert.strictEqual(problem(`{"workflow":{"name":"a\\ud800b"}}`), "workflow.name contains an unpaired surrogate")
    assert.strictEqual(problem(`{"a":"\\udc00"}`), "a contains an unpaired surrogate")
    assert.strictEqual(problem(`{"a":"\\ud800"}`), "a contains an unpaired surrogate")
    assert.strictEqual(problem(`{"a":"\\ud800\\ud800"}`), "a contains an unpaired surrogate")
  })

  it("refuses nesting deeper than the limit without recursion", () => {
    assert.isUndefined(problem("[".repeat(MAX_JSON_DEPTH) + "]".repeat(MAX_JSON_DEPTH)))
    assert.strictEqual(problem("[".repeat(MAX_JSON_DEPTH + 1) + "]".repeat(MAX_JSON_DEPTH + 1)), `JSON nests deeper than ${MAX_JSON_DEPTH} levels`)
    const deep = "{\"a\":".repeat(100_000) + "1" + "}".repeat(100_000)
    assert.strictEqual(problem(deep), `JSON nests deeper than ${MAX_JSON_DEPTH} levels`)
  })

  it("ignores brackets inside strings and never throws on malformed text", () => {
    assert.isUndefined(problem(JSON.stringify({ a: "[".repeat(1000) })))
    assert.isUndefined(problem("{\"a\":\"unterminated"))
    assert.isUndefined(problem("]]]}}}"))
  })
})

describe("stringProblem", () => {
  it("finds NULs and unpaired surrogates in decoded values", () => {
    assert.deepStrictEqual(stringProblem("a\u0000", "name_contains"), { _tag: "Nul", path: "name_contains" })
    assert.deepStrictEqual(stringProblem("a\ud800", "q"), { _tag: "Surrogate", path: "q" })
    assert.isUndefined(stringProblem("😀 ok", "q"))
  })
})
