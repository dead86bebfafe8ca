import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Predicate } from "effect"
import { TestClock } from "effect/testing"
import { callWebhookTool, type WebhookToolConfig } from "../../src/ai/tools/WebhookTool.ts"
import { cutToolResult, TOOL_RESULT_BYTES } from "../../src/shared/ToolResult.ts"
import { layerMemoryWebhookHttp, MemoryWebhookReceiver } from "../../src/testing/index.ts"
import { WebhookSettings } from "../../src/shared/OutboundSettings.ts"

const vars: Record<string, string> = { token: "s3cret", host: "api.example.com", region: "eu" }

/** The caller's interpolation, reduced to `{{name}}` in strings, anywhere in a value. */
const interpolate = (template: unknown): Effect.Effect<unknown> =>
  Effect.succeed(render(template))
const render = (value: unknown): unknown =>
  Predicate.isString(value)
    ? value.replace(/\{\{(\w+)\}\}/g, (_, name: string) => vars[name] ?? "")
    : Array.isArray(value)
    ? value.map(render)
    : Predicate.isObject(value)
    ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, render(v)]))
    : value

const provide = (allowPrivateUrls = false) =>
  Effect.provide(Layer.mergeAll(layerMemoryWebhookHttp, WebhookSettings.layer({ allowPrivateUrls })))

const tool = (overrides: Partial<WebhookToolConfig> = {}): WebhookToolConfig => ({
  name: "lookup_order",
  description: "Finds an order",
  url: "https://{{host}}/orders?source=agent",
  headers: { Authorization: "Bearer {{token}}" },
  body: { region: "{{region}}", status: "any" },
  body_schema: {
    type: "object",
    required: ["order_id"],
    properties: { order_id: { type: "string" }, status: { type: "string" } }
  },
  jmespath_query: null,
  ...overrides
})

const bodyOf = (bytes: Uint8Array) => JSON.parse(new TextDecoder().decode(bytes))

