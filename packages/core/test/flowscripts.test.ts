/**
 * Conversation scripts (`testing/FlowScripts.ts`) without files: a script
 * holds, or its result names the first step that did not and why.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { describeStep, FlowScript, runFlowScript } from "../src/testing/FlowScripts.ts"

const node = (id: string, node_type: string, config: Record<string, unknown> = {}) => ({ id, position: { x: 0, y: 0 }, data: { node_type, config } })
const body = {
  workflow: {
    name: "Echo",
    definition: {
      nodes: [node("start", "start"), node("echo", "send_text", { message: "You said {{vars.last_user_input}}" })],
      edges: [{ source: "start", target: "echo" }]
    }
  }
}
const script = (steps: ReadonlyArray<unknown>) => Schema.decodeUnknownSync(FlowScript)({ workflow: "echo.workflow.json", steps })

describe("conversation scripts", () => {
  it.effect("hold step by step", () =>
    Effect.gen(function*() {
      const result = yield* runFlowScript("echo", script([{ say: "hi" }, { expect: "You said hi" }, { wait: "1 day" }, { expect_no_reply: true }]), body)
      assert.deepStrictEqual(result, { name: "echo", ok: true, steps: 4 })
    }))

  it.effect("name the first step that does not hold, and why", () =>
    Effect.gen(function*() {
      const result = yield* runFlowScript("echo", script([{ say: "hi" }, { expect: { text_contains: "bye" } }, { expect: "never reached" }]), body)
      assert.deepStrictEqual(result, {
        name: "echo",
        ok: false,
        step: 2,
        action: "expect a text containing \"bye\"",
        message: "Expected the bot to send a text containing \"bye\"; it sent text \"You said hi\""
      })
    }))

  it.effect("start runs through the API when the workflow has no trigger (trigger: api)", () =>
    Effect.gen(function*() {
      const greet = {
        workflow: {
          name: "Greet",
          definition: {
            nodes: [node("start", "start"), node("hi", "send_text", { message: "Hi {{vars.name}}" })],
            edges: [{ source: "start", target: "hi" }]
          }
        }
      }
      const steps = [{ say: "hello" }, { expect_no_reply: true }, { start: { variables: { name: "Ada" } } }, { expect: "Hi Ada" }, {
        expect_status: "ended"
      }]
      const api = Schema.decodeUnknownSync(FlowScript)({ workflow: "greet.workflow.json", trigger: "api", steps })
      assert.deepStrictEqual(yield* runFlowScript("api", api, greet), { name: "api", ok: true, steps: 5 })
    }))

  it.effect("refuse a wait that is not a duration, naming the step", () =>
    Effect.gen(function*() {
      const result = yield* runFlowScript("echo", script([{ wait: "soon" }]), body)
      assert.deepStrictEqual(result, {
        name: "echo",
        ok: false,
        step: 1,
        action: "wait \"soon\"",
        message: "\"soon\" is not a duration (seconds, or e.g. \"1 hour\")"
      })
    }))

  it.effect("report a workflow the service refuses as the set-up step", () =>
    Effect.gen(function*() {
      const result = yield* runFlowScript("broken", script([{ say: "hi" }]), { workflow: { name: "Broken", definition: { nodes: [], edges: [] } } })
      assert.strictEqual(result.ok, false)
      if (!result.ok) {
        assert.strictEqual(result.step, 0)
        assert.include(result.message, "The workflow was refused")
      }
    }))

  it.effect("report a function that does not load as the set-up step", () =>
    Effect.gen(function*() {
      const broken = Schema.decodeUnknownSync(FlowScript)({
        workflow: "echo.workflow.json",
        functions: { "fn-1": { code: "async function handler(request) { return Response.json({ next_edge: " } },
        steps: [{ say: "hi" }]
      })
      const result = yield* runFlowScript("broken function", broken, body)
      assert.strictEqual(result.ok, false)
      if (!result.ok) {
        assert.strictEqual(result.step, 0)
        assert.include(result.message, "Function fn-1")
      }
    }))

  it("describes steps in one line", () => {
    assert.strictEqual(describeStep({ tap: "Yes" }), "tap \"Yes\"")
    assert.strictEqual(describeStep({ expect: { template: "order_update", parameters: ["42"] } }), "expect template order_update [\"42\"]")
  })
})
