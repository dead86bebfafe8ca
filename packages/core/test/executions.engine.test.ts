/**
 * The execution engine end to end on memory ports and the network simulator:
 * an API start runs its steps, parks on a wait and is resumed by the wait's timer.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { TestClock } from "effect/testing"
import { ExecutionEngine } from "../src/executions/Engine.ts"
import { Executions } from "../src/executions/Executions.ts"
import { layerExecutionsWorkers } from "../src/executions/ExecutionsJobs.ts"
import { layerMessagingWorkers } from "../src/messaging/MessagingJobs.ts"
import { MessageConfigs } from "../src/messaging/numbers/MessageConfigs.ts"
import * as Parley from "../src/Parley.ts"
import { Projects } from "../src/projects/Projects.ts"
import { Ids } from "../src/shared/Ids.ts"
import { layerMemoryFunctionRuntime, layerMemoryJobQueue, layerMemoryStorage, layerMemoryWebhookHttp } from "../src/testing/index.ts"
import { WebhookSettings } from "../src/webhooks/Settings.ts"
import { UpstreamSettings } from "../src/messaging/Upstream.ts"
import { Workflows } from "../src/workflows/Workflows.ts"

const Ports = Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layerSequential)
const Services = Layer.mergeAll(layerExecutionsWorkers, layerMessagingWorkers).pipe(
  Layer.provideMerge(Parley.layerExecutionServices),
  Layer.provideMerge(Parley.layerFunctionServices),
  Layer.provideMerge(Parley.layerServices),
  Layer.provideMerge(layerMemoryFunctionRuntime()),
  Layer.provideMerge(Layer.mergeAll(layerMemoryWebhookHttp, WebhookSettings.layer({ allowPrivateUrls: false }))),
  Layer.provideMerge(Ports)
)

const settle = Effect.yieldNow.pipe(Effect.repeat({ times: 50 }))
// Timers and group commits keep time on the clock: let a little pass.
const idle = Effect.gen(function*() {
  for (let i = 0; i < 20; i++) yield* Effect.andThen(TestClock.adjust("10 millis"), settle)
  yield* (yield* ExecutionEngine).idle
})

const given = Effect.gen(function*() {
  const projects = yield* Projects
  const project = yield* projects.create("Acme")
  const { secret } = yield* projects.createKey(project.id, "tests")
  const principal = yield* projects.authenticate(secret)
  // The simulated number: the run's sender.
  const config = Option.getOrThrow(yield* (yield* MessageConfigs).bootstrap(project.id))
  return { principal, config }
})

const node = (id: string, node_type: string, config: Record<string, unknown> = {}) => ({
  id,
  type: "flow-node",
  position: { x: 0, y: 0 },
  data: { node_type, config }
})
const edge = (source: string, target: string, label = "next") => ({ id: `${source}-${target}`, source, target, label })

describe("execution engine (memory)", () => {
  it.effect("runs start → set_variable → wait (timeout) → set_variable, and logs every step", () =>
    Effect.gen(function*() {
      const { principal } = yield* given
      const workflow = yield* (yield* Workflows).create(principal, {
        name: "Ask",
        status: "active",
        definition: {
          nodes: [
            node("start", "start"),
            node("greet", "set_variable", { variable_name: "greeting", variable_value: "Hi {{vars.name}}" }),
            node("ask", "wait_for_response", { has_timeout: true, timeout_seconds: 60, save_response_to: "answer" }),
            node("after", "set_variable", { variable_name: "n", variable_value: "42", value_type: "number" })
          ],
          edges: [edge("start", "greet"), edge("greet", "ask"), edge("ask", "after")]
        }
      })
      const executions = yield* Executions
      const ack = yield* executions.start(principal, workflow.id, { phone_number: "+15551234567", variables: { name: "Ada" } }, {
        ip: null,
        user_agent: null
      })
      assert.strictEqual(ack.message, "Workflow execution started")
      yield* idle
      const waiting = yield* executions.get(principal, ack.id)
      assert.strictEqual(waiting.status, "waiting")
      assert.strictEqual(waiting.waiting_reason, "wait_for_response")
      assert.strictEqual(waiting.execution_context.vars.greeting, "Hi Ada")
      assert.strictEqual(waiting.current_step?.identifier, "ask")

      yield* TestClock.adjust("61 seconds")
      // The memory job queue fires the timer on the clock.
      yield* idle
      const ended = yield* executions.get(principal, ack.tracking_id)
      assert.strictEqual(ended.status, "ended")
      assert.strictEqual(ended.execution_context.vars.n, 42)
      assert.deepStrictEqual((ended.execution_context.system.last_resume as { reason: string }).reason, "timeout")
      const types = [...ended.events].reverse().map((e) => e.event_type)
      assert.includeMembers(types, ["execution_started", "step_entered", "variables_set", "wait_timeout", "execution_resumed", "execution_ended"])
    }).pipe(Effect.provide(Layer.fresh(Services))))
  it.effect("sends the greeting once, waits for the reply and is resumed by the API", () =>
    Effect.gen(function*() {
      const { config, principal } = yield* given
      const settings = yield* UpstreamSettings
      const simulator = Option.getOrThrow(settings.simulator)
      yield* simulator.inbound(config.phone_number_id, { from: "15551234567", message: { type: "text", text: { body: "hello" } } })
      yield* idle
      const workflow = yield* (yield* Workflows).create(principal, {
        name: "Greet",
        status: "active",
        definition: {
          nodes: [
            node("start", "start"),
            node("hi", "send_text", { message: "Hi {{vars.name}}" }),
            node("ask", "wait_for_response", { save_response_to: "answer" })
          ],
          edges: [edge("start", "hi"), edge("hi", "ask")]
        }
      })
      const executions = yield* Executions
      const ack = yield* executions.start(principal, workflow.id, { phone_number: "+15551234567", variables: { name: "Ada" } }, { ip: null, user_agent: null })
      yield* idle
      const waiting = yield* executions.get(principal, ack.id)
      assert.strictEqual(waiting.status, "waiting")
      assert.isNotNull(waiting.msg_conversation_id, "the send links the run to the conversation")
      const greetings = (yield* simulator.outbox(config.phone_number_id)).filter((m) => m.type === "text")
      assert.deepStrictEqual(greetings.map((m) => (m.envelope as { text: { body: string } }).text.body), ["Hi Ada"])
      const performed = waiting.events.find((e) => e.event_type === "action_performed")
      assert.strictEqual(performed?.payload["message_id"], greetings[0]!.id)

      const resumed = yield* executions.resume(principal, ack.id, { message: { kind: "text", data: "Fine" } })
      assert.strictEqual(resumed.requested_execution_id, ack.id)
      yield* idle
      const ended = yield* executions.get(principal, ack.id)
      assert.strictEqual(ended.status, "ended")
      assert.strictEqual(ended.execution_context.vars.answer, "Fine")
      assert.strictEqual((yield* simulator.outbox(config.phone_number_id)).filter((m) => m.type === "text").length, 1)
    }).pipe(Effect.provide(Layer.fresh(Services))))
})
