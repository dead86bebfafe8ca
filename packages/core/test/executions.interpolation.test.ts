import { assert, describe, it } from "@effect/vitest"
import { Effect, Result } from "effect"
import {
  CONTEXT_MAX_BYTES,
  contextBytes,
  contextTooLarge,
  convertValue,
  type ExecutionContext,
  interpolateText,
  interpolateValue,
  isValidVariableName,
  referencedPaths,
  resolvePath,
  type Secrets,
  secretsUsed,
  UnknownEnvironmentVariable,
  ValueConversionFailed,
  VARIABLE_NAME,
  withMoreVars
} from "../src/executions/Interpolation.ts"
import {
  cutUtf8,
  PAYLOAD_MAX_BYTES,
  shapePayload,
  STRING_MAX_BYTES,
  utf8Length
} from "../src/executions/StepLog.ts"

// ---------------------------------------------------------------------------
// Fixtures
// ---------------------------------------------------------------------------

const ctx: ExecutionContext = {
  vars: {
    name: "Ada",
    count: 3,
    price: 2.5,
    vip: true,
    off: false,
    nothing: null,
    empty: "",
    items: [{ name: "tea", qty: 2 }, { name: "cake", qty: 1 }],
    nested: { a: { b: "deep" } },
    tags: ["x", "y"],
    raw_secret_ref: "${ENV:API_KEY}",
    raw_placeholder: "{{vars.name}}",
    "first-name": "unreachable",
    context: "a variable named context"
  },
  system: { workflow_id: "wf-1", flow_id: "wf-1", observer: false, msg_config: { id: "mc-1", kind: "live" } },
  context: { channel: "msg", phone_number: "+15550100", contact: { name: "Grace", profile_name: "G" } },
  metadata: { request: { ip: "203.0.113.9" } }
}

const secrets: Secrets = new Map([
  ["API_KEY", "sk-live-123"],
  ["TOKEN", "tok_abc"],
  ["TRICKY", "{{vars.name}}"],
  ["EMPTY", ""]
])

const noSecrets: Secrets = new Map()

const text = (template: string, c: ExecutionContext = ctx, s: Secrets = secrets) => interpolateText(template, c, s)
const value = (v: unknown, c: ExecutionContext = ctx, s: Secrets = secrets) => interpolateValue(v, c, s)

const bytesOf = (v: unknown): number => new TextEncoder().encode(JSON.stringify(v)).length

// ---------------------------------------------------------------------------
// interpolateText
// ---------------------------------------------------------------------------

