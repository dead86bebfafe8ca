/**
 * The agent node, AI decisions and AI fields (decisions 2.3.6, 2.3.9, 2.3.10,
 * 2.3.14, 10.6), end to end on memory ports: the network simulator, and the
 * production model adapter talking to the model simulator in process.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { TestClock } from "effect/testing"
import { ProviderModels } from "../src/ai/ProviderModels.ts"
import { ModelSimulator, type ModelTurn } from "../src/simulators/model/ModelSimulator.ts"
import { EventPlans } from "../src/events/EventPlans.ts"
import { Events } from "../src/events/Events.ts"
import { ExecutionEngine, STEP_LIMIT } from "../src/executions/Engine.ts"
import { Executions } from "../src/executions/Executions.ts"
import { ExecutionsRepo } from "../src/executions/ExecutionsRepo.ts"
import { memoryModelEndpoint } from "../src/testing/MemoryLanguageModels.ts"
import { layerMemoryParley, sandboxProject, settle, simulatedContact } from "../src/testing/MemoryParley.ts"
import { MemoryWebhookReceiver } from "../src/webhooks/MemoryWebhooks.ts"
import type { TriggerInput } from "../src/workflows/Trigger.ts"
import { Triggers } from "../src/workflows/Triggers.ts"
import { Workflows } from "../src/workflows/Workflows.ts"

const Services = layerMemoryParley

const node = (id: string, node_type: string, config: Record<string, unknown> = {}) => ({
  id,
  type: "flow-node",
  position: { x: 0, y: 0 },
  data: { node_type, config }
})
const edge = (source: string, target: string, label = "next") => ({ id: `${source}-${target}-${label}`, source, target, label })

const MODEL = "sim-agent"

const given = Effect.gen(function*() {
  const project = yield* sandboxProject("Acme")
  const endpoint = memoryModelEndpoint()
  yield* (yield* ProviderModels).declare({ name: MODEL, model: endpoint.upstream_model, base_url: endpoint.base_url })
  const contact = yield* simulatedContact(project.phoneNumberId, "+15550001111", "Ada")
  return { ...project, contact }
})

type Given = Effect.Success<typeof given>

const script = (turns: ReadonlyArray<ModelTurn>) => Effect.gen(function*() { yield* (yield* ModelSimulator).script(turns) })
const requests = Effect.gen(function*() { return yield* (yield* ModelSimulator).requests })

/** An active workflow started by the contact's messages: start → nodes, edges as given. */
const inboundWorkflow = (
  g: Given,
  nodes: ReadonlyArray<ReturnType<typeof node>>,
  edges: ReadonlyArray<ReturnType<typeof edge>>,
  trigger: TriggerInput = { trigger_type: "inbound_message", phone_number_id: g.phoneNumberId }
) =>
  Effect.gen(function*() {
    const workflows = yield* Workflows
    const workflow = yield* workflows.create(g.principal, {
      name: "Support",
      status: "draft",
      message_debounce_seconds: 0,
      definition: { nodes: [node("start", "start"), ...nodes], edges: [edge("start", nodes[0]!.id), ...edges] }
    })
    yield* (yield* Triggers).create(g.principal, workflow.id, trigger)
    yield* workflows.update(g.principal, workflow.id, { status: "active" })
    return workflow
  })

const agent = (config: Record<string, unknown> = {}) =>
  node("agent", "agent", { provider_model_name: MODEL, system_prompt: "You help Acme's customers.", ...config })

/** The contact's run (the only one of the workflow). */
const theRun = (g: Given, workflowId: string) =>
  Effect.gen(function*() {
    const executions = yield* Executions
    const page = yield* executions.list(g.principal, { workflow_id: workflowId }, { mode: "page", page: 1, perPage: 10 })
    assert.strictEqual(page.items.length, 1)
    return yield* executions.get(g.principal, page.items[0]!.id)
  })

const eventsOf = (run: { readonly events: ReadonlyArray<{ readonly event_type: string; readonly payload: Record<string, unknown> }> }, type: string) =>
  run.events.filter((e) => e.event_type === type)

