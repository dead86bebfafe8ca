/**
 * The agent node in the real host, as a user would try it: the simulated
 * model listed by `GET /provider_models`, a workflow whose agent has a
 * function tool (workerd), a webhook tool (a loopback receiver), a knowledge
 * base and an MCP server (the official SDK's server), a contact writing in
 * through `/sandbox/inbound`, and every iteration and tool call in the step
 * events. The model's key (from an environment variable) appears in no
 * answer, log line or step event.
 */
import { assert, describe, it } from "@effect/vitest"
import { Ids, ProviderModels } from "@parley/core"
import { ModelSimulator } from "@parley/core/simulators"
import { layerMemoryJobQueue, layerMemoryStorage } from "@parley/core/testing"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import { afterAll, beforeAll } from "vitest"
import { startServer as startMcpServer, TOKEN as MCP_TOKEN } from "../../core/test/ai/mcpServer.ts"
import { connectSimulatedNumber, eventually, type MessagingHost, startMessagingHost } from "./messaging.support.ts"
import { type Receiver, startReceiver } from "./receiver.ts"

const MODEL_KEY = "sk-agent-test-5f1c9e"

let host: MessagingHost
let receiver: Receiver
let mcpUrl: string
let phoneNumberId: string
let close: () => Promise<void>

beforeAll(async () => {
  const scope = Effect.runSync(Scope.make())
  await Effect.runPromise(Effect.gen(function*() {
    host = yield* startMessagingHost(Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layer), {
      PARLEY_ALLOW_PRIVATE_WEBHOOK_URLS: "true",
      AGENT_TEST_MODEL_KEY: MODEL_KEY
    })
    phoneNumberId = (yield* connectSimulatedNumber(host, { sink: true })).phoneNumberId
    receiver = yield* startReceiver
    mcpUrl = (yield* startMcpServer).url
  }).pipe(Effect.provideService(Scope.Scope, scope)))
  close = () => Effect.runPromise(Scope.close(scope, Exit.void))
}, 120_000)
afterAll(() => close())

const simulator = () => Context.get(host.context, ModelSimulator)

const node = (id: string, node_type: string, config: Record<string, unknown> = {}) => ({
  id,
  type: "flow-node",
  position: { x: 0, y: 0 },
  data: { node_type, config }
})

const ok = <A extends { status: number; text: string }>(res: A, status = 200) => {
  assert.strictEqual(res.status, status, res.text)
  return res
}

const orderFunction = `export default {
  async fetch(request) {
    const payload = await request.json()
    const id = payload.input.order_id
    return Response.json({ order_id: id, status: id === "A1" ? "shipped" : "unknown", vars: { last_order: id } })
  }
}`

const FAQ = [
  "Shipping\n\nOrders leave our warehouse within two working days. Tracking links arrive by message.",
  "Refunds\n\nRefunds are paid back to the original card within five working days after we receive the parcel.",
  "Opening hours\n\nThe support desk answers from 9:00 to 17:00, Monday to Friday."
].join("\n\n")

/** The number's inbound trigger belongs to one active workflow at a time: the previous one goes back to draft. */
let previous: string | undefined

