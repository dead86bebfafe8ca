/**
 * The recovery sweep on its own beat (default settings, the test clock): a
 * run whose host died mid-slice is taken over once its lease ended, by the
 * workers' periodic sweep alone (no job, no call from the test).
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Effect, Layer, Option } from "effect"
import { TestClock } from "effect/testing"
import { ExecutionEngine, LEASE_MS, SWEEP_INTERVAL_MS } from "../src/executions/Engine.ts"
import { Executions } from "../src/executions/Executions.ts"
import { layerExecutionsWorkers } from "../src/executions/ExecutionsJobs.ts"
import { layerMessagingWorkers } from "../src/messaging/MessagingJobs.ts"
import { MessageConfigs } from "../src/messaging/numbers/MessageConfigs.ts"
import * as Parley from "../src/Parley.ts"
import { ExecutionsRepo } from "../src/executions/ExecutionsRepo.ts"
import { Projects } from "../src/projects/Projects.ts"
import { Ids } from "../src/shared/Ids.ts"
import { layerMemoryFunctionRuntime, layerMemoryJobQueue, layerMemoryLanguageModels, layerMemoryStorage, layerMemoryWebhookHttp } from "../src/testing/index.ts"
import { WebhookSettings } from "../src/shared/OutboundSettings.ts"
import { Workflows } from "../src/workflows/Workflows.ts"
import { SimulatedUpstream } from "../src/simulators/index.ts"

const Services = Layer.mergeAll(layerExecutionsWorkers, layerMessagingWorkers).pipe(
  Layer.provideMerge(Parley.layerExecutionServices),
  Layer.provideMerge(Parley.layerFunctionServices),
  Layer.provideMerge(Parley.layerServices),
  Layer.provideMerge(SimulatedUpstream.layerSimulatorConfig),
  Layer.provideMerge(layerMemoryFunctionRuntime()),
  Layer.provideMerge(Layer.mergeAll(layerMemoryWebhookHttp, WebhookSettings.layer({ allowPrivateUrls: false }), layerMemoryLanguageModels())),
  Layer.provideMerge(Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layerSequential))
)

const settle = Effect.yieldNow.pipe(Effect.repeat({ times: 50 }))
const idle = Effect.gen(function*() {
  for (let i = 0; i < 20; i++) yield* Effect.andThen(TestClock.adjust("10 millis"), settle)
  yield* (yield* ExecutionEngine).idle
})

const node = (id: string, node_type: string, config: Record<string, unknown> = {}) => ({
  id,
  type: "flow-node",
  position: { x: 0, y: 0 },
  data: { node_type, config }
})
const edge = (source: string, target: string) => ({ id: `${source}-${target}`, source, target, label: "next" })

describe("the recovery sweep (memory, test clock)", () => {
  it.effect("takes over a run whose host died once its lease ended, on its own beat", () =>
    Effect.gen(function*() {
      const projects = yield* Projects
      const project = yield* projects.create("Acme")
      const principal = yield* projects.authenticate((yield* projects.createKey(project.id, "tests")).secret)
      Option.getOrThrow(yield* (yield* MessageConfigs).bootstrap(project.id))
      const workflow = yield* (yield* Workflows).create(principal, {
        name: "Sweep",
        status: "active",
        definition: {
          nodes: [
            node("start", "start"),
            node("ask0", "wait_for_response", { save_response_to: "first" }),
            node("greet", "set_variable", { variable_name: "greeting", variable_value: "hello" }),
            node("ask", "wait_for_response", { save_response_to: "answer" })
          ],
          edges: [edge("start", "ask0"), edge("ask0", "greet"), edge("greet", "ask")]
        }
      })
      const ack = yield* (yield* Executions).start(principal, workflow.id, { phone_number: "+15551234567" }, { ip: null, user_agent: null })
      yield* idle
      const repo = yield* ExecutionsRepo
      const parked = Option.getOrThrow(yield* repo.get(ack.id))
      assert.strictEqual(parked.current_node, "ask0")
      // A host took the run at `greet` and died there: its lease runs a full LEASE_MS from now.
      const now = yield* Clock.currentTimeMillis
      const crashed = {
        ...parked,
        status: "running" as const,
        waiting_reason: null,
        wait: null,
        resumable_execution_id: null,
        current_node: "greet",
        lease_owner: "dead-host",
        lease_until: new Date(now + LEASE_MS).toISOString(),
        state_version: parked.state_version + 1
      }
      assert.isTrue(yield* repo.update(crashed, parked.state_version))

      yield* TestClock.adjust(LEASE_MS - SWEEP_INTERVAL_MS)
      yield* idle
      assert.deepStrictEqual(Option.getOrThrow(yield* repo.get(ack.id)), crashed, "left alone while the lease holds")
      yield* TestClock.adjust(SWEEP_INTERVAL_MS + 1)
      yield* idle
      // The next beat at most one interval later.
      yield* TestClock.adjust(SWEEP_INTERVAL_MS)
      yield* idle
      const recovered = Option.getOrThrow(yield* repo.get(ack.id))
      assert.strictEqual(recovered.status, "waiting")
      assert.strictEqual(recovered.current_node, "ask")
      assert.strictEqual(recovered.execution_context.vars.greeting, "hello")
    }).pipe(Effect.provide(Layer.fresh(Services))))
})