describe("agent node", () => {
  it.effect("answers, waits for the contact, and takes the next message as a new activation with the journal as history", () =>
    Effect.gen(function*() {
      const g = yield* given
      const w = yield* inboundWorkflow(g, [agent()], [])
      yield* script([
        { text: "Hi Ada! How can I help?" },
        { tool_calls: [{ name: "save_variable", arguments: { name: "topic", value: "order" } }] },
        { text: "Your order ships tomorrow." }
      ])
      yield* g.contact.say("Hello")
      yield* settle
      let run = yield* theRun(g, w.id)
      assert.strictEqual(run.status, "waiting")
      assert.strictEqual(run.waiting_reason, "agent")
      assert.deepStrictEqual(yield* g.contact.received, ["Hi Ada! How can I help?"])

      yield* g.contact.say("Where is my order?")
      yield* settle
      run = yield* theRun(g, w.id)
      assert.strictEqual(run.status, "waiting", JSON.stringify(run.error_details))
      assert.deepStrictEqual(yield* g.contact.received, ["Hi Ada! How can I help?", "Your order ships tomorrow."])
      assert.strictEqual(run.execution_context.vars["topic"], "order")
      assert.strictEqual(eventsOf(run, "agent_iteration_started").length, 3)
      assert.deepStrictEqual(eventsOf(run, "agent_tool_called").map((e) => e.payload["tool"]), ["save_variable"])
      assert.strictEqual(eventsOf(run, "agent_message_sent").length, 2)

      // The third call saw everything: the system prompt, both user turns, the tool call and its result.
      const seen = (yield* requests).filter((r) => r.path === "/chat/completions")
      assert.strictEqual(seen.length, 3)
      const messages = (seen[2]!.body as { messages: ReadonlyArray<{ role: string; content: unknown }> }).messages
      assert.deepStrictEqual(messages.map((m) => m.role), ["system", "user", "assistant", "user", "assistant", "tool"])
      assert.strictEqual(messages[0]!.content, "You help Acme's customers.")
      const offered = ((seen[0]!.body as { tools: ReadonlyArray<{ function: { name: string } }> }).tools).map((t) => t.function.name)
      assert.include(offered, "complete_task")
      assert.include(offered, "contact_conversations")
      assert.notInclude(offered, "emit_event")
    }).pipe(Effect.provide(Layer.fresh(Services))))

  it.effect("complete_task leaves the node with the summary in vars and follows next", () =>
    Effect.gen(function*() {
      const g = yield* given
      const w = yield* inboundWorkflow(g, [agent(), node("bye", "send_text", { message: "Done: {{vars.agent_summary}}" })], [edge("agent", "bye")])
      yield* script([{ tool_calls: [{ name: "complete_task", arguments: { summary: "refund issued" } }] }])
      yield* g.contact.say("Refund please")
      yield* settle
      const run = yield* theRun(g, w.id)
      assert.strictEqual(run.status, "ended", JSON.stringify(run.error_details))
      assert.deepStrictEqual(yield* g.contact.received, ["Done: refund issued"])
    }).pipe(Effect.provide(Layer.fresh(Services))))

  it.effect("handoff_to_human hands the run over with source agent_tool; a resume starts a new activation", () =>
    Effect.gen(function*() {
      const g = yield* given
      const w = yield* inboundWorkflow(g, [agent()], [])
      yield* script([{ tool_calls: [{ name: "handoff_to_human", arguments: { reason: "angry customer" } }] }, { text: "I'm back." }])
      yield* g.contact.say("I want a person")
      yield* settle
      let run = yield* theRun(g, w.id)
      assert.strictEqual(run.status, "handoff")
      const stored = yield* (yield* ExecutionsRepo).get(run.id)
      assert.deepStrictEqual(stored.pipe((o) => o._tag === "Some" ? o.value.handoff : null), { node_id: "agent", reason: "angry customer", source: "agent_tool" })
      yield* (yield* Executions).resume(g.principal, run.id, {})
      yield* settle
      run = yield* theRun(g, w.id)
      assert.strictEqual(run.status, "waiting")
      assert.deepStrictEqual(yield* g.contact.received, ["I'm back."])
    }).pipe(Effect.provide(Layer.fresh(Services))))

  it.effect("fails with Agent exceeded max_iterations when one activation calls the model too often", () =>
    Effect.gen(function*() {
      const g = yield* given
      const w = yield* inboundWorkflow(g, [agent({ max_iterations: 2 })], [])
      const tick: ModelTurn = { tool_calls: [{ name: "get_current_datetime", arguments: {} }] }
      yield* script([tick, tick, tick])
      yield* g.contact.say("What time is it?")
      yield* settle
      const run = yield* theRun(g, w.id)
      assert.strictEqual(run.status, "failed")
      assert.strictEqual(run.error_details?.message, "Agent exceeded max_iterations")
    }).pipe(Effect.provide(Layer.fresh(Services))))

  it.effect("an activation of more model calls than the engine's step limit runs to its end", () =>
    Effect.gen(function*() {
      const g = yield* given
      const w = yield* inboundWorkflow(g, [agent({ max_iterations: 200 })], [])
      const tick: ModelTurn = { tool_calls: [{ name: "get_current_datetime", arguments: {} }] }
      // 200 model calls (max_iterations), the activation's first step and the send: more steps than STEP_LIMIT.
      assert.strictEqual(STEP_LIMIT, 200)
      yield* script([...Array.from({ length: 199 }, () => tick), { text: "Done." }])
      yield* g.contact.say("Count to two hundred")
      yield* settle
      const run = yield* theRun(g, w.id)
      assert.strictEqual(run.status, "waiting", JSON.stringify(run.error_details))
      assert.deepStrictEqual(yield* g.contact.received, ["Done."])
    }).pipe(Effect.provide(Layer.fresh(Services))))

  it.effect("tool_only never sends assistant text; send_notification_to_user does", () =>
    Effect.gen(function*() {
      const g = yield* given
      const w = yield* inboundWorkflow(g, [agent({ message_delivery_mode: "tool_only" })], [])
      yield* script([
        { text: "thinking aloud", tool_calls: [{ name: "send_notification_to_user", arguments: { message: "On it!" } }] },
        { text: "not for the contact" }
      ])
      yield* g.contact.say("Help")
      yield* settle
      const run = yield* theRun(g, w.id)
      assert.strictEqual(run.status, "waiting")
      assert.deepStrictEqual(yield* g.contact.received, ["On it!"])
      const called = eventsOf(run, "agent_tool_called")[0]!
      assert.strictEqual(called.payload["tool"], "send_notification_to_user")
      assert.strictEqual((called.payload["output"] as { sent: boolean }).sent, true)
    }).pipe(Effect.provide(Layer.fresh(Services))))

  it.effect("an unknown tool and a bad argument reach the model as tool errors, not as a failed run", () =>
    Effect.gen(function*() {
      const g = yield* given
      const w = yield* inboundWorkflow(g, [agent()], [])
      yield* script([
        { tool_calls: [{ name: "teleport", arguments: {} }, { name: "get_current_datetime", arguments: { timezone: "Mars/Olympus" } }] },
        { text: "Sorry about that." }
      ])
      yield* g.contact.say("Hi")
      yield* settle
      const run = yield* theRun(g, w.id)
      assert.strictEqual(run.status, "waiting")
      const seen = (yield* requests).filter((r) => r.path === "/chat/completions")
      const tools = (seen[1]!.body as { messages: ReadonlyArray<{ role: string; content: string }> }).messages.filter((m) => m.role === "tool")
      assert.match(tools[0]!.content, /Unknown tool teleport/)
      assert.match(tools[1]!.content, /Unknown time zone Mars\/Olympus/)
    }).pipe(Effect.provide(Layer.fresh(Services))))

  it.effect("a model error fails the run with model_error and the model's message", () =>
    Effect.gen(function*() {
      const g = yield* given
      const w = yield* inboundWorkflow(g, [agent()], [])
      yield* script([{ error: { status: 400, message: "context too long" } }])
      yield* g.contact.say("Hi")
      yield* settle
      const run = yield* theRun(g, w.id)
      assert.strictEqual(run.status, "failed")
      assert.strictEqual(run.error_details?.code, "model_error")
      assert.match(run.error_details?.message ?? "", /context too long/)
    }).pipe(Effect.provide(Layer.fresh(Services))))

  it.effect("a message that arrives mid-activation is the model's next user turn", () =>
    Effect.gen(function*() {
      const g = yield* given
      const w = yield* inboundWorkflow(g, [agent()], [])
      yield* script([
        { tool_calls: [{ name: "get_current_datetime", arguments: {} }], delay_ms: 5_000 },
        { text: "Noted both." }
      ])
      // `settle` waits for the engine to go idle, which it does not while the model thinks: move time by hand.
      const nudge = Effect.gen(function*() {
        for (let i = 0; i < 20; i++) yield* Effect.andThen(TestClock.adjust("10 millis"), Effect.yieldNow.pipe(Effect.repeat({ times: 50 })))
      })
      yield* g.contact.say("First")
      yield* nudge
      yield* g.contact.say("Second, while you think")
      yield* nudge
      yield* TestClock.adjust("5 seconds")
      yield* settle
      const run = yield* theRun(g, w.id)
      assert.strictEqual(run.status, "waiting")
      const seen = (yield* requests).filter((r) => r.path === "/chat/completions")
      const users = (seen[1]!.body as { messages: ReadonlyArray<{ role: string; content: string }> }).messages.filter((m) => m.role === "user")
      assert.deepStrictEqual(users.map((m) => m.content), ["First", "Second, while you think"])
      assert.deepStrictEqual(yield* g.contact.received, ["Noted both."])
    }).pipe(Effect.provide(Layer.fresh(Services))))
})

