/**
 * The MCP tools over a connected (simulated) number, with the official SDK client: resolve a display number, send
 * and mark read, open a closed window with a template, create a template, and the diagnostics over what was stored.
 */
import { assert, describe, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { Ids, UpstreamSettings } from "@parley/core"
import { layerMemoryJobQueue, layerMemoryStorage } from "@parley/core/testing"
import { Context, Effect, Layer, Option } from "effect"
import { afterAll, beforeAll } from "vitest"
import { eventually, hostForSuite, type MessagingHost, storedMessage } from "./messaging.support.ts"

let host: MessagingHost
let pnid: string
let client: Client

hostForSuite(Effect.succeed(Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layer)), (h, id) => {
  host = h
  pnid = id
})
beforeAll(async () => {
  client = new Client({ name: "mcp-test", version: "1.0.0" })
  await client.connect(new StreamableHTTPClientTransport(new URL(`${host.url}/mcp`), { requestInit: { headers: { "x-api-key": host.key } } }))
})
afterAll(() => client.close())

const call = async (tool: string, action: string, params: Record<string, unknown>) => {
  const result = await client.callTool({ name: tool, arguments: { action, params } })
  const content = result.content as Array<{ type: string; text: string }>
  return { isError: result.isError === true, value: JSON.parse(content[0]!.text) }
}

const ok = async (tool: string, action: string, params: Record<string, unknown>) => {
  const answer = await call(tool, action, params)
  assert.isFalse(answer.isError, `${tool}.${action}: ${JSON.stringify(answer.value)}`)
  return answer.value
}

const contactWrites = (from: string) =>
  Effect.runPromise(host.simulator.inbound(pnid, { from, message: { type: "text", text: { body: "hello" } } } as any))

