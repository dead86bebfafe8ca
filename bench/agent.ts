/**
 * The agent node's cost per iteration on a real host over embedded
 * PostgreSQL (durable, as `npm start` runs it), against calling the model
 * directly (decisions 10.6; issue: added p50 ≤ 3 ms per iteration).
 *
 * Parley: runs of a workflow whose agent calls a local tool
 * (`get_current_datetime`) `iterations - 1` times and then answers, on the
 * host's model simulator served over HTTP. One iteration, from one
 * `agent_iteration_started` to the next, is the step's reads (queued input,
 * the model's record), the model call, the local tool answered with it, and
 * the one checkpoint that journals both.
 *
 * Baseline: the very requests those runs sent to the model (read back from
 * the simulator), sent again to the same simulator over HTTP, one at a time,
 * and answered the same way: the model call alone. Added per iteration: the
 * difference of the p50s.
 *
 *   node --conditions=@parley/source bench/agent.ts
 */
import { Executions, MessageConfigs, ProviderModels, Projects } from "@parley/core"
import { ModelSimulator, type ModelTurn } from "@parley/core/simulators"
import { Context, Effect, Option, References } from "effect"
import { performance } from "node:perf_hooks"
import { fileURLToPath } from "node:url"
import { type Percentiles, percentiles } from "./executions.ts"
import { startBenchHost } from "./host.ts"

const KEY = "pk_bench_agent_0123456789abcdef012"
const MODEL = "bench-sim"

export interface AgentBenchResult {
  readonly runs: number
  readonly iterations: number
  readonly parley: Percentiles
  readonly direct: Percentiles
  readonly addedP50Ms: number
}

const node = (id: string, node_type: string, config: Record<string, unknown> = {}) => ({
  id,
  type: "flow-node",
  position: { x: 0, y: 0 },
  data: { node_type, config }
})

export const benchAgent = (options: { readonly runs: number; readonly iterations: number }) =>
  Effect.scoped(Effect.gen(function*() {
    const host = yield* startBenchHost(KEY, { durable: true })
    const models = Context.get(host.context, ProviderModels)
    yield* models.declare({ name: MODEL, model: MODEL, base_url: `${host.url}/model-simulator/v1` })
    const simulator = Context.get(host.context, ModelSimulator)
    const executions = Context.get(host.context, Executions)
    const principal = yield* Context.get(host.context, Projects).authenticate(KEY)
    const number = Option.getOrThrow(yield* Context.get(host.context, MessageConfigs).bootstrap(principal.project.id))
    const api = (method: string, path: string, body?: unknown) =>
      Effect.promise(() =>
        fetch(`${host.url}${path}`, {
          method,
          headers: { "x-api-key": KEY, "content-type": "application/json" },
          ...(body === undefined ? {} : { body: JSON.stringify(body) })
        }).then((r) => r.json() as Promise<any>)
      )

    const created = yield* api("POST", "/platform/v1/workflows", {
      workflow: {
        name: "Bench agent",
        status: "active",
        definition: {
          nodes: [node("start", "start"), node("agent", "agent", {
            provider_model_name: MODEL,
            system_prompt: "You help with orders.",
            max_iterations: 200,
            // Nothing to send: the network is not what is measured.
            message_delivery_mode: "tool_only"
          })],
          edges: [{ id: "e1", source: "start", target: "agent", label: "next" }]
        }
      }
    })
    const workflowId = created.data.id as string
    const tick: ModelTurn = { tool_calls: [{ name: "get_current_datetime", arguments: {} }] }

    const intervals: Array<number> = []
    for (let run = 0; run < options.runs; run++) {
      yield* simulator.script([...Array.from({ length: options.iterations - 1 }, () => tick), { text: "Done." }], { model: MODEL })
      const ack = yield* executions.start(principal, workflowId, { phone_number: "+15550001234", phone_number_id: number.phone_number_id, variables: { run } }, { ip: null, user_agent: null })
        .pipe(Effect.orDie)
      for (;;) {
        const e = yield* executions.get(principal, ack.id)
        if (e.status === "failed") return yield* Effect.die(new Error(`bench run failed: ${JSON.stringify(e.error_details)}`))
        if (e.status !== "running") break
        yield* Effect.sleep("20 millis")
      }
      const events = yield* api("GET", `/platform/v1/workflow_executions/${ack.id}/events?event_type=agent_iteration_started&per_page=100`)
      const at = (events.data as ReadonlyArray<{ created_at: string }>).map((e) => Date.parse(e.created_at)).sort((a, b) => a - b)
      for (let i = 1; i < at.length; i++) intervals.push(at[i]! - at[i - 1]!)
    }

    // The same requests, straight to the model.
    const sent = (yield* simulator.requests).filter((r) => r.path === "/chat/completions")
    const direct: Array<number> = []
    for (const request of sent) {
      yield* simulator.script([tick], { model: MODEL })
      const began = performance.now()
      yield* Effect.promise(() =>
        fetch(`${host.url}/model-simulator/v1/chat/completions`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(request.body)
        }).then((r) => r.text())
      )
      direct.push(performance.now() - began)
    }
    const parley = percentiles(intervals)
    const model = percentiles(direct)
    return { runs: options.runs, iterations: options.iterations, parley, direct: model, addedP50Ms: parley.p50 - model.p50 } satisfies AgentBenchResult
  }))

export const formatAgentBench = (r: AgentBenchResult): string =>
  [
    `Agent iterations (${r.runs} runs × ${r.iterations} iterations, durable PostgreSQL, model simulator over HTTP)`,
    `  Parley, one iteration (reads + model call + local tool + one checkpoint)   p50 ${r.parley.p50.toFixed(2)} ms   p99 ${r.parley.p99.toFixed(2)} ms`,
    `  the same requests straight to the model                                    p50 ${r.direct.p50.toFixed(2)} ms   p99 ${r.direct.p99.toFixed(2)} ms`,
    `  added per iteration: p50 ${r.addedP50Ms.toFixed(2)} ms (target <= 3 ms); ratio Parley / model ${(r.parley.p50 / Math.max(r.direct.p50, 0.001)).toFixed(2)}`,
    ""
  ].join("\n")

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  Effect.runPromise(benchAgent({ runs: 10, iterations: 20 }).pipe(
    Effect.map((r) => console.log(formatAgentBench(r))),
    Effect.provideService(References.MinimumLogLevel, "Warn")
  )).catch((error) => {
    console.error(error)
    process.exitCode = 1
  })
}
