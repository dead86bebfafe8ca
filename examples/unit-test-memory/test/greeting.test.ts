/**
 * A workflow definition tested with the kit (docs/testing.md): a scripted
 * contact talks to it over the simulated network on memory ports. The kit
 * waits out the workflow's debounce (1 s by default) after each message the
 * contact sends, so "says" then "expectReply" holds with no clock advance
 * here; `advance` is only for the workflow's own waits.
 */
import { assert, describe, it } from "@effect/vitest"
import { layerMemoryParley, testWorkflow } from "@parley/core/testing"
import { Effect } from "effect"

const node = (id: string, node_type: string, config: Record<string, unknown> = {}) => ({
  id,
  position: { x: 0, y: 0 },
  data: { node_type, config }
})

// The JSON body of `POST /platform/v1/workflows`, as a team keeps it beside its code.
const greeting = {
  workflow: {
    name: "Greeting",
    definition: {
      nodes: [
        node("start", "start"),
        node("hello", "send_text", { message: "Hi {{context.contact.name}}! What should we call you?" }),
        node("ask", "wait_for_response", { save_response_to: "nickname", has_timeout: true, timeout_seconds: 3600 }),
        node("confirm", "send_text", { message: "Nice to meet you, {{vars.nickname}}." })
      ],
      edges: [
        { source: "start", target: "hello" },
        { source: "hello", target: "ask" },
        { source: "ask", target: "confirm" }
      ]
    }
  }
}

// The same greeting, branching on whether the contact answered: a function decides (its id is a key the kit maps).
const ANSWERED = "answered-fn"
const patient = {
  workflow: {
    name: "Patient greeting",
    definition: {
      nodes: [
        ...greeting.workflow.definition.nodes.slice(0, 3),
        node("answered", "decide", { decision_type: "function", function_id: ANSWERED, conditions: [{ label: "yes" }, { label: "no" }] }),
        greeting.workflow.definition.nodes[3]!,
        node("later", "send_text", { message: "No rush, write any time." })
      ],
      edges: [
        ...greeting.workflow.definition.edges.slice(0, 2),
        { source: "ask", target: "answered" },
        { source: "answered", target: "confirm", label: "yes" },
        { source: "answered", target: "later", label: "no" }
      ]
    }
  }
}
const answeredCode = `async function handler(request) {
  const { execution_context } = await request.json()
  return Response.json({ next_edge: execution_context.system.last_resume.reason === "timeout" ? "no" : "yes" })
}`

describe("the greeting workflow", () => {
  it.effect("greets, takes the answer and confirms it", () =>
    Effect.gen(function*() {
      const flow = yield* testWorkflow(greeting)
      const ada = yield* flow.contact("+15551234567", "Ada")

      yield* ada.says("hi")
      yield* ada.expectReply({ text: "Hi Ada! What should we call you?" })
      yield* flow.expectStatus("waiting")

      yield* ada.says("Addie")
      yield* ada.expectReply({ text: "Nice to meet you, Addie." })
      yield* ada.expectNoReply
      yield* flow.expectStatus("ended")
      yield* flow.expectPath(["start", "hello", "ask", "confirm"])
      yield* flow.expectVars({ nickname: "Addie" })
      yield* flow.expectEvents(["execution_started", "execution_resumed", "execution_ended"])
    }).pipe(Effect.provide(layerMemoryParley)))

  it.effect("a function decides: silent for the hour, the contact gets the other branch", () =>
    Effect.gen(function*() {
      const flow = yield* testWorkflow(patient, { functions: { [ANSWERED]: { code: answeredCode } } })
      const bo = yield* flow.contact("+15557654321", "Bo")
      yield* bo.says("hello")
      yield* bo.expectReply({ text_contains: "What should we call you?" })

      yield* flow.advance("1 hour")
      yield* bo.expectReply({ text: "No rush, write any time." })
      yield* flow.expectPath(["start", "hello", "ask", "answered", "later"])
      yield* flow.expectEdges(["next", "next", "next", "no", "next"])
    }).pipe(Effect.provide(layerMemoryParley)))

  it.effect("fails, naming both messages, when the bot says something else", () =>
    Effect.gen(function*() {
      const flow = yield* testWorkflow(greeting)
      const ada = yield* flow.contact("+15551234567", "Ada")
      yield* ada.says("hi")
      const error = yield* Effect.flip(ada.expectReply({ text: "Hello Ada!" }))
      assert.strictEqual(
        error.message,
        "Expected the bot to send text \"Hello Ada!\"; it sent text \"Hi Ada! What should we call you?\""
      )
    }).pipe(Effect.provide(layerMemoryParley)))
})