describe("interpolateText", () => {
  it.effect("substitutes each namespace", () =>
    Effect.gen(function*() {
      assert.strictEqual(
        yield* text("{{vars.name}}|{{system.workflow_id}}|{{context.channel}}|{{metadata.request.ip}}"),
        "Ada|wf-1|msg|203.0.113.9"
      )
    }))

  it.effect("allows spaces and newlines inside the braces", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* text("Hi {{ vars.nested.a.b }} and {{\n  vars.name\t}}!"), "Hi deep and Ada!")
    }))

  it.effect("reads a bare name, and an unknown first segment, from vars", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* text("{{name}} {{ nested.a.b }}"), "Ada deep")
      assert.strictEqual(yield* text("[{{foo.bar}}]", { ...ctx, vars: { foo: { bar: "baz" } } }), "[baz]")
      // A namespace name wins over a variable of the same name; vars. reaches it.
      assert.strictEqual(yield* text("{{vars.context}}"), "a variable named context")
      assert.strictEqual(yield* text("{{context.channel}}"), "msg")
    }))

  it.effect("indexes arrays with numeric segments", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* text("{{vars.items.0.name}}/{{items.1.qty}}/{{tags.1}}"), "tea/1/y")
      // Non-canonical or out-of-range indexes and non-index keys are missing.
      assert.strictEqual(yield* text("[{{vars.items.00.name}}][{{vars.items.9}}][{{vars.tags.length}}]"), "[][][]")
    }))

  it.effect("renders a missing path and null as an empty string", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* text("[{{vars.missing}}][{{vars.name.first}}][{{system.nope.deeper}}]"), "[][][]")
      assert.strictEqual(yield* text("[{{vars.nothing}}][{{vars.empty}}]"), "[][]")
    }))

  it.effect("does not read inherited properties or index into strings", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* text("[{{vars.constructor}}][{{vars.name.length}}][{{vars.name.0}}]"), "[][][]")
      assert.strictEqual(yield* text("[{{vars.__proto__}}][{{vars.toString}}]"), "[][]")
    }))

  it.effect("renders numbers and booleans as JSON text", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* text("{{count}} {{price}} {{vip}} {{off}}"), "3 2.5 true false")
    }))

  it.effect("renders objects, arrays and whole namespaces as compact JSON", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* text("items={{vars.items}}"), `items=[{"name":"tea","qty":2},{"name":"cake","qty":1}]`)
      assert.strictEqual(yield* text("n={{ nested }}"), `n={"a":{"b":"deep"}}`)
      assert.strictEqual(yield* text("{{metadata}}"), `{"request":{"ip":"203.0.113.9"}}`)
      assert.strictEqual(yield* text("{{vars}}", { ...ctx, vars: { a: 1 } }), `{"a":1}`)
    }))

  it.effect("renders an escaped \\{{ as a literal {{", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* text("\\{{vars.name}}"), "{{vars.name}}")
      assert.strictEqual(yield* text("a \\{{ b {{name}}"), "a {{ b Ada")
      assert.strictEqual(yield* text("\\{{ name }} is {{ name }}"), "{{ name }} is Ada")
    }))

  it.effect("leaves what is not a placeholder as written", () =>
    Effect.gen(function*() {
      for (
        const t of [
          "{{}}",
          "{{ }}",
          "{{ name",
          "open {{ and never closed",
          "{{1}} is a network template variable",
          "{{vars..x}}",
          "{{vars.}}",
          "{{.x}}",
          "{{a b}}",
          "{{ vars.name }",
          "{vars.name}",
          "}}",
          "{{vars.first name}}"
        ]
      ) {
        assert.strictEqual(yield* text(t), t)
      }
    }))

  it.effect("finds a placeholder inside extra braces", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* text("{{{vars.name}}}"), "{Ada}")
      assert.strictEqual(yield* text(`{"a": {{count}}}`), `{"a": 3}`)
      assert.strictEqual(yield* text("{{ {{name}}"), "{{ Ada")
    }))

  it.effect("accepts hyphens in later segments only", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* text("{{context.contact-info}}", { ...ctx, context: { "contact-info": "ok" } }), "ok")
      assert.strictEqual(yield* text("{{first-name}}"), "{{first-name}}")
    }))

  it.effect("substitutes ENV secrets", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* text("Bearer ${ENV:API_KEY}"), "Bearer sk-live-123")
      assert.strictEqual(yield* text("${ENV:API_KEY}:${ENV:TOKEN}"), "sk-live-123:tok_abc")
      assert.strictEqual(yield* text("[${ENV:EMPTY}]"), "[]")
    }))

  it.effect("fails on an unknown ENV name with the spec's message", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(text("x ${ENV:MISSING} {{name}}"))
      assert.instanceOf(error, UnknownEnvironmentVariable)
      assert.strictEqual(error._tag, "UnknownEnvironmentVariable")
      assert.strictEqual(error.name, "MISSING")
      assert.strictEqual(error.message, "Unknown environment variable MISSING")
      // Names are case-sensitive.
      const lower = yield* Effect.flip(text("${ENV:api_key}"))
      assert.strictEqual(lower.name, "api_key")
    }))

  it.effect("leaves malformed ENV references as written", () =>
    Effect.gen(function*() {
      for (const t of ["${ENV:}", "${ENV: API_KEY}", "${ENV:API-KEY}", "${ENV:API_KEY", "$ENV:API_KEY", "${env:API_KEY}"]) {
        assert.strictEqual(yield* text(t, ctx, noSecrets), t)
      }
    }))

  it.effect("does not re-scan a secret's value", () =>
    Effect.gen(function*() {
      // TRICKY's value is "{{vars.name}}": it stays literal.
      assert.strictEqual(yield* text("${ENV:TRICKY} / {{name}}"), "{{vars.name}} / Ada")
    }))

  it.effect("does not re-scan a variable's value (no secret leaks through user data)", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* text("{{raw_secret_ref}}"), "${ENV:API_KEY}")
      assert.strictEqual(yield* text("{{raw_placeholder}}"), "{{vars.name}}")
      // Even when the project has no secret by that name: nothing fails.
      assert.strictEqual(yield* text("{{raw_secret_ref}}", ctx, noSecrets), "${ENV:API_KEY}")
    }))

  it.effect("does not build a placeholder out of a secret", () =>
    Effect.gen(function*() {
      const c = { ...ctx, vars: { ...ctx.vars, "tok_abc": "should not be read" } }
      assert.strictEqual(yield* text("{{vars.${ENV:TOKEN}}}", c), "{{vars.tok_abc}}")
    }))

  it.effect("keeps text without placeholders unchanged", () =>
    Effect.gen(function*() {
      for (const t of ["", "plain", "a $ sign, a { brace } and \\ backslash", "emoji 🎉 ünïcode"]) {
        assert.strictEqual(yield* text(t), t)
      }
    }))
})

