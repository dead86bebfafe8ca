/**
 * The MCP tool server at `/mcp` (decisions 4.12) over real HTTP, reached with the official SDK client: the key
 * before the session, the tool list, one action of every tool, `help`, and failures flagged as tool errors with
 * the REST endpoint's own message.
 */
import { assert, describe, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { Ids } from "@parley/core"
import { layerMemoryJobQueue, layerMemoryStorage } from "@parley/core/testing"
import { Effect, Exit, Layer, Scope } from "effect"
import { afterAll, beforeAll } from "vitest"
import { startHost, type TestHost } from "./support.ts"

let host: TestHost
let close: () => Promise<void>

beforeAll(async () => {
  const scope = Effect.runSync(Scope.make())
  host = await Effect.runPromise(
    startHost(Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layer)).pipe(Effect.provideService(Scope.Scope, scope))
  )
  close = () => Effect.runPromise(Scope.close(scope, Exit.void))
}, 60_000)
afterAll(() => close())

const connect = async (headers: Record<string, string>) => {
  const client = new Client({ name: "mcp-test", version: "1.0.0" })
  await client.connect(new StreamableHTTPClientTransport(new URL(`${host.url}/mcp`), { requestInit: { headers } }))
  return client
}

/** Calls `tool`; answers the parsed JSON text and whether it was a tool error. */
const call = async (client: Client, tool: string, args: Record<string, unknown>) => {
  const result = await client.callTool({ name: tool, arguments: args })
  const content = result.content as Array<{ type: string; text: string }>
  assert.strictEqual(content.length, 1)
  assert.strictEqual(content[0]!.type, "text")
  return { isError: result.isError === true, value: JSON.parse(content[0]!.text) }
}

const TOOLS = [
  "status",
  "search_docs",
  "customers",
  "setup_links",
  "msg_numbers",
  "msg_conversations",
  "msg_messages",
  "msg_templates",
  "webhooks",
  "workflows",
  "workflow_embeds",
  "functions",
  "events",
  "logs",
  "diagnostic_investigations",
  "guardrails"
]