describe("callWebhookTool", () => {
  it.effect("POSTs the body template with the arguments over it, headers interpolated", () =>
    Effect.gen(function*() {
      const receiver = yield* MemoryWebhookReceiver
      receiver.respondWith(() => Effect.succeed({ status: 200, body: "{\"order\":{\"id\":\"A1\",\"state\":\"shipped\"}}" }))
      const outcome = yield* callWebhookTool(tool(), { order_id: "A1", status: "open" }, interpolate)
      assert.deepStrictEqual(outcome, { ok: true, status: 200, result: { order: { id: "A1", state: "shipped" } } })
      const [request] = receiver.requests
      assert.strictEqual(request!.method, "POST")
      assert.strictEqual(request!.url, "https://api.example.com/orders?source=agent")
      assert.strictEqual(request!.headers["authorization"], "Bearer s3cret")
      assert.strictEqual(request!.headers["content-type"], "application/json")
      assert.deepStrictEqual(bodyOf(request!.body), { region: "eu", status: "open", order_id: "A1" })
    }).pipe(provide()))

  it.effect("refuses arguments that do not match body_schema, without a request", () =>
    Effect.gen(function*() {
      const receiver = yield* MemoryWebhookReceiver
      const outcome = yield* callWebhookTool(tool(), { order_id: 7 }, interpolate)
      assert.deepStrictEqual(outcome, {
        ok: false,
        result: { error: "Invalid arguments: /order_id must be of type string (got number)" }
      })
      const notObject = yield* callWebhookTool(tool({ body_schema: null }), ["x"], interpolate)
      assert.deepStrictEqual(notObject, { ok: false, result: { error: "Invalid arguments: / must be an object" } })
      assert.strictEqual(receiver.requests.length, 0)
    }).pipe(provide()))

  it.effect("GET and DELETE send the arguments as the query string, merged with the URL's, and no body", () =>
    Effect.gen(function*() {
      const receiver = yield* MemoryWebhookReceiver
      const config = tool({ url: "https://{{host}}/orders?source=agent&status=all", body: null, body_schema: undefined })
      yield* callWebhookTool({ ...config, http_method: "get" }, { order_id: "A 1", status: "open", tags: ["a", "b"], page: 2 }, interpolate)
      yield* callWebhookTool({ ...config, http_method: "DELETE" }, { order_id: "A1", note: null }, interpolate)
      const [get, del] = receiver.requests
      assert.strictEqual(get!.method, "GET")
      assert.strictEqual(get!.url, "https://api.example.com/orders?source=agent&order_id=A+1&status=open&tags=a&tags=b&page=2")
      assert.strictEqual(get!.body.byteLength, 0)
      assert.isUndefined(get!.headers["content-type"])
      assert.strictEqual(del!.method, "DELETE")
      assert.strictEqual(del!.url, "https://api.example.com/orders?source=agent&status=all&order_id=A1")
    }).pipe(provide()))

  it.effect("a non-2xx answer is an error result with the status and the body's first 512 characters", () =>
    Effect.gen(function*() {
      const receiver = yield* MemoryWebhookReceiver
      receiver.respondWith(() => Effect.succeed({ status: 503, body: "x".repeat(600) }))
      const outcome = yield* callWebhookTool(tool(), { order_id: "A1" }, interpolate)
      assert.deepStrictEqual(outcome, { ok: false, status: 503, result: { error: "HTTP 503", body: "x".repeat(512) } })
    }).pipe(provide()))

  it.effect("jmespath_query selects from a JSON answer; a text answer comes back as text", () =>
    Effect.gen(function*() {
      const receiver = yield* MemoryWebhookReceiver
      receiver.respondWith(() =>
        Effect.succeed({ status: 200, body: JSON.stringify({ items: [{ id: 1, price: 5 }, { id: 2, price: 50 }] }) })
      )
      const selected = yield* callWebhookTool(tool({ jmespath_query: "items[?price > `10`].id" }), { order_id: "A1" }, interpolate)
      assert.deepStrictEqual(selected, { ok: true, status: 200, result: [2] })
      const missing = yield* callWebhookTool(tool({ jmespath_query: "nothing.here" }), { order_id: "A1" }, interpolate)
      assert.deepStrictEqual(missing, { ok: true, status: 200, result: null })
      const broken = yield* callWebhookTool(tool({ jmespath_query: "items[?" }), { order_id: "A1" }, interpolate)
      assert.isFalse(broken.ok)
      assert.match((broken.result as { error: string }).error, /^The tool's jmespath_query cannot be applied: /)
      receiver.respondWith(() => Effect.succeed({ status: 201, body: "created" }))
      const text = yield* callWebhookTool(tool({ jmespath_query: "items" }), { order_id: "A1" }, interpolate)
      assert.deepStrictEqual(text, { ok: true, status: 201, result: "created" })
    }).pipe(provide()))

  it.effect("the result is cut to 16 KB", () =>
    Effect.gen(function*() {
      const receiver = yield* MemoryWebhookReceiver
      receiver.respondWith(() => Effect.succeed({ status: 200, body: JSON.stringify({ text: "é".repeat(20_000) }) }))
      const outcome = yield* callWebhookTool(tool(), { order_id: "A1" }, interpolate)
      assert.isTrue(outcome.ok)
      const result = outcome.result as string
      assert.strictEqual(new TextEncoder().encode(result).byteLength <= TOOL_RESULT_BYTES, true)
      assert.match(result, /^\{"text":"éé/)
      assert.match(result, / …\[cut: the answer is 40011 bytes; only the first ones are shown\]$/)
    }).pipe(provide()))

  it.effect("gives up after 30 s", () =>
    Effect.gen(function*() {
      const receiver = yield* MemoryWebhookReceiver
      receiver.respondWith(() => Effect.as(Effect.sleep("31 seconds"), { status: 200, body: "late" }))
      const fiber = yield* Effect.forkChild(callWebhookTool(tool(), { order_id: "A1" }, interpolate))
      yield* TestClock.adjust("30 seconds")
      assert.deepStrictEqual(yield* Fiber.join(fiber), { ok: false, result: { error: "Request failed: Timed out after 30 s" } })
    }).pipe(provide()))

  it.effect("refuses a private address unless the operator allows it", () =>
    Effect.gen(function*() {
      const config = tool({ url: "http://localhost:8080/orders" })
      const refused = yield* callWebhookTool(config, { order_id: "A1" }, interpolate).pipe(provide(false))
      assert.deepStrictEqual(refused, { ok: false, result: { error: "Request failed: localhost resolves to a private address" } })
      const allowed = yield* callWebhookTool(config, { order_id: "A1" }, interpolate).pipe(provide(true))
      assert.deepStrictEqual(allowed, { ok: true, status: 200, result: "" })
    }))

  it.effect("a bad method or URL is a tool error; the caller's interpolation failure is the caller's", () =>
    Effect.gen(function*() {
      const receiver = yield* MemoryWebhookReceiver
      const method = yield* callWebhookTool(tool({ http_method: "TRACE" }), { order_id: "A1" }, interpolate)
      assert.deepStrictEqual(method, { ok: false, result: { error: "The tool's http_method TRACE is not one of GET, POST, PUT, PATCH, DELETE" } })
      const url = yield* callWebhookTool(tool({ url: "ftp://{{host}}/x" }), { order_id: "A1" }, interpolate)
      assert.deepStrictEqual(url, { ok: false, result: { error: "The tool's url is not an http or https URL" } })
      const failing = (template: unknown) =>
        Predicate.isString(template) && template.includes("{{missing}}") ? Effect.fail("no such variable" as const) : interpolate(template)
      const error = yield* Effect.flip(callWebhookTool(tool({ headers: { "X-Key": "{{missing}}" } }), { order_id: "A1" }, failing))
      assert.strictEqual(error, "no such variable")
      assert.strictEqual(receiver.requests.length, 0)
    }).pipe(provide()))
})

describe("cutToolResult", () => {
  it("keeps a value whose text fits, and cuts one that does not on a character boundary", () => {
    const fits = { a: "x".repeat(16_000) }
    assert.strictEqual(cutToolResult(fits), fits)
    assert.strictEqual(cutToolResult("y".repeat(TOOL_RESULT_BYTES)), "y".repeat(TOOL_RESULT_BYTES))
    const cut = cutToolResult("€".repeat(10_000)) as string
    const bytes = new TextEncoder().encode(cut).byteLength
    assert.isAtMost(bytes, TOOL_RESULT_BYTES)
    assert.isAbove(bytes, TOOL_RESULT_BYTES - 100)
    assert.notInclude(cut, "\uFFFD")
    assert.match(cut, /^€+ …\[cut: the answer is 30000 bytes; only the first ones are shown\]$/)
  })
})