// ---------------------------------------------------------------------------
// interpolateValue
// ---------------------------------------------------------------------------

describe("interpolateValue", () => {
  it.effect("keeps the raw value of a string that is exactly one placeholder", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* value("{{count}}"), 3)
      assert.strictEqual(yield* value("{{vars.vip}}"), true)
      assert.strictEqual(yield* value("{{ vars.nothing }}"), null)
      assert.deepStrictEqual(yield* value("{{vars.items.0}}"), { name: "tea", qty: 2 })
      assert.deepStrictEqual(yield* value("{{tags}}"), ["x", "y"])
      assert.deepStrictEqual(yield* value("{{system}}"), ctx.system)
    }))

  it.effect("ignores whitespace around the one placeholder", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* value("  {{count}}\n"), 3)
    }))

  it.effect("gives null for a missing single placeholder and \"\" inside text", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* value("{{vars.missing}}"), null)
      assert.strictEqual(yield* value("x{{vars.missing}}"), "x")
    }))

  it.effect("renders other strings as text", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* value("{{count}} items"), "3 items")
      assert.strictEqual(yield* value("{{count}}{{count}}"), "33")
      assert.strictEqual(yield* value("\\{{count}}"), "{{count}}")
      assert.strictEqual(yield* value("${ENV:TOKEN}"), "tok_abc")
      assert.strictEqual(yield* value("{{raw_placeholder}}"), "{{vars.name}}")
    }))

  it.effect("recurses into objects and arrays, keeping keys as written", () =>
    Effect.gen(function*() {
      const body = {
        "{{name}}": "{{name}}",
        user: { name: "{{context.contact.name}}", total: "{{count}}", tags: ["{{tags.0}}", "t-{{tags.1}}", 7] },
        auth: "Bearer ${ENV:API_KEY}",
        n: 1,
        b: false,
        z: null
      }
      assert.deepStrictEqual(yield* value(body), {
        "{{name}}": "Ada",
        user: { name: "Grace", total: 3, tags: ["x", "t-y", 7] },
        auth: "Bearer sk-live-123",
        n: 1,
        b: false,
        z: null
      })
    }))

  it.effect("returns a new value and leaves the input alone", () =>
    Effect.gen(function*() {
      const body = { a: ["{{name}}"] }
      const out = yield* value(body)
      assert.notStrictEqual(out, body)
      assert.deepStrictEqual(body, { a: ["{{name}}"] })
    }))

  it.effect("keeps a __proto__ key as an own key", () =>
    Effect.gen(function*() {
      const body = JSON.parse(`{"__proto__": "{{name}}"}`)
      const out = (yield* value(body)) as Record<string, unknown>
      assert.isTrue(Object.hasOwn(out, "__proto__"))
      assert.strictEqual(out["__proto__"], "Ada")
    }))

  it.effect("keeps non-strings unchanged", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* value(42), 42)
      assert.strictEqual(yield* value(true), true)
      assert.strictEqual(yield* value(null), null)
    }))

  it.effect("fails on an unknown ENV name anywhere in the value", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(value({ headers: { a: "ok", b: ["${ENV:NOPE}"] } }))
      assert.strictEqual(error.message, "Unknown environment variable NOPE")
    }))
})