const createAgentWorkflow = async (functionId: string, modelName: string) => {
  if (previous !== undefined) {
    ok(await host.request("PATCH", `/platform/v1/workflows/${previous}`, { body: { workflow: { status: "draft" } } }))
  }
  const created = ok(await host.request("POST", "/platform/v1/workflows", {
    body: {
      workflow: {
        name: `Support agent ${previous === undefined ? 1 : 2}`,
        message_debounce_seconds: 0,
        definition: {
          nodes: [
            node("start", "start"),
            node("agent", "agent", {
              provider_model_name: modelName,
              system_prompt: "You are Acme's support agent. The contact is {{context.name}}.",
              flow_agent_function_tools: [{
                name: "order_status",
                description: "The status of an order",
                function_id: functionId,
                input_schema: { type: "object", properties: { order_id: { type: "string" } }, required: ["order_id"] }
              }],
              flow_agent_webhooks: [{
                name: "create_ticket",
                description: "Open a support ticket",
                url: `${receiver.url}/tickets`,
                http_method: "POST",
                headers: { "X-Source": "parley" },
                body: { queue: "support" },
                body_schema: { type: "object", properties: { subject: { type: "string" } }, required: ["subject"] },
                jmespath_query: "ticket.id"
              }],
              flow_agent_knowledge_bases: [{ name: "faq", description: "Acme's policies", knowledge_base_text: FAQ }],
              flow_agent_mcp_servers: [{ name: "orders", description: "Order system", url: mcpUrl, headers: { Authorization: `Bearer ${MCP_TOKEN}` } }]
            }),
            node("bye", "send_text", { message: "Bye! ({{vars.agent_summary}})" })
          ],
          edges: [
            { id: "e1", source: "start", target: "agent", label: "next" },
            { id: "e2", source: "agent", target: "bye", label: "next" }
          ]
        }
      }
    }
  }), 201)
  const id = created.body.data.id as string
  ok(await host.request("POST", `/platform/v1/workflows/${id}/triggers`, {
    body: { trigger: { trigger_type: "inbound_message", phone_number_id: phoneNumberId } }
  }), 201)
  ok(await host.request("PATCH", `/platform/v1/workflows/${id}`, { body: { workflow: { status: "active" } } }))
  previous = id
  return id
}

const say = async (from: string, text: string) =>
  ok(await host.request("POST", "/sandbox/inbound", { body: { phone_number_id: phoneNumberId, from, message: { type: "text", text: { body: text } } } }), 202)

const runOf = async (workflowId: string) => {
  let run: Record<string, any> | undefined
  await eventually("the run", async () => {
    const list = ok(await host.request("GET", `/platform/v1/workflows/${workflowId}/executions`))
    run = list.body.data[0]
    return run !== undefined
  })
  return run!
}

const untilStatus = async (id: string, status: string) => {
  let detail: Record<string, any> = {}
  await eventually(`execution ${id} ${status}`, async () => {
    detail = ok(await host.request("GET", `/platform/v1/workflow_executions/${id}`)).body.data
    return detail.status === status
  }, 30_000)
  return detail
}

const received = (to: string) =>
  Effect.runPromise(host.simulator.outbox(phoneNumberId)).then((all) =>
    all.filter((m) => m.to === to).flatMap((m) => {
      const text = (m.envelope as { text?: { body?: string } }).text?.body
      return typeof text === "string" ? [text] : []
    })
  )