describe("built-in tools", () => {
  it.effect("reading tools answer from the run and the conversation; send_media sends; ask_about_file asks the model", () =>
    Effect.gen(function*() {
      const g = yield* given
      const w = yield* inboundWorkflow(g, [agent()], [])
      yield* script([
        {
          tool_calls: [
            { name: "get_execution_metadata", arguments: {} },
            { name: "get_whatsapp_context", arguments: {} },
            { name: "contact_conversations", arguments: {} },
            { name: "save_variable", arguments: { name: "plan", value: "gold" } },
            { name: "get_variable", arguments: { name: "plan" } }
          ]
        },
        { tool_calls: [{ name: "send_media", arguments: { media_type: "image", url: "https://cdn.example.com/a.png", caption: "Your receipt" } }] },
        { tool_calls: [{ name: "ask_about_file", arguments: { question: "What is the total?", url: "https://cdn.example.com/a.png" } }] },
        { text: "The total is 42." },
        { text: "Done." }
      ])
      yield* g.contact.say("Show me my receipt")
      yield* settle
      const run = yield* theRun(g, w.id)
      assert.strictEqual(run.status, "waiting", JSON.stringify(run.error_details))
      const outputs = new Map(eventsOf(run, "agent_tool_called").map((e) => [e.payload["tool"] as string, e.payload["output"] as any]))
      assert.strictEqual(outputs.get("get_execution_metadata").workflow_name, "Support")
      assert.strictEqual(outputs.get("get_whatsapp_context").messages[0].content, "Show me my receipt")
      assert.deepStrictEqual(outputs.get("contact_conversations"), { conversations: [] })
      assert.deepStrictEqual(outputs.get("get_variable"), { name: "plan", value: "gold" })
      assert.strictEqual(run.execution_context.vars["plan"], "gold")
      assert.strictEqual(outputs.get("send_media").sent, true)
      assert.strictEqual(outputs.get("ask_about_file").answer, "The total is 42.")
      const image = (yield* g.contact.envelopes).find((e) => e["type"] === "image")
      assert.deepStrictEqual(image?.["image"], { link: "https://cdn.example.com/a.png", caption: "Your receipt" })
      // ask_about_file sent the question with the file to the model.
      const asked = (yield* requests).filter((r) => r.path === "/chat/completions")[3]!
      const content = (asked.body as { messages: ReadonlyArray<{ content: unknown }> }).messages[0]!.content
      assert.deepStrictEqual(content, [
        { type: "text", text: "What is the total?" },
        { type: "image_url", image_url: { url: "https://cdn.example.com/a.png" } }
      ])
    }).pipe(Effect.provide(Layer.fresh(Services))))
})