// ---------------------------------------------------------------------------
// resolvePath, secretsUsed, referencedPaths
// ---------------------------------------------------------------------------

describe("resolvePath", () => {
  it("reads namespaced, bare and indexed paths", () => {
    assert.strictEqual(resolvePath(ctx, "vars.items.0.name"), "tea")
    assert.strictEqual(resolvePath(ctx, "name"), "Ada")
    assert.strictEqual(resolvePath(ctx, "system.msg_config.kind"), "live")
    assert.deepStrictEqual(resolvePath(ctx, "context"), ctx.context)
    assert.strictEqual(resolvePath(ctx, "vars.nothing"), null)
  })

  it("gives undefined when missing or not a path", () => {
    assert.isUndefined(resolvePath(ctx, "vars.missing"))
    assert.isUndefined(resolvePath(ctx, "vars.items.5.name"))
    assert.isUndefined(resolvePath(ctx, ""))
    assert.isUndefined(resolvePath(ctx, "vars..name"))
    assert.isUndefined(resolvePath(ctx, " name"))
    assert.isUndefined(resolvePath(ctx, "vars.constructor"))
  })
})

describe("secretsUsed", () => {
  it("collects the values of referenced ENV names, recursively and once each", () => {
    const template = {
      url: "https://x.test/?k=${ENV:API_KEY}",
      headers: { a: "${ENV:TOKEN}", b: ["${ENV:API_KEY}"] },
      n: 5
    }
    assert.deepStrictEqual(secretsUsed(template, secrets), ["sk-live-123", "tok_abc"])
  })

  it("skips unknown names, empty values, keys and non-references", () => {
    assert.deepStrictEqual(secretsUsed({ "${ENV:TOKEN}": "${ENV:EMPTY} ${ENV:NOPE} {{name}} ENV:API_KEY" }, secrets), [])
    assert.deepStrictEqual(secretsUsed("${ENV:TOKEN}", noSecrets), [])
  })

  it("sees ENV references inside what is not a runtime placeholder", () => {
    assert.deepStrictEqual(secretsUsed("{{vars.${ENV:TOKEN}}}", secrets), ["tok_abc"])
  })
})

describe("referencedPaths", () => {
  it("lists namespaced paths once, in order of first reference", () => {
    const value = {
      message: "Hi {{ user_name }}, {{context.contact.name}}!",
      nested: ["{{vars.user_name}}", { deep: "{{system.flow_id}} {{ vars }}" }],
      n: 1
    }
    assert.deepStrictEqual(referencedPaths(value), [
      "vars.user_name",
      "context.contact.name",
      "system.flow_id",
      "vars"
    ])
  })

  it("ignores escaped, malformed and ENV references and keys", () => {
    assert.deepStrictEqual(referencedPaths({ "{{key}}": "\\{{a}} {{}} {{1}} ${ENV:TOKEN} {{vars.${ENV:TOKEN}}}" }), [])
  })
})

// ---------------------------------------------------------------------------
// convertValue
// ---------------------------------------------------------------------------