describe("agent node (Node host)", () => {
  it("lists the simulated model, runs an agent with all four kinds of tools, and shows every step; the key never shows", async () => {
    const models = ok(await host.request("GET", "/platform/v1/provider_models")).body.data as ReadonlyArray<{ name: string }>
    assert.include(models.map((m) => m.name), "parley-sim")
    // A model whose key comes from an environment variable, at the same simulator.
    const sim = models.find((m) => m.name === "parley-sim") as Record<string, unknown>
    assert.notProperty(sim, "base_url")
    assert.notProperty(sim, "api_key_env")
    await Effect.runPromise(Effect.gen(function*() {
      yield* Context.get(host.context, ProviderModels).declare({
        name: "keyed-sim",
        model: "parley-sim",
        base_url: `${host.url}/model-simulator/v1`,
        api_key_env: "AGENT_TEST_MODEL_KEY"
      })
    }))

    const fn = ok(await host.request("POST", "/platform/v1/functions", { body: { function: { name: "order status", code: orderFunction } } }), 201)
    const functionId = fn.body.data.id as string
    ok(await host.request("POST", `/platform/v1/functions/${functionId}/deploy`), 202)
    await eventually("function deployed", async () => {
      const got = ok(await host.request("GET", `/platform/v1/functions/${functionId}`)).body.data
      if (got.status === "failed") throw new Error(got.last_deploy_error)
      return got.status === "deployed"
    }, 60_000)

    receiver.answer(() => ({ status: 201, body: JSON.stringify({ ticket: { id: "T-9", queue: "support" } }), headers: { "content-type": "application/json" } }))
    const workflowId = await createAgentWorkflow(functionId, "keyed-sim")

    await Effect.runPromise(simulator().script([
      { tool_calls: [{ name: "order_status", arguments: { order_id: "A1" } }, { name: "faq", arguments: { query: "how long do refunds take" } }] },
      { tool_calls: [{ name: "create_ticket", arguments: { subject: "late parcel" } }, { name: "orders__lookup_order", arguments: { order_id: "A1" } }] },
      { text: "Your order A1 has shipped, refunds take five working days, and ticket T-9 is open." },
      { tool_calls: [{ name: "complete_task", arguments: { summary: "order A1 checked" } }] }
    ], { model: "parley-sim" }))

    const contact = "15550102030"
    await say(contact, "Where is my order A1? And how long do refunds take?")
    const run = await runOf(workflowId)
    await untilStatus(run.id, "waiting")
    assert.deepStrictEqual(await received(contact), ["Your order A1 has shipped, refunds take five working days, and ticket T-9 is open."])

    await say(contact, "Thanks, that's all")
    const done = await untilStatus(run.id, "ended")
    assert.strictEqual(done.execution_context.vars.last_order, "A1")
    assert.strictEqual(done.execution_context.vars.agent_summary, "order A1 checked")
    assert.deepStrictEqual((await received(contact)).slice(-1), ["Bye! (order A1 checked)"])

    const events = ok(await host.request("GET", `/platform/v1/workflow_executions/${run.id}/events?event_type=agent_iteration_started,agent_tool_called,agent_message_sent&per_page=100`))
      .body.data as ReadonlyArray<{ event_type: string; payload: Record<string, any> }>
    const oldestFirst = [...events].reverse()
    assert.strictEqual(oldestFirst.filter((e) => e.event_type === "agent_iteration_started").length, 4)
    const tools = oldestFirst.filter((e) => e.event_type === "agent_tool_called")
    assert.deepStrictEqual(tools.map((e) => e.payload.tool), ["order_status", "faq", "create_ticket", "orders__lookup_order", "complete_task"])
    assert.strictEqual(JSON.parse(tools[0]!.payload.output).status, "shipped")
    assert.match(tools[1]!.payload.output.passages[0], /Refunds are paid back to the original card/)
    assert.strictEqual(tools[2]!.payload.output, "T-9")
    assert.match(tools[3]!.payload.output, /Order A1: shipped/)
    assert.strictEqual(oldestFirst.filter((e) => e.event_type === "agent_message_sent").length, 1)

    const ticket = receiver.requests.find((r) => r.path === "/tickets")!
    assert.deepStrictEqual(JSON.parse(ticket.raw.toString()), { queue: "support", subject: "late parcel" })
    assert.strictEqual(ticket.headers["x-source"], "parley")

    // The key went to the model (as its bearer) and nowhere else.
    const all = ok(await host.request("GET", `/platform/v1/workflow_executions/${run.id}/events?per_page=100`)).text
    for (const [where, text] of [["answers", host.answers.join("\n")], ["logs", host.logs.join("\n")], ["step events", all]] as const) {
      assert.notInclude(text, MODEL_KEY, `the model key appeared in ${where}`)
    }
  }, 120_000)

  it("hands over to a human with the agent tool", async () => {
    const workflowId = await createAgentWorkflow(
      ok(await host.request("GET", "/platform/v1/functions")).body.data[0].id,
      "parley-sim"
    )
    await Effect.runPromise(simulator().script([{ tool_calls: [{ name: "handoff_to_human", arguments: { reason: "wants a person" } }] }], { model: "parley-sim" }))
    await say("15550109999", "I want to talk to a person")
    const run = await runOf(workflowId)
    const detail = await untilStatus(run.id, "handoff")
    assert.strictEqual(detail.status, "handoff")
  }, 60_000)
})