describe("agent tools with outside effects", () => {
  it.effect("a tool call a restart left half-done is reported to the model as unverified and never made again", () =>
    Effect.gen(function*() {
      const g = yield* given
      const hook = { name: "refund", description: "Refund an order", url: "https://shop.example.com/refunds", body: {} }
      const w = yield* inboundWorkflow(g, [agent({ flow_agent_webhooks: [hook] })], [])
      yield* script([{ text: "Hello!" }, { text: "I could not confirm the refund; let me check." }])
      yield* g.contact.say("Hi")
      yield* settle
      const run = yield* theRun(g, w.id)
      assert.strictEqual(run.status, "waiting")
      // As a host that died after recording the call leaves it: running, the call pending, nobody holding it.
      const repo = yield* ExecutionsRepo
      const stored = Option.getOrThrow(yield* repo.get(run.id))
      const call = { id: "call_1", name: "refund", params: { order: "A1" } }
      const crashed = {
        ...stored,
        status: "running" as const,
        waiting_reason: null,
        wait: null,
        resumable_execution_id: null,
        agent: { ...stored.agent!, turns: [...stored.agent!.turns, { role: "assistant" as const, text: "", calls: [call] }], work: [{ kind: "call" as const, call }] },
        pending: { kind: "agent_tool" as const, key: `${run.id}:99`, node_id: "agent", call_id: "call_1", started_at: stored.last_event_at },
        state_version: stored.state_version + 1
      }
      assert.isTrue(yield* repo.update(crashed, stored.state_version))
      yield* (yield* ExecutionEngine).runSlice(run.id)
      yield* settle
      const after = yield* theRun(g, w.id)
      assert.strictEqual(after.status, "waiting", JSON.stringify(after.error_details))
      assert.strictEqual((yield* Effect.service(MemoryWebhookReceiver)).requests.length, 0)
      const called = eventsOf(after, "agent_tool_called")[0]!
      assert.match(String(called.payload["error"]), /^Unverified/)
      const seen = (yield* requests).filter((r) => r.path === "/chat/completions")
      assert.match(JSON.stringify(seen[seen.length - 1]!.body), /Unverified/)
      assert.deepStrictEqual(yield* g.contact.received, ["Hello!", "I could not confirm the refund; let me check."])
    }).pipe(Effect.provide(Layer.fresh(Services))))

  it.effect("a webhook tool is made once and its answer (through jmespath_query) is the tool result", () =>
    Effect.gen(function*() {
      const g = yield* given
      const receiver = yield* MemoryWebhookReceiver
      receiver.respondWith(() => Effect.succeed({ status: 200, body: `{"refund":{"id":"R-7","state":"queued"}}`, headers: { "Content-Type": "application/json" } }))
      const hook = { name: "refund", description: "Refund an order", url: "https://shop.example.com/refunds", body: { shop: "acme" }, jmespath_query: "refund.id" }
      const w = yield* inboundWorkflow(g, [agent({ flow_agent_webhooks: [hook] })], [])
      yield* script([{ tool_calls: [{ name: "refund", arguments: { order: "A1" } }] }, { text: "Refund R-7 is queued." }])
      yield* g.contact.say("Refund A1 please")
      yield* settle
      const run = yield* theRun(g, w.id)
      assert.strictEqual(run.status, "waiting")
      assert.strictEqual(receiver.requests.length, 1)
      assert.deepStrictEqual(JSON.parse(new TextDecoder().decode(receiver.requests[0]!.body)), { shop: "acme", order: "A1" })
      assert.strictEqual(eventsOf(run, "agent_tool_called")[0]!.payload["output"], "R-7")
    }).pipe(Effect.provide(Layer.fresh(Services))))

  it.effect("in an observer run (analysis_only) nothing reaches the contact and the run ends where it would wait", () =>
    Effect.gen(function*() {
      const g = yield* given
      const w = yield* inboundWorkflow(g, [agent()], [], { trigger_type: "msg_event", event: "msg.message.received" })
      yield* script([
        { text: "Looks like a complaint.", tool_calls: [{ name: "send_notification_to_user", arguments: { message: "Sorry!" } }] },
        { text: "Noted." }
      ])
      yield* g.contact.say("This is broken")
      yield* settle
      const run = yield* theRun(g, w.id)
      assert.strictEqual(run.status, "ended")
      assert.deepStrictEqual(yield* g.contact.received, [])
      assert.match(String(eventsOf(run, "agent_tool_called")[0]!.payload["error"]), /observer run only analyses/)
    }).pipe(Effect.provide(Layer.fresh(Services))))
})