const converted = (v: unknown, t: "string" | "number" | "boolean" | "json") => convertValue(v, t)
const conversionError = (v: unknown, t: "string" | "number" | "boolean" | "json") => Effect.flip(convertValue(v, t))

describe("convertValue", () => {
  it.effect("string keeps strings and structured values, writes scalars as text", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* converted("abc", "string"), "abc")
      assert.strictEqual(yield* converted(12.5, "string"), "12.5")
      assert.strictEqual(yield* converted(false, "string"), "false")
      assert.strictEqual(yield* converted(null, "string"), null)
      assert.deepStrictEqual(yield* converted({ a: 1 }, "string"), { a: 1 })
    }))

  it.effect("number parses decimals", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* converted("42", "number"), 42)
      assert.strictEqual(yield* converted(" -3.25 ", "number"), -3.25)
      assert.strictEqual(yield* converted("+.5", "number"), 0.5)
      assert.strictEqual(yield* converted("1e3", "number"), 1000)
      assert.strictEqual(yield* converted(7, "number"), 7)
    }))

  it.effect("number refuses what is not a decimal", () =>
    Effect.gen(function*() {
      for (const bad of ["", " ", "abc", "12abc", "0x10", "Infinity", "NaN", "1,5", "1e999", true, null, { a: 1 }, [1]]) {
        const error = yield* conversionError(bad, "number")
        assert.instanceOf(error, ValueConversionFailed)
        assert.strictEqual(error.valueType, "number")
      }
      assert.strictEqual((yield* conversionError("abc", "number")).message, `Cannot convert "abc" to number`)
    }))

  it.effect("boolean accepts true/false/1/0 in any case", () =>
    Effect.gen(function*() {
      for (const [input, expected] of [["true", true], ["TRUE", true], [" True ", true], ["1", true], ["false", false], ["False", false], ["0", false], [true, true], [false, false], [1, true], [0, false]] as const) {
        assert.strictEqual(yield* converted(input, "boolean"), expected, String(input))
      }
    }))

  it.effect("boolean refuses anything else", () =>
    Effect.gen(function*() {
      for (const bad of ["yes", "no", "", "2", 2, null, "t"]) {
        const error = yield* conversionError(bad, "boolean")
        assert.strictEqual(error.valueType, "boolean")
      }
    }))

  it.effect("json parses strings and keeps other values", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* converted(`{"a":[1,2]}`, "json"), { a: [1, 2] })
      assert.strictEqual(yield* converted("3", "json"), 3)
      assert.strictEqual(yield* converted(`"s"`, "json"), "s")
      assert.strictEqual(yield* converted("null", "json"), null)
      assert.deepStrictEqual(yield* converted({ a: 1 }, "json"), { a: 1 })
      assert.strictEqual(yield* converted(5, "json"), 5)
    }))

  it.effect("json refuses a string that is not JSON", () =>
    Effect.gen(function*() {
      for (const bad of ["", "{a:1}", "abc", "{\"a\":"]) {
        const error = yield* conversionError(bad, "json")
        assert.strictEqual(error._tag, "ValueConversionFailed")
        assert.strictEqual(error.valueType, "json")
        assert.include(error.message, "not valid JSON")
      }
    }))

  it.effect("a failed conversion is a yieldable failure (the engine fails the execution)", () =>
    Effect.gen(function*() {
      const r = yield* Effect.result(convertValue("x", "number"))
      assert.isTrue(Result.isFailure(r))
    }))
})

// ---------------------------------------------------------------------------
// Names and size
// ---------------------------------------------------------------------------

describe("variable names", () => {
  it("accepts identifiers up to 64 characters", () => {
    for (const name of ["a", "_", "user_name", "A1", "_x9", "a".repeat(64)]) assert.isTrue(isValidVariableName(name), name)
    assert.isTrue(VARIABLE_NAME.test("user_name"))
  })

  it("refuses other names, long names and reserved names", () => {
    for (const name of ["", "1a", "a-b", "a.b", "a b", "é", "a".repeat(65), "flow_id", "started_at"]) {
      assert.isFalse(isValidVariableName(name), name)
    }
    assert.isFalse(VARIABLE_NAME.test("1a"))
  })
})

