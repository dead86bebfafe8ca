/**
 * A workflow end to end in a unit test: memory ports, the network simulator in
 * process, a simulated contact and the `TestClock` — a one-day wait passes in
 * milliseconds. `layerMemoryParley` is every service and worker the host
 * runs; `settle` lets what is due run.
 */
import { assert, describe, it } from "@effect/vitest"
import { Executions, Workflows } from "@parley/core"
import { layerMemoryParley, sandboxProject, settle, simulatedContact } from "@parley/core/testing"
import { Effect } from "effect"
import { TestClock } from "effect/testing"

const node = (id: string, node_type: string, config: Record<string, unknown> = {}) => ({
  id,
  position: { x: 0, y: 0 },
  data: { node_type, config }
})

const checkIn = {
  nodes: [
    node("start", "start"),
    node("ask", "send_text", { message: "Hi {{vars.name}}, how was your stay?" }),
    node("wait", "wait_for_response", { save_response_to: "review", has_timeout: true, timeout_seconds: 86_400 }),
    node("done", "set_variable", { variable_name: "outcome", variable_value: "{{system.last_resume.reason}}" })
  ],
  edges: [
    { source: "start", target: "ask" },
    { source: "ask", target: "wait" },
    { source: "wait", target: "done" }
  ]
}

describe("a workflow on memory ports", () => {
  it.effect("asks, waits a day for the reply, then goes on without it", () =>
    Effect.gen(function*() {
      const { phoneNumberId, principal } = yield* sandboxProject("Hotel")
      const ada = yield* simulatedContact(phoneNumberId, "+15551234567", "Ada")
      // Free-form messages need the contact to have written in the last 24 hours.
      yield* ada.say("hello")
      yield* settle

      const workflow = yield* (yield* Workflows).create(principal, { name: "Check-in", status: "active", definition: checkIn })
      const executions = yield* Executions
      const started = yield* executions.start(principal, workflow.id, { phone_number: ada.phone, variables: { name: "Ada" } }, {
        ip: null,
        user_agent: null
      })
      yield* settle
      assert.deepStrictEqual(yield* ada.received, ["Hi Ada, how was your stay?"])
      assert.strictEqual((yield* executions.get(principal, started.id)).status, "waiting")

      yield* TestClock.adjust("1 day")
      yield* settle
      const ended = yield* executions.get(principal, started.id)
      assert.strictEqual(ended.status, "ended")
      assert.strictEqual(ended.execution_context.vars["outcome"], "timeout")
      assert.notProperty(ended.execution_context.vars, "review", "the timeout saved no reply")
    }).pipe(Effect.provide(layerMemoryParley)))

  it.effect("is resumed through the API with the reply", () =>
    Effect.gen(function*() {
      const { phoneNumberId, principal } = yield* sandboxProject("Hotel")
      const bo = yield* simulatedContact(phoneNumberId, "+15557654321")
      yield* bo.say("hello")
      yield* settle
      const workflow = yield* (yield* Workflows).create(principal, { name: "Check-in", status: "active", definition: checkIn })
      const executions = yield* Executions
      const started = yield* executions.start(principal, workflow.id, { phone_number: bo.phone, variables: { name: "Bo" } }, {
        ip: null,
        user_agent: null
      })
      yield* settle
      yield* executions.resume(principal, started.id, { message: { kind: "text", data: "Lovely" } })
      yield* settle
      assert.deepStrictEqual(yield* bo.received, ["Hi Bo, how was your stay?"])
      const ended = yield* executions.get(principal, started.id)
      assert.strictEqual(ended.execution_context.vars["review"], "Lovely")
      assert.strictEqual(ended.execution_context.vars["outcome"], "api")
      const events = yield* executions.events(principal, started.id, {}, { mode: "cursor", limit: 100 })
      assert.includeMembers(events.items.map((e) => e.event_type), ["execution_started", "action_performed", "execution_resumed", "execution_ended"])
    }).pipe(Effect.provide(layerMemoryParley)))
})
