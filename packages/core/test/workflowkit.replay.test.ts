/**
 * Record and replay (`testing/Recording.ts`): a run's step events become a
 * conversation script; replayed on the same definition it holds, and on a
 * changed one it names, per node, the first thing done differently.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { runFlowScript } from "../src/testing/FlowScripts.ts"
import { layerMemoryParley } from "../src/testing/MemoryParley.ts"
import { compareFacts, nodeFacts, recordScript, workflowBodyOf } from "../src/testing/Recording.ts"
import { testWorkflow } from "../src/testing/WorkflowKit.ts"

const node = (id: string, node_type: string, config: Record<string, unknown> = {}) => ({
  id,
  position: { x: 0, y: 0 },
  data: { node_type, config }
})

const FN = "score-fn"
const definition = {
  nodes: [
    node("start", "start"),
    node("menu", "send_interactive", {
      interactive_type: "button",
      body_text: "Track or talk?",
      buttons: [{ id: "track", title: "Track" }, { id: "talk", title: "Talk" }]
    }),
    node("choice", "wait_for_response", { save_response_to: "choice" }),
    node("lookup", "webhook", { url: "https://shop.test/orders", method: "POST", save_response_to: "order" }),
    node("score", "function", { function_id: FN, save_response_to: "score" }),
    node("status", "send_text", { message: "Order {{vars.order.status}}, score {{vars.score.value}}" }),
    node("more", "wait_for_response", { save_response_to: "more", has_timeout: true, timeout_seconds: 600 }),
    node("mood", "decide", { decision_type: "ai", provider_model_name: "parley-sim", conditions: [{ label: "fine" }, { label: "upset" }] }),
    node("bye", "send_text", { message: "Bye" }),
    node("human", "handoff", { reason: "upset" })
  ],
  edges: [
    { source: "start", target: "menu" },
    { source: "menu", target: "choice" },
    { source: "choice", target: "lookup" },
    { source: "lookup", target: "score" },
    { source: "score", target: "status" },
    { source: "status", target: "more" },
    { source: "more", target: "mood" },
    { source: "mood", target: "bye", label: "fine" },
    { source: "mood", target: "human", label: "upset" }
  ]
}
const body = { workflow: { name: "Desk", definition } }

/** A run as a host would have it: the contact taps, the shop and the function answer, the wait times out, the model decides. */
const recorded = Effect.gen(function*() {
  const flow = yield* testWorkflow(body, {
    webhooks: [{ body: { status: "shipped" } }],
    functions: { [FN]: { answer: { value: 7 } } },
    model: [{ text: "upset" }]
  })
  const ada = yield* flow.contact("+15551234567", "Ada")
  yield* ada.says("hi")
  yield* ada.taps("Track")
  yield* ada.expectReply({ interactive: { body: "Track or talk?" } })
  yield* ada.expectReply({ text: "Order shipped, score 7" })
  yield* flow.advance("10 minutes")
  yield* flow.expectStatus("handoff")
  // What an export reads from the host: the stored workflow (its function's id is the host's) and the run's events.
  const stored = workflowBodyOf(flow.workflow)
  const script = recordScript({
    id: "run-1",
    workflow: "desk.workflow.json",
    definition: stored.workflow.definition,
    events: yield* flow.events,
    contact: { phone: ada.phone, name: "Ada" }
  })
  const functionId = stored.workflow.definition.nodes.find((n) => n.id === "score")!.data.config["function_id"] as string
  return { script, stored, functionId }
}).pipe(Effect.provide(layerMemoryParley))