describe("context size", () => {
  it("counts UTF-8 bytes of the serialised context", () => {
    const small: ExecutionContext = { vars: { s: "é🎉" }, system: {}, context: {}, metadata: {} }
    assert.strictEqual(contextBytes(small), bytesOf(small))
    assert.strictEqual(contextBytes(ctx), bytesOf(ctx))
    assert.strictEqual(CONTEXT_MAX_BYTES, 262144)
  })

  it("tells a context over the limit from one within it, derived contexts included", () => {
    const base: ExecutionContext = { vars: { big: "x".repeat(CONTEXT_MAX_BYTES - 200) }, system: {}, context: {}, metadata: {} }
    assert.isFalse(contextTooLarge(base))
    // A new variable that crosses the limit, and one that does not.
    const over = withMoreVars(base, { more: "y".repeat(300) })
    assert.isTrue(contextTooLarge(over))
    assert.isAbove(contextBytes(over), CONTEXT_MAX_BYTES)
    const within = withMoreVars(base, { more: "y".repeat(10) })
    assert.isFalse(contextTooLarge(within))
    // Replacing the large variable by a small one: its bound counts both values, the context itself fits.
    const replaced = withMoreVars(within, { big: "z".repeat(CONTEXT_MAX_BYTES - 300) })
    assert.isAtMost(contextBytes(replaced), CONTEXT_MAX_BYTES)
    assert.isFalse(contextTooLarge(replaced))
    // A chain of small additions from a measured context reaches the limit exactly where the measure does.
    let grown: ExecutionContext = base
    for (let i = 0; contextBytes(grown) <= CONTEXT_MAX_BYTES; i++) {
      assert.isFalse(contextTooLarge(grown))
      grown = withMoreVars(grown, { [`v${i}`]: "w".repeat(40) })
    }
    assert.isTrue(contextTooLarge(grown))
    assert.isTrue(contextTooLarge(withMoreVars({ vars: {}, system: {}, context: {}, metadata: {} }, { big: "x".repeat(CONTEXT_MAX_BYTES) })))
  })
})

// ---------------------------------------------------------------------------
// StepLog
// ---------------------------------------------------------------------------

describe("utf8", () => {
  it("measures like TextEncoder", () => {
    for (const s of ["", "abc", "é", "€", "🎉", "a\u{10FFFF}b", "\uD800x", "x\uDC00"]) {
      assert.strictEqual(utf8Length(s), new TextEncoder().encode(s).length, JSON.stringify(s))
    }
  })

  it("cuts without splitting a character", () => {
    assert.strictEqual(cutUtf8("abcdef", 4), "abcd")
    assert.strictEqual(cutUtf8("ab🎉", 5), "ab") // the emoji needs 4 bytes
    assert.strictEqual(cutUtf8("ab🎉", 6), "ab🎉")
    assert.strictEqual(cutUtf8("éé", 3), "é")
    assert.strictEqual(cutUtf8("short", 100), "short")
  })
})