describe("emit_event tool", () => {
  const offeredTo = (index: number) =>
    Effect.map(requests, (all) =>
      ((all.filter((r) => r.path === "/chat/completions")[index]!.body as { tools: ReadonlyArray<{ function: { name: string } }> }).tools)
        .map((t) => t.function.name))

  it.effect("records the event with the run's conversation when enabled, and is hidden when the plan has no project events", () =>
    Effect.gen(function*() {
      const g = yield* given
      const w = yield* inboundWorkflow(g, [agent({ enabled_default_tools: ["emit_event"] })], [])
      yield* script([
        { tool_calls: [{ name: "emit_event", arguments: { name: "order.refund_requested", properties: { order: "A1" } } }] },
        { text: "Refund requested." }
      ])
      yield* g.contact.say("Refund A1")
      yield* settle
      const run = yield* theRun(g, w.id)
      assert.strictEqual(run.status, "waiting", JSON.stringify(run.error_details))
      assert.include(yield* offeredTo(0), "emit_event")
      const called = eventsOf(run, "agent_tool_called")[0]!
      assert.isUndefined(called.payload["error"])
      const eventId = (called.payload["output"] as { event_id: string }).event_id
      const listed = yield* (yield* Events).list(g.principal, {}, { mode: "cursor", limit: 10 })
      const recorded = listed.items.find((e) => e.id === eventId)!
      assert.strictEqual(recorded.name, "order.refund_requested")
      assert.strictEqual(recorded.conversation_id, run.msg_conversation_id)
    }).pipe(Effect.provide(Layer.fresh(Services))))

  it.effect("is not offered when the project's plan has no project events", () =>
    Effect.gen(function*() {
      const g = yield* given
      yield* (yield* EventPlans).set(g.principal.project.id, { events_enabled: false })
      yield* inboundWorkflow(g, [agent({ enabled_default_tools: ["emit_event"] })], [])
      yield* script([{ text: "Hello." }])
      yield* g.contact.say("Hi")
      yield* settle
      assert.notInclude(yield* offeredTo(0), "emit_event")
      assert.include(yield* offeredTo(0), "complete_task")
    }).pipe(Effect.provide(Layer.fresh(Services))))
})