describe("MCP tool server", () => {
  it("refuses a session without a valid key with 401 in the spec's shape", async () => {
    const initialize = {
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } }
    }
    for (const key of [null, "pk_wrong"]) {
      const res = await host.request("POST", "/mcp", {
        key,
        body: initialize,
        headers: { accept: "application/json, text/event-stream" }
      })
      assert.strictEqual(res.status, 401)
      assert.deepStrictEqual(res.body, { error: "Invalid API key" })
    }
    // Two different keys in one request are refused too (decisions 5).
    const both = await host.request("POST", "/mcp", {
      body: initialize,
      headers: { accept: "application/json, text/event-stream", authorization: `Bearer ${host.otherKey}` }
    })
    assert.strictEqual(both.status, 401)
    // A browser page's request (any Origin) is refused even with a valid key: no DNS-rebinding path to the tools.
    const fromPage = await host.request("POST", "/mcp", {
      body: initialize,
      headers: { accept: "application/json, text/event-stream", origin: "http://evil.example" }
    })
    assert.strictEqual(fromPage.status, 403)
    assert.isString(fromPage.body.error)
  })

  it("lists every tool with an `action` and `params` input; `help` lists actions with their params", async () => {
    const client = await connect({ "x-api-key": host.key })
    const { tools } = await client.listTools()
    assert.deepStrictEqual(tools.map((t) => t.name), TOOLS)
    const customers = tools.find((t) => t.name === "customers")!
    assert.deepStrictEqual(Object.keys(customers.inputSchema.properties ?? {}), ["action", "params"])
    const help = await call(client, "customers", { action: "help" })
    assert.isFalse(help.isError)
    assert.deepStrictEqual(help.value.map((a: any) => a.action), ["list", "get", "create", "update", "delete"])
    const create = help.value.find((a: any) => a.action === "create")
    assert.deepStrictEqual(create.params.required, ["customer"])
    // The reference's own words: the operation's summary, then its description.
    assert.match(create.description, /^Create a customer\. \S/)
    const update = help.value.find((a: any) => a.action === "update")
    assert.includeMembers(Object.keys(update.params.properties), ["id", "customer"])
    await client.close()
  })

  it("calls one action of every tool with a bearer key, scoped to the key's project", async () => {
    const client = await connect({ authorization: `Bearer ${host.key}` })
    const status = await call(client, "status", {})
    assert.isFalse(status.isError, JSON.stringify(status.value))
    assert.strictEqual(status.value.project.name, "Project A")
    assert.strictEqual(status.value.api_key.name, "test")
    assert.strictEqual(status.value.numbers_count, 0)
    assert.strictEqual(status.value.plan.events_enabled, true)

    const docs = await call(client, "search_docs", { params: { query: "customer" } })
    assert.isFalse(docs.isError)
    assert.isTrue(docs.value.some((op: any) => op.path === "/platform/v1/customers" && op.method === "POST"))

    const created = await call(client, "customers", { action: "create", params: { customer: { name: "Acme", external_customer_id: "mcp-1" } } })
    assert.isFalse(created.isError, JSON.stringify(created.value))
    assert.strictEqual(created.value.name, "Acme")
    // The REST endpoint sees the same record; the other project does not.
    assert.deepStrictEqual((await host.request("GET", `/platform/v1/customers/${created.value.id}`)).body.data, created.value)
    assert.strictEqual((await host.request("GET", `/platform/v1/customers/${created.value.id}`, { key: host.otherKey })).status, 404)

    const unknownHealth = await call(client, "msg_numbers", { action: "health", params: { phone_number_id: "999" } })
    assert.isTrue(unknownHealth.isError)
    // start_setup finds the customer by its external id (or creates it) and answers its new setup link.
    const started = await call(client, "msg_numbers", { action: "start_setup", params: { external_customer_id: "mcp-1" } })
    assert.isFalse(started.isError, JSON.stringify(started.value))
    assert.strictEqual(started.value.customer.id, created.value.id)
    assert.match(started.value.setup_link.url, /\/setup\//)
    const fresh = await call(client, "msg_numbers", { action: "start_setup", params: { customer_name: "Newco" } })
    assert.isFalse(fresh.isError, JSON.stringify(fresh.value))
    assert.strictEqual(fresh.value.customer.name, "Newco")
    const nameless = await call(client, "msg_numbers", { action: "start_setup", params: { external_customer_id: "nobody" } })
    assert.deepStrictEqual(nameless, { isError: true, value: { error: "params.customer_name is required when no customer matches" } })
    const links = await call(client, "setup_links", { action: "list", params: { customer_id: created.value.id } })
    assert.deepStrictEqual(links.value.map((l: any) => [l.id, l.status]), [[started.value.setup_link.id, "active"]])
    const revoked = await call(client, "setup_links", {
      action: "revoke",
      params: { customer_id: created.value.id, id: started.value.setup_link.id }
    })
    assert.strictEqual(revoked.value.status, "revoked")
    const again = await call(client, "setup_links", {
      action: "revoke",
      params: { customer_id: created.value.id, id: started.value.setup_link.id }
    })
    assert.isTrue(again.isError)

    // A viewer embed made through MCP opens the viewer; revoked, it no longer does.
    const embed = await call(client, "workflow_embeds", { action: "create", params: { workflow_embed: { scope_type: "project" } } })
    assert.isFalse(embed.isError, JSON.stringify(embed.value))
    assert.match(embed.value.embed_url, /\/viewer\/we_/)
    assert.strictEqual((await host.request("GET", "/viewer/v1/session", { key: null, headers: { "x-viewer-token": embed.value.token } })).status, 200)
    const listedEmbeds = await call(client, "workflow_embeds", { action: "list", params: {} })
    assert.deepStrictEqual(listedEmbeds.value.map((e: any) => e.id), [embed.value.id])
    assert.isFalse((await call(client, "workflow_embeds", { action: "revoke", params: { id: embed.value.id } })).isError)
    assert.strictEqual((await host.request("GET", "/viewer/v1/session", { key: null, headers: { "x-viewer-token": embed.value.token } })).status, 401)

    const lists: Array<[string, string, Record<string, unknown>]> = [
      ["msg_numbers", "list", {}],
      ["msg_conversations", "list", { limit: 5 }],
      ["msg_messages", "list", {}],
      ["msg_templates", "list", {}],
      ["webhooks", "list", {}],
      ["workflows", "list", { status: "draft" }],
      ["functions", "list", {}],
      ["events", "list_definitions", {}]
    ]
    for (const [tool, action, params] of lists) {
      const listed = await call(client, tool, { action, params })
      assert.isFalse(listed.isError, `${tool}.${action}: ${JSON.stringify(listed.value)}`)
      assert.deepStrictEqual(listed.value, [], `${tool}.${action}`)
    }
    const searched = await call(client, "logs", { action: "search", params: { source: "webhook_delivery", problems_only: true } })
    assert.isFalse(searched.isError, JSON.stringify(searched.value))
    assert.deepStrictEqual([searched.value.available, searched.value.events], [true, []])
    const catalog = await call(client, "logs", { action: "catalog" })
    assert.isFalse(catalog.isError, JSON.stringify(catalog.value))
    assert.isTrue(catalog.value.catalog.sources.some((s: any) => s.value === "webhook_delivery"))
    const history = await call(client, "diagnostic_investigations", {
      action: "conversation_history",
      params: { conversation_id: "00000000-0000-0000-0000-000000000000" }
    })
    assert.isTrue(history.isError)
    await client.close()
  })

  it("scopes every request by the key it carries, not by the session's first key", async () => {
    const transport = new StreamableHTTPClientTransport(new URL(`${host.url}/mcp`), { requestInit: { headers: { "x-api-key": host.key } } })
    const client = new Client({ name: "mcp-test", version: "1.0.0" })
    await client.connect(transport)
    const mine = await call(client, "customers", { action: "create", params: { customer: { name: "Only A's" } } })
    assert.isFalse(mine.isError)
    const res = await fetch(`${host.url}/mcp`, {
      method: "POST",
      headers: {
        "x-api-key": host.otherKey,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-session-id": transport.sessionId!,
        "mcp-protocol-version": transport.protocolVersion!
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "customers", arguments: { action: "get", params: { id: mine.value.id } } } })
    })
    const text = await res.text()
    // A JSON answer or one SSE event: either way the result names project B's 404.
    const result = JSON.parse(text.startsWith("{") ? text : text.split("\n").find((l) => l.startsWith("data:"))!.slice(5)).result
    assert.isTrue(result.isError)
    assert.deepStrictEqual(JSON.parse(result.content[0].text), { error: (await host.request("GET", `/platform/v1/customers/${mine.value.id}`, { key: host.otherKey })).body.error })
    await client.close()
  })

  it("runs a workflow's lifecycle through the REST envelopes: definition, status, triggers, a stale lock", async () => {
    const client = await connect({ "x-api-key": host.key })
    const created = await host.request("POST", "/platform/v1/workflows", { body: { workflow: { name: "MCP flow" } } })
    assert.strictEqual(created.status, 201, created.text)
    const id: string = created.body.data.id
    const definition = {
      nodes: [
        { id: "start", position: { x: 0, y: 0 }, data: { node_type: "start", config: {} } },
        { id: "hello", position: { x: 100, y: 0 }, data: { node_type: "send_text", config: { message: "Hi" } } }
      ],
      edges: [{ source: "start", target: "hello" }]
    }
    const updated = await call(client, "workflows", { action: "update_definition", params: { id, workflow: { definition, lock_version: 0 } } })
    assert.isFalse(updated.isError, JSON.stringify(updated.value))
    const read = await call(client, "workflows", { action: "get_definition", params: { id } })
    assert.deepStrictEqual(read.value.definition.nodes.map((n: any) => n.id), ["start", "hello"])
    const stale = await call(client, "workflows", { action: "set_status", params: { id, workflow: { status: "active", lock_version: 0 } } })
    assert.isTrue(stale.isError)
    const rest = await host.request("PATCH", `/platform/v1/workflows/${id}`, { body: { workflow: { status: "active", lock_version: 0 } } })
    assert.strictEqual(rest.status, 409)
    assert.deepStrictEqual(stale.value, { error: rest.body.error })
    const active = await call(client, "workflows", { action: "set_status", params: { id, workflow: { status: "active", lock_version: 1 } } })
    assert.strictEqual(active.value.status, "active", JSON.stringify(active.value))
    const triggers = await call(client, "workflows", {
      action: "replace_triggers",
      params: { id, triggers: [{ trigger_type: "api_call" }] }
    })
    assert.isFalse(triggers.isError, JSON.stringify(triggers.value))
    const listed = await call(client, "workflows", { action: "list_triggers", params: { id } })
    assert.strictEqual(listed.value.length, 1)
    const executions = await call(client, "workflows", { action: "list_executions", params: { id } })
    assert.deepStrictEqual(executions.value, [])
    await client.close()
  })

  it("creates, deploys and invokes a function with the caller's key; the invocation is logged", async () => {
    const client = await connect({ "x-api-key": host.key })
    const code = `export default { async fetch(request) { return Response.json({ got: await request.json() }) } }`
    const created = await call(client, "functions", { action: "create", params: { function: { name: "MCP echo", code } } })
    assert.isFalse(created.isError, JSON.stringify(created.value))
    const id: string = created.value.id
    const deploying = await call(client, "functions", { action: "deploy", params: { id } })
    assert.deepStrictEqual(deploying.value, { message: "Function deployment started", function_id: id, status: "deploying" })
    const deadline = Date.now() + 10_000
    while ((await host.request("GET", `/platform/v1/functions/${id}`)).body.data.status !== "deployed") {
      assert.isBelow(Date.now(), deadline, "deploy did not end")
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    const invoked = await call(client, "functions", { action: "invoke", params: { id, order: 7 } })
    assert.deepStrictEqual(invoked, { isError: false, value: { got: { order: 7 } } })
    const invocations = await call(client, "functions", { action: "invocations", params: { id } })
    assert.strictEqual(invocations.value.total, 1)
    assert.strictEqual(invocations.value.invocations[0].request_body, JSON.stringify({ order: 7 }))
    await client.close()
  })

  it("flags failures as tool errors with the REST endpoint's message", async () => {
    const client = await connect({ "x-api-key": host.key })
    const rest = await host.request("POST", "/platform/v1/customers", { body: { customer: { name: "   " } } })
    const blank = await call(client, "customers", { action: "create", params: { customer: { name: "   " } } })
    assert.isTrue(blank.isError)
    assert.deepStrictEqual(blank.value, { error: rest.body.error })

    const missing = await call(client, "customers", { action: "get", params: { id: "00000000-0000-0000-0000-000000000000" } })
    assert.isTrue(missing.isError)
    assert.deepStrictEqual(missing.value, {
      error: (await host.request("GET", "/platform/v1/customers/00000000-0000-0000-0000-000000000000")).body.error
    })

    const decode = await call(client, "workflows", { action: "list", params: { status: "nonsense" } })
    assert.isTrue(decode.isError)
    assert.deepStrictEqual(decode.value, { error: (await host.request("GET", "/platform/v1/workflows?status=nonsense")).body.error })

    const unknown = await call(client, "customers", { action: "explode" })
    assert.isTrue(unknown.isError)
    assert.match(unknown.value.error, /^Unknown action "explode"/)
    const noId = await call(client, "customers", { action: "get", params: {} })
    assert.deepStrictEqual(noId, { isError: true, value: { error: "params.id is required" } })
    const noAction = await call(client, "customers", { params: {} })
    assert.deepStrictEqual(noAction, { isError: true, value: { error: "action is required (one of help, list, get, create, update, delete)" } })
    const notObject = await call(client, "customers", { action: "list", params: [1] })
    assert.deepStrictEqual(notObject, { isError: true, value: { error: "params must be an object" } })
    await client.close()
  })
})
