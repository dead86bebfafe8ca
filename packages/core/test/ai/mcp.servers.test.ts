/**
 * `McpServers` against a real MCP server: the official SDK's `McpServer` over its streamable HTTP transport
 * (stateful sessions, SSE answers), on a port of this machine.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Effect, Fiber, Layer } from "effect"
import { TestClock } from "effect/testing"
import { FetchHttpClient } from "effect/http"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { callMcpTool, findMcpTool, type McpServerError, McpServers, mcpToolName, resolveMcpServer } from "../../src/ai/tools/McpServers.ts"
import { layerMemoryWebhookHttp } from "../../src/testing/index.ts"
import { WebhookSettings } from "../../src/shared/OutboundSettings.ts"
import { closeServer, startServer, TOKEN } from "./mcpServer.ts"

/** An address nothing listens on: a port taken and given back. */
const closedPort = Effect.callback<string>((resume) => {
  const probe = Http.createServer()
  probe.listen(0, "127.0.0.1", () => {
    const port = (probe.address() as AddressInfo).port
    probe.close(() => resume(Effect.succeed(`http://127.0.0.1:${port}/mcp`)))
  })
})

const facts = (e: McpServerError) => ({ _tag: e._tag, server: e.server, operation: e.operation, message: e.message })

const services = (allowPrivateUrls: boolean) =>
  McpServers.layer.pipe(
    Layer.provide(Layer.mergeAll(FetchHttpClient.layer, layerMemoryWebhookHttp, WebhookSettings.layer({ allowPrivateUrls })))
  )

describe("findMcpTool", () => {
  it("finds the server and tool behind an exposed name, the longest server name first", () => {
    const servers = [{ name: "a" }, { name: "a__b" }, { name: "crm" }]
    assert.deepStrictEqual(findMcpTool(servers, "crm__find_contact"), { server: { name: "crm" }, tool: "find_contact" })
    assert.deepStrictEqual(findMcpTool(servers, "a__b__c"), { server: { name: "a__b" }, tool: "c" })
    assert.deepStrictEqual(findMcpTool(servers, "a__x"), { server: { name: "a" }, tool: "x" })
    assert.isUndefined(findMcpTool(servers, "crm__"))
    assert.isUndefined(findMcpTool(servers, "billing__pay"))
  })
})