describe("AI decisions and AI fields", () => {
  const decide = node("route", "decide", {
    decision_type: "ai",
    provider_model_name: MODEL,
    conditions: [
      { label: "billing", description: "Payments and invoices" },
      { label: "shipping", description: "Deliveries" }
    ]
  })
  const decided = (g: Given) =>
    inboundWorkflow(g, [decide, node("b", "send_text", { message: "Billing team" }), node("s", "send_text", { message: "Shipping team" })], [
      edge("route", "b", "billing"),
      edge("route", "s", "shipping")
    ])

  it.effect("follows the label the model answers", () =>
    Effect.gen(function*() {
      const g = yield* given
      const w = yield* decided(g)
      yield* script([{ text: "Shipping." }])
      yield* g.contact.say("Where is my parcel?")
      yield* settle
      const run = yield* theRun(g, w.id)
      assert.strictEqual(run.status, "ended")
      assert.deepStrictEqual(yield* g.contact.received, ["Shipping team"])
      assert.strictEqual(eventsOf(run, "decision_evaluated")[0]!.payload["fallback"], false)
    }).pipe(Effect.provide(Layer.fresh(Services))))

  it.effect("falls back to the first condition on an unknown label or a model error, and logs fallback: true", () =>
    Effect.gen(function*() {
      const g = yield* given
      const w = yield* decided(g)
      yield* script([{ text: "weather" }])
      yield* g.contact.say("Is it sunny?")
      yield* settle
      const run = yield* theRun(g, w.id)
      assert.deepStrictEqual(yield* g.contact.received, ["Billing team"])
      assert.strictEqual(eventsOf(run, "decision_evaluated")[0]!.payload["fallback"], true)
    }).pipe(Effect.provide(Layer.fresh(Services))))

  it.effect("fills an AI field of a send node from the model, following its prompt", () =>
    Effect.gen(function*() {
      const g = yield* given
      const w = yield* inboundWorkflow(g, [
        node("greet", "send_text", {
          message: { $ai: {} },
          provider_model_name: MODEL,
          ai_field_config: { message: { mode: "prompt", prompt: "Greet {{context.name}} warmly" } }
        })
      ], [])
      yield* script([{ text: "  Welcome, Ada!  " }])
      yield* g.contact.say("hi")
      yield* settle
      const run = yield* theRun(g, w.id)
      assert.strictEqual(run.status, "ended", JSON.stringify(run.error_details))
      assert.deepStrictEqual(yield* g.contact.received, ["Welcome, Ada!"])
      const seen = (yield* requests).filter((r) => r.path === "/chat/completions")
      assert.match(JSON.stringify(seen[0]!.body), /Field: message/)
    }).pipe(Effect.provide(Layer.fresh(Services))))
})