describe("record and replay", () => {
  it.effect("a run becomes a script: its inputs as steps, its answers as doubles, what each node did", () =>
    Effect.gen(function*() {
      const { functionId, script } = yield* recorded
      assert.notStrictEqual(functionId, FN)
      assert.deepStrictEqual(script.steps, [{ say: "hi" }, { tap: "Track" }, { wait: 600 }])
      assert.deepStrictEqual(script.webhooks, [{ url: "https://shop.test/orders", status: 200, body: { status: "shipped" } }])
      assert.deepStrictEqual(script.functions, { [functionId]: { answers: [{ value: 7 }] } })
      assert.deepStrictEqual(script.model, [{ text: "upset" }])
      assert.deepStrictEqual(script.recorded?.["status"], ["entered", "sent text \"Order shipped, score 7\"", "edge next"])
      assert.deepStrictEqual(script.recorded?.["mood"], ["entered", "edge upset"])
      assert.deepStrictEqual(script.recorded?.["human"], ["entered", "handoff"])
    }))

  it.effect("replayed on the same definition, it holds", () =>
    Effect.gen(function*() {
      const { script, stored } = yield* recorded
      const result = yield* runFlowScript("replay", script, stored)
      assert.deepStrictEqual(result, { name: "replay", ok: true, steps: 3 })
    }))

  it.effect("replayed on a changed definition, it reports the first difference of each node", () =>
    Effect.gen(function*() {
      const { script, stored } = yield* recorded
      const changed = {
        workflow: {
          ...stored.workflow,
          definition: {
            nodes: stored.workflow.definition.nodes.map((n) =>
              n.id === "status" ? node("status", "send_text", { message: "Your order is {{vars.order.status}}" }) : n
            ),
            edges: stored.workflow.definition.edges.map((e) => (e.source === "mood" ? { ...e, target: e.target === "bye" ? "human" : "bye" } : e))
          }
        }
      }
      const result = yield* runFlowScript("replay", script, changed)
      assert.deepStrictEqual(result, {
        name: "replay",
        ok: false,
        step: 4,
        action: "compare with the recording",
        message: [
          "node status: recorded sent text \"Order shipped, score 7\", replay sent text \"Your order is shipped\"",
          "node human: recorded entered, replay nothing more",
          "node bye: recorded nothing more, replay entered"
        ].join("\n    ")
      })
    }))

  it.effect("an agent's model answers are recorded turn by turn, and replayed", () =>
    Effect.gen(function*() {
      const agentBody = {
        workflow: {
          name: "Agent desk",
          definition: {
            nodes: [
              node("start", "start"),
              node("agent", "agent", { provider_model_name: "parley-sim", system_prompt: "You help Acme's customers." }),
              node("bye", "send_text", { message: "Done: {{vars.agent_summary}}" })
            ],
            edges: [{ source: "start", target: "agent" }, { source: "agent", target: "bye" }]
          }
        }
      }
      const turns = [
        { text: "Hi! How can I help?" },
        { tool_calls: [{ name: "complete_task", arguments: { summary: "refund issued" } }] }
      ]
      const { script, stored } = yield* Effect.gen(function*() {
        const flow = yield* testWorkflow(agentBody, { model: turns })
        const bo = yield* flow.contact("+15557654321", "Bo")
        yield* bo.says("Hello")
        yield* bo.expectReply({ text: "Hi! How can I help?" })
        yield* bo.says("Refund please")
        yield* bo.expectReply({ text: "Done: refund issued" })
        const stored = workflowBodyOf(flow.workflow)
        return { stored, script: recordScript({ id: "run-2", workflow: "agent.workflow.json", definition: stored.workflow.definition, events: yield* flow.events }) }
      }).pipe(Effect.provide(layerMemoryParley))

      assert.deepStrictEqual(script.model, turns)
      assert.deepStrictEqual(script.recorded?.["agent"]?.slice(0, 2), ["entered", "sent text \"Hi! How can I help?\""])
      assert.deepStrictEqual(yield* runFlowScript("agent replay", script, stored), { name: "agent replay", ok: true, steps: 2 })
    }))

  it("compares node by node", () => {
    assert.deepStrictEqual(compareFacts({ a: ["entered", "edge x"] }, { a: ["entered", "edge x"] }), [])
    assert.deepStrictEqual(compareFacts({ a: ["entered", "edge x"] }, { a: ["entered", "edge y"], b: ["entered"] }), [
      "node a: recorded edge x, replay edge y",
      "node b: recorded nothing more, replay entered"
    ])
    assert.deepStrictEqual(nodeFacts([]), {})
  })
})