describe("MCP messaging tools", () => {
  it("resolves a display number to its phone_number_id and counts it in status", async () => {
    const number = Option.getOrThrow(Context.get(host.context, UpstreamSettings).simulatedNumber)
    const resolved = await ok("msg_numbers", "resolve", { display_phone_number: number.displayPhoneNumber })
    assert.strictEqual(resolved.phone_number_id, pnid)
    const unknown = await call("msg_numbers", "resolve", { display_phone_number: "+1 999 000 0000" })
    assert.deepStrictEqual(unknown, { isError: true, value: { error: "No connected number with display number +1 999 000 0000" } })
    assert.strictEqual((await ok("status", "status", {})).numbers_count, 1)
    assert.strictEqual((await ok("msg_numbers", "get", { phone_number_id: pnid })).phone_number_id, pnid)
    const health = await ok("msg_numbers", "health", { phone_number_id: pnid })
    assert.strictEqual(health.status, (await host.request("GET", `/platform/v1/msg/phone_numbers/${pnid}/health`)).body.data.status)
  })

  it("help describes the whole send body: a send built from it alone goes out, and a refusal names the field", async () => {
    await contactWrites("15550301077")
    const result = await client.callTool({ name: "msg_messages", arguments: { action: "help" } })
    const actions = JSON.parse((result.content as Array<{ text: string }>)[0]!.text)
    const send = actions.find((a: { action: string }) => a.action === "send").params
    assert.includeMembers(send.required, ["phone_number_id", "messaging_product", "to", "type"])
    assert.includeMembers(send.properties.type.enum, ["text", "template", "image", "interactive"])
    assert.deepStrictEqual(send.properties.text.required, ["body"])
    // Built from the schema alone: the required fields, the first value of each enum, the type's object.
    const params: Record<string, unknown> = {}
    for (const name of send.required) {
      const property = send.properties[name]
      params[name] = name === "phone_number_id" ? pnid : name === "to" ? "15550301077" : property.enum?.[0]
    }
    params[params.type as string] = { body: "built from help" }
    const sent = await ok("msg_messages", "send", params)
    assert.match(sent.messages[0].id, /^wamid\./)
    // Without `messaging_product` the network's refusal names it, not a bare `(#100) Invalid parameter`.
    const { messaging_product: _, ...missing } = params
    const refused = await call("msg_messages", "send", missing)
    assert.isTrue(refused.isError)
    assert.include(refused.value.error, "messaging_product")
  })

  it("sends, marks read, and traces the delivery from what was stored", async () => {
    const inbound = await contactWrites("15550301001")
    const stored = await storedMessage(host, pnid, inbound.id)
    const sent = await ok("msg_messages", "send", {
      phone_number_id: pnid,
      messaging_product: "whatsapp",
      to: "15550301001",
      type: "text",
      text: { body: "hi from an agent" }
    })
    const id: string = sent.messages[0].id
    assert.match(id, /^wamid\./)
    await eventually("read", async () => (await storedMessage(host, pnid, id)).status === "read")
    const read = await ok("msg_messages", "mark_read", { phone_number_id: pnid, messaging_product: "whatsapp", status: "read", message_id: inbound.id })
    assert.deepStrictEqual(read, { success: true })

    const delivery = await ok("diagnostic_investigations", "message_delivery", { phone_number_id: pnid, message_id: id })
    assert.strictEqual(delivery.message.id, id)
    assert.strictEqual(delivery.status, "read")
    assert.deepStrictEqual(delivery.status_history.map((s: any) => s.status), ["sent", "delivered", "read"])
    assert.deepStrictEqual(delivery.errors, [])

    const trace = await ok("diagnostic_investigations", "api_send_trace", { phone_number_id: pnid, phone_number: "+1 555 030 1001" })
    assert.deepStrictEqual(trace.map((m: any) => [m.id, m.origin, m.status]), [[id, "api", "read"]])

    const history = await ok("diagnostic_investigations", "conversation_history", { conversation_id: stored.conversation_id })
    assert.strictEqual(history.conversation.id, stored.conversation_id)
    assert.deepStrictEqual(history.messages.map((m: any) => m.id), [id, inbound.id])
    assert.deepStrictEqual(history.executions, [])
  })

  it("opens a closed window with a template when allowed; refuses with the proxy's message otherwise", async () => {
    const waba = Option.getOrThrow(Context.get(host.context, UpstreamSettings).simulatedNumber).businessAccountId
    const name = `mcp_start_${Date.now()}`
    const created = await ok("msg_templates", "create", {
      business_account_id: waba,
      name,
      category: "UTILITY",
      language: "en_US",
      components: [{ type: "BODY", text: "We have news for you" }]
    })
    await Effect.runPromise(host.simulator.setTemplateStatus(created.id, "APPROVED"))
    const listed = await ok("msg_templates", "list", { name })
    assert.deepStrictEqual(listed.map((t: any) => t.name), [name])

    const cold = { phone_number_id: pnid, messaging_product: "whatsapp", to: "15550301002", type: "text", text: { body: "cold" } }
    const refused = await call("msg_messages", "send", cold)
    // The network's message, and its details beside it.
    assert.deepStrictEqual(refused, {
      isError: true,
      value: {
        error: "Only template messages can be sent outside the 24-hour window: Message failed to send because more than " +
          "24 hours have passed since the customer last replied to this number."
      }
    })
    const template = { name, language: { code: "en_US" } }
    const started = await ok("msg_messages", "send", { ...cold, allow_start_with_template: true, template })
    assert.isTrue(started.started_with_template)
    const entry = (await Effect.runPromise(host.simulator.outbox(pnid))).find((e) => e.id === started.messages[0].id)!
    assert.strictEqual(entry.type, "template")
    assert.strictEqual(entry.to, "15550301002")
    const withoutTemplate = await call("msg_messages", "send", { ...cold, allow_start_with_template: true })
    assert.deepStrictEqual(withoutTemplate.value, { error: "template is required to start a closed window (allow_start_with_template)" })
  })
})