describe("McpServers over streamable HTTP", () => {
  layer(services(true), { excludeTestServices: true })("against the official SDK's server", (it) => {
    const headers = { Authorization: `Bearer ${TOKEN}` }

    it.effect("lists the server's tools with their schemas", () =>
      Effect.scoped(Effect.gen(function*() {
        const { url } = yield* startServer
        const tools = yield* McpServers.use((s) => s.listTools({ name: "orders", url, headers }))
        assert.deepStrictEqual(tools.map((t) => t.name), ["lookup_order", "echo_headers"])
        const lookup = tools[0]!
        assert.strictEqual(lookup.description, "Finds an order by id")
        assert.strictEqual(lookup.inputSchema["type"], "object")
        assert.deepStrictEqual(lookup.inputSchema["required"], ["order_id"])
        assert.deepStrictEqual(lookup.inputSchema["properties"], { order_id: { type: "string" } })
        assert.strictEqual(mcpToolName("orders", lookup.name), "orders__lookup_order")
      })))

    it.effect("calls a tool: text parts joined, other parts described", () =>
      Effect.scoped(Effect.gen(function*() {
        const { url } = yield* startServer
        const result = yield* McpServers.use((s) => s.callTool({ name: "orders", url, headers }, "lookup_order", { order_id: "A1" }))
        assert.deepStrictEqual(result, { isError: false, content: "Order A1: shipped\n\n[image: image/png, 4 bytes]" })
      })))

    it.effect("a tool that reports failure is a result with isError, not an error", () =>
      Effect.scoped(Effect.gen(function*() {
        const { url } = yield* startServer
        const result = yield* McpServers.use((s) => s.callTool({ name: "orders", url, headers }, "lookup_order", { order_id: "Z9" }))
        assert.deepStrictEqual(result, { isError: true, content: "No order Z9" })
      })))

    it.effect("an unknown tool, bad arguments and a refused header are typed errors naming the server", () =>
      Effect.scoped(Effect.gen(function*() {
        const { url } = yield* startServer
        const servers = yield* McpServers
        const unknown = yield* Effect.flip(servers.callTool({ name: "orders", url, headers }, "nope", {}))
        assert.deepStrictEqual(facts(unknown), {
          _tag: "McpServerError",
          server: "orders",
          operation: "call_tool",
          message: "the server has no tool named nope"
        })
        // The SDK reports arguments that fail the tool's schema as a failed result.
        const invalid = yield* servers.callTool({ name: "orders", url, headers }, "lookup_order", { order_id: 5 })
        assert.isTrue(invalid.isError)
        assert.match(invalid.content, /Invalid arguments for tool lookup_order/)
        const ftp = yield* Effect.flip(servers.listTools({ name: "orders", url: "ftp://user:secret@127.0.0.1/mcp", headers }))
        assert.deepStrictEqual(facts(ftp), {
          _tag: "McpServerError",
          server: "orders",
          operation: "connect",
          message: "url is not an http or https URL"
        })
        const notObject = yield* Effect.flip(servers.callTool({ name: "orders", url, headers }, "lookup_order", [1]))
        assert.strictEqual(notObject.message, "the arguments must be an object")
        const unauthorized = yield* Effect.flip(servers.listTools({ name: "orders", url, headers: { Authorization: "Bearer wrong" } }))
        assert.strictEqual(unauthorized.server, "orders")
        assert.strictEqual(unauthorized.operation, "connect")
        assert.strictEqual(unauthorized.message, "MCP HTTP status 401")
      })))

    it.effect("callMcpTool: the node's entry interpolated, results and failures as tool outcomes", () =>
      Effect.scoped(Effect.gen(function*() {
        const { url } = yield* startServer
        const vars: Record<string, string> = { token: TOKEN, base: url }
        const interpolate = (t: unknown) =>
          Effect.succeed(typeof t === "string" ? t.replace(/\{\{(\w+)\}\}/g, (_, n: string) => vars[n] ?? "") : t)
        const server = yield* resolveMcpServer(
          { name: "orders", description: "Orders", url: " {{base}} ", headers: { Authorization: "Bearer {{token}}", "X-Gone": null } },
          interpolate
        )
        assert.deepStrictEqual(server, { name: "orders", url, headers: { Authorization: `Bearer ${TOKEN}` } })
        const found = findMcpTool([server], "orders__lookup_order")
        assert.strictEqual(found?.tool, "lookup_order")
        assert.deepStrictEqual(yield* callMcpTool(server, found!.tool, { order_id: "A1" }), {
          ok: true,
          result: "Order A1: shipped\n\n[image: image/png, 4 bytes]"
        })
        assert.deepStrictEqual(yield* callMcpTool(server, "lookup_order", { order_id: "Z9" }), {
          ok: false,
          result: { error: "No order Z9" }
        })
        assert.deepStrictEqual(yield* callMcpTool({ ...server, headers: {} }, "lookup_order", { order_id: "A1" }), {
          ok: false,
          result: { error: "MCP server orders failed (connect): MCP HTTP status 401" }
        })
      })))

    it.effect("a server that is down is a connect error", () =>
      Effect.gen(function*() {
        const url = yield* closedPort
        const error = yield* Effect.flip(McpServers.use((s) => s.listTools({ name: "gone", url, headers })))
        assert.strictEqual(error.server, "gone")
        assert.strictEqual(error.operation, "connect")
        assert.match(error.message, /^MCP HTTP request failed: connect ECONNREFUSED 127\.0\.0\.1:\d+$/)
      }))
  })

  layer(services(false), { excludeTestServices: true })("with private addresses refused", (it) => {
    it.effect("refuses a loopback server before connecting", () =>
      Effect.scoped(Effect.gen(function*() {
        const { url } = yield* startServer
        const error = yield* Effect.flip(McpServers.use((s) => s.listTools({ name: "local", url })))
        assert.deepStrictEqual(facts(error), {
          _tag: "McpServerError",
          server: "local",
          operation: "connect",
          message: "127.0.0.1 resolves to a private address"
        })
      })))
  })

  it.effect("gives up on a server that never answers after 30 s", () =>
    Effect.scoped(Effect.gen(function*() {
      const silent = yield* Effect.acquireRelease(
        Effect.callback<Http.Server>((resume) => {
          const server = Http.createServer(() => {})
          server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
        }),
        closeServer
      )
      const url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}/mcp`
      const fiber = yield* Effect.forkChild(McpServers.use((s) => s.listTools({ name: "silent", url })))
      // Let the request reach the server before time moves.
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 200)))
      yield* TestClock.adjust("30 seconds")
      const error = yield* Effect.flip(Fiber.join(fiber))
      assert.strictEqual(error.server, "silent")
      assert.strictEqual(error.operation, "connect")
      assert.strictEqual(error.message, "MCP initialization deadline exceeded")
    }).pipe(Effect.provide(services(true)))))
})
