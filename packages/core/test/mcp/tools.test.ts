/**
 * How an MCP action becomes a REST call: path parameters filled from params, the rest as query (GET, DELETE) or body
 * (POST, PATCH, PUT), the proxy's version fixed; `help`; refusals turned into the endpoint's `{ "error" }` text.
 */
import { assert, describe, it } from "@effect/vitest"
import { EventPlans, Ids, LocalApi, type LocalApiAnswer, type LocalApiRequest, McpAction, McpCaller, McpTools, Projects } from "@parley/core"
import { layerMemoryStorage } from "@parley/core/testing"
import { Effect, Layer, Redacted } from "effect"

const tool = (name: string) => McpTools.tools.find((t) => t.name === name)!

/** A LocalApi that records each request and answers with `answer`. */
const recording = (answer: (request: LocalApiRequest) => LocalApiAnswer) => {
  const requests: Array<LocalApiRequest> = []
  const layer = Layer.mergeAll(
    Layer.succeed(LocalApi, LocalApi.of({ call: (request) => Effect.sync(() => (requests.push(request), answer(request))) })),
    Layer.succeed(McpCaller, McpCaller.of({
      principal: {
        project: { id: "p1", name: "P", disabled: false, created_at: "2026-01-01T00:00:00Z", updated_at: "2026-01-01T00:00:00Z" },
        apiKey: { id: "k1", name: "agent" }
      },
      key: Redacted.make("pk_secret")
    })),
    EventPlans.layer.pipe(Layer.provide(Projects.layer), Layer.provide(Ids.layer), Layer.provide(layerMemoryStorage))
  )
  return { requests, layer }
}

describe("MCP tools", () => {
  it.effect("fills the path, sends the rest as the query of a GET and as the body of a PATCH, with the caller's key", () =>
    Effect.gen(function*() {
      const api = recording(() => ({ status: 200, body: { data: [{ id: "c1" }], paging: {} } }))
      const listed = yield* McpTools.runTool(tool("customers"), { action: "list", params: { name_contains: "a b", limit: 5 } }).pipe(
        Effect.provide(api.layer)
      )
      assert.deepStrictEqual(listed, [{ id: "c1" }])
      yield* McpTools.runTool(tool("workflows"), { action: "set_status", params: { id: "w/1", workflow: { status: "active" } } }).pipe(
        Effect.provide(api.layer)
      )
      yield* McpTools.runTool(tool("msg_messages"), { action: "mark_read", params: { phone_number_id: "123", status: "read" } }).pipe(
        Effect.provide(api.layer)
      )
      assert.deepStrictEqual(api.requests.map(({ body, method, path }) => ({ method, path, body })), [
        { method: "GET", path: "/platform/v1/customers?name_contains=a+b&limit=5", body: undefined },
        { method: "PATCH", path: "/platform/v1/workflows/w%2F1", body: { workflow: { status: "active" } } },
        { method: "POST", path: "/proxy/v24.0/123/messages", body: { status: "read" } }
      ])
      assert.strictEqual(Redacted.value(api.requests[0]!.key), "pk_secret")
    }))

  it.effect("answers a refusal with the endpoint's message, the proxy's `error.message` too", () =>
    Effect.gen(function*() {
      const platform = recording(() => ({ status: 404, body: { error: "Customer not found" } }))
      const refused = yield* Effect.flip(
        McpTools.runTool(tool("customers"), { action: "get", params: { id: "x" } }).pipe(Effect.provide(platform.layer))
      )
      assert.deepStrictEqual(refused, new McpAction.ToolFailure({ error: "Customer not found" }))
      const proxy = recording(() => ({ status: 404, body: { error: { message: "Unknown phone number", code: 100 } } }))
      const proxied = yield* Effect.flip(
        McpTools.runTool(tool("msg_messages"), { action: "get", params: { phone_number_id: "1", message_id: "m" } }).pipe(
          Effect.provide(proxy.layer)
        )
      )
      assert.strictEqual(proxied.error, "Unknown phone number")
    }))

  it.effect("help shows each action's params as JSON Schema from the contract, without the fixed ones", () =>
    Effect.gen(function*() {
      const api = recording(() => ({ status: 200, body: null }))
      const help = (yield* McpTools.runTool(tool("msg_messages"), { action: "help" }).pipe(Effect.provide(api.layer))) as ReadonlyArray<any>
      const get = help.find((a) => a.action === "get")
      assert.deepStrictEqual(Object.keys(get.params.properties), ["phone_number_id", "message_id"])
      assert.deepStrictEqual(get.params.required, ["phone_number_id", "message_id"])
      const send = help.find((a) => a.action === "send")
      assert.includeMembers(Object.keys(send.params.properties), ["phone_number_id", "allow_start_with_template", "template"])
      assert.deepStrictEqual(api.requests, [])
    }))
})