describe("shapePayload", () => {
  it("stores a plain payload as normalising would, with or without the path that copies it", () => {
    // A secret that occurs nowhere sends the payload through the normalising walk; none lets a plain one through as is.
    const unused = ["no-such-secret-anywhere"]
    const payloads: ReadonlyArray<unknown> = [
      { duration_ms: 3 },
      { name: "v1", value: { nested: [1, "two", true, null, { deep: "é🎉\u0001\"" }] } },
      { skipped: undefined, kept: 1 },
      { n: Number.NaN, i: Number.POSITIVE_INFINITY },
      { at: new Date(0) },
      [1, undefined, () => 1],
      { long: "x".repeat(STRING_MAX_BYTES + 10) },
      { wide: "é".repeat(STRING_MAX_BYTES) },
      { many: Array.from({ length: 3000 }, (_, i) => `item-${i}-${"y".repeat(20)}`) },
      "text",
      42
    ]
    for (const payload of payloads) assert.deepStrictEqual(shapePayload(payload, []), shapePayload(payload, unused))
  })

  it("masks every occurrence of each secret, in keys and nested values", () => {
    const out = shapePayload(
      { request: { url: "https://x.test/?k=sk-live-123&again=sk-live-123", headers: { Authorization: "Bearer tok_abc" } }, list: ["tok_abc"], "sk-live-123": 1 },
      ["sk-live-123", "tok_abc"]
    )
    assert.deepStrictEqual(out, {
      request: { url: "https://x.test/?k=[secret]&again=[secret]", headers: { Authorization: "Bearer [secret]" } },
      list: ["[secret]"],
      "[secret]": 1
    })
  })

  it("masks the longer of overlapping secrets whole and ignores empty secrets", () => {
    assert.deepStrictEqual(shapePayload({ s: "xx abc-long yy abc" }, ["abc", "abc-long", ""]), { s: "xx [secret] yy [secret]" })
    assert.deepStrictEqual(shapePayload({ s: "a.b*c" }, [".", "*"]), { s: "a[secret]b[secret]c" })
    assert.deepStrictEqual(shapePayload({ s: "keep" }, []), { s: "keep" })
  })

  it("masks before cutting, so no part of a secret survives at the cut", () => {
    const secret = "S".repeat(100)
    const long = "a".repeat(STRING_MAX_BYTES - 50) + secret
    const out = shapePayload({ s: long }, [secret]) as { s: string }
    assert.notInclude(out.s, "S")
    assert.strictEqual(out.s, "a".repeat(STRING_MAX_BYTES - 50) + "[secret]")
  })

  it("cuts strings to 4 KB of UTF-8 without splitting a character", () => {
    const out = shapePayload({ a: "x".repeat(10_000), b: ["🎉".repeat(2000)], c: "é".repeat(2049), d: "fine" }, []) as {
      a: string
      b: Array<string>
      c: string
      d: string
    }
    assert.strictEqual(out.a, "x".repeat(STRING_MAX_BYTES))
    assert.strictEqual(out.b[0], "🎉".repeat(1024))
    assert.strictEqual(out.c, "é".repeat(2048))
    assert.strictEqual(out.d, "fine")
  })

  it("returns a new value with JSON semantics and leaves the input alone", () => {
    const input = { a: [1, undefined], b: undefined, c: new Date("2024-01-02T03:04:05.000Z"), d: Number.NaN, e: { f: "x" } }
    const out = shapePayload(input, [])
    assert.deepStrictEqual(out, { a: [1, null], c: "2024-01-02T03:04:05.000Z", d: null, e: { f: "x" } })
    assert.notStrictEqual(out, input)
    assert.deepStrictEqual(input.a, [1, undefined])
    assert.isTrue(Object.hasOwn(input, "b"))
  })

  it("keeps payloads within 64 KB unchanged apart from masking and cutting", () => {
    const payload = { action: "webhook", request: { body: Array.from({ length: 10 }, (_, i) => `${i}`.repeat(4000)) } }
    assert.deepStrictEqual(shapePayload(payload, []), payload)
    assert.isAtMost(bytesOf(payload), PAYLOAD_MAX_BYTES)
  })

  it("replaces the deepest member that holds the excess, keeping its siblings", () => {
    // 20 strings of 4 KB inside request.body: ~80 KB, 16 KB too many.
    const body = Array.from({ length: 20 }, (_, i) => String.fromCharCode(97 + i).repeat(STRING_MAX_BYTES))
    const out = shapePayload({ action: "webhook", request: { url: "https://x.test", body } }, []) as {
      action: string
      request: { url: string; body: Array<unknown> }
    }
    assert.isAtMost(bytesOf(out), PAYLOAD_MAX_BYTES)
    assert.strictEqual(out.action, "webhook")
    assert.strictEqual(out.request.url, "https://x.test")
    assert.strictEqual(out.request.body.length, 20)
    const markers = out.request.body.filter((x) => typeof x !== "string")
    // Equal sizes: the earliest give way first, only as many as needed.
    assert.deepStrictEqual(markers[0], { truncated: true, bytes: STRING_MAX_BYTES + 2 })
    assert.strictEqual(markers.length, 5)
    assert.deepStrictEqual(out.request.body.slice(0, 5), markers)
    assert.strictEqual(out.request.body[5], "f".repeat(STRING_MAX_BYTES))
  })

  it("replaces the largest members first when no single one holds the excess", () => {
    const big = (c: string, n: number) => Array.from({ length: n }, () => c.repeat(1000))
    // a ~40 KB, b ~30 KB, c ~10 KB: 80 KB, excess ~16 KB; b alone would do but a is larger and holds it too.
    const payload = { small: "keep", a: big("a", 40), b: big("b", 30), c: big("c", 10) }
    const out = shapePayload(payload, []) as Record<string, Array<unknown>>
    assert.isAtMost(bytesOf(out), PAYLOAD_MAX_BYTES)
    assert.deepStrictEqual(out["b"], payload.b)
    assert.deepStrictEqual(out["c"], payload.c)
    assert.strictEqual(out["small"] as unknown, "keep")
    // The cut is inside a: its first elements gave way.
    assert.strictEqual(out["a"]!.length, 40)
    assert.deepStrictEqual(out["a"]![0], { truncated: true, bytes: 1002 })
    assert.strictEqual(out["a"]![39], "a".repeat(1000))

    // Three members of 40 KB, 56 KB over the limit: none holds the excess alone.
    // The largest (first among equals) goes whole, the rest of the excess is cut inside the next.
    const three = { x: big("x", 40), y: big("y", 40), z: big("z", 40) }
    const shaped = shapePayload(three, []) as Record<string, Array<unknown>>
    assert.isAtMost(bytesOf(shaped), PAYLOAD_MAX_BYTES)
    assert.deepStrictEqual(shaped["x"] as unknown, { truncated: true, bytes: bytesOf(three.x) })
    assert.strictEqual(shaped["y"]!.length, 40)
    assert.deepStrictEqual(shaped["y"]![0], { truncated: true, bytes: 1002 })
    assert.strictEqual(shaped["y"]![39], "y".repeat(1000))
    assert.deepStrictEqual(shaped["z"], three.z)
  })

  it("replaces a container of tiny members whole", () => {
    const numbers = Array.from({ length: 40_000 }, (_, i) => i % 10)
    const payload = { kind: "list", numbers }
    const out = shapePayload(payload, []) as Record<string, unknown>
    assert.strictEqual(out["kind"], "list")
    assert.deepStrictEqual(out["numbers"], { truncated: true, bytes: bytesOf(numbers) })
  })

  it("measures markers and escapes exactly: the result always fits", () => {
    // Quotes and control characters grow when escaped; many keys of varying sizes.
    const payload: Record<string, unknown> = {}
    for (let i = 0; i < 300; i++) payload[`k${i}`] = { v: "\"\n\u0001é".repeat(i * 3), n: [i, { m: "🎉".repeat(i) }] }
    const out = shapePayload(payload, [])
    assert.isAbove(bytesOf(payload), PAYLOAD_MAX_BYTES)
    assert.isAtMost(bytesOf(out), PAYLOAD_MAX_BYTES)
    assert.isAtLeast(bytesOf(out), PAYLOAD_MAX_BYTES - 2048) // it does not throw away much more than needed
  })

  it("replaces the payload itself when nothing else can fit it", () => {
    const numbers = Array.from({ length: 40_000 }, () => 1)
    assert.deepStrictEqual(shapePayload(numbers, []), { truncated: true, bytes: bytesOf(numbers) })
  })
})
