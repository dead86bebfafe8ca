/**
 * A runaway function (`while (true) {}`) must not fail other functions'
 * invocations (decisions: "Hardening: two hosts, runaway functions"). Real
 * workerd processes: while one invocation of the runaway freezes its
 * process until the supervisor kills it, other functions are invoked many
 * times at once, enough that some of their requests spill over to the
 * frozen process or wait on it; none may fail, and their latency meanwhile
 * is logged.
 */
import { assert, describe, it } from "@effect/vitest"
import { type FunctionLimits, type FunctionRequest, FunctionRuntime } from "@parley/core"
import { layerMemoryFunctionKv } from "@parley/core/testing"
import { Clock, Effect, Fiber, Layer } from "effect"
import { layerWorkerdFunctionRuntime, type WorkerdRuntimeOptions, WorkerdSupervisor } from "../src/adapters/workerd/Workerd.ts"

const runtime = (options: WorkerdRuntimeOptions = {}) =>
  Layer.fresh(layerWorkerdFunctionRuntime(options).pipe(Layer.provideMerge(layerMemoryFunctionKv)))

const limits: FunctionLimits = { timeoutMs: 5_000, memoryMb: 128 }
const request = (url = "/"): FunctionRequest => ({ method: "POST", url, headers: {}, body: new Uint8Array(0) })
const text = (body: Uint8Array) => new TextDecoder().decode(body)
const percentile = (samples: ReadonlyArray<number>, p: number) => {
  const sorted = [...samples].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!
}

const spinning = `export default {
  async fetch(request) {
    if (new URL(request.url).pathname === "/spin") { while (true) {} }
    return new Response("spinner ok")
  }
}`
const answering = (answer: string) => `async function handler() { return new Response(${JSON.stringify(answer)}) }`

/**
 * Waits until an invocation of `functionId` has had the host's go on slot `slot`: from then on its code runs
 * there (a spinner freezes the process), whatever the machine's load. A fixed sleep may end before it starts.
 */
const startedOn = (slot: number, functionId: string) =>
  Effect.gen(function*() {
    const supervisor = yield* WorkerdSupervisor
    while (!(yield* supervisor.stats).some((proc) => proc.slot === slot && proc.started.includes(functionId))) {
      yield* Effect.sleep(5)
    }
  })

describe("workerd runtime: runaway isolation", () => {
  it.live("no innocent invocation fails while a runaway freezes its process and is killed", () =>
    Effect.gen(function*() {
      const functions = yield* FunctionRuntime
      const supervisor = yield* WorkerdSupervisor
      yield* functions.deploy("spinner", 1, spinning, { timeoutMs: 1_000, memoryMb: 128 }) // slot 0
      yield* functions.deploy("echo", 1, answering("echo"), limits) // slot 1
      const before = yield* supervisor.stats

      const runaway = yield* Effect.flip(functions.invoke("spinner", request("/spin"), { env: {} })).pipe(Effect.forkChild)
      // Running (and freezing its process) before the load starts: requests that had started beside it in the
      // same instant are lost with the process, and are not run again (decisions).
      yield* startedOn(0, "spinner")
      // 16 callers at once: past the spill-over threshold, so some requests go to the runaway's process.
      const latencies: Array<number> = []
      const failures: Array<string> = []
      const start = yield* Clock.currentTimeMillis
      yield* Effect.forEach(Array.from({ length: 16 }), () =>
        Effect.gen(function*() {
          while ((yield* Clock.currentTimeMillis) - start < 2_500) {
            const sent = performance.now()
            const outcome = yield* Effect.result(functions.invoke("echo", request(), { env: {} }))
            latencies.push(performance.now() - sent)
            if (outcome._tag === "Failure") failures.push(`${outcome.failure.reason}: ${outcome.failure.message}`)
            else assert.strictEqual(text(outcome.success.body), "echo")
          }
        }), { concurrency: "unbounded", discard: true })
      const error = yield* Fiber.join(runaway)
      assert.strictEqual(error.reason, "timeout")
      console.log(
        `innocent invocations while a runaway was killed: ${latencies.length}, failed ${failures.length}, ` +
          `p50 ${percentile(latencies, 50).toFixed(1)} ms, p99 ${percentile(latencies, 99).toFixed(1)} ms, ` +
          `max ${Math.max(...latencies).toFixed(1)} ms`
      )
      assert.deepStrictEqual(failures, [])
      const after = yield* supervisor.stats
      assert.notStrictEqual(
        after.find((proc) => proc.slot === 0)?.pid,
        before.find((proc) => proc.slot === 0)!.pid,
        "the runaway's process was killed"
      )
      // The runaway itself is served again by its respawned process.
      assert.strictEqual(text((yield* functions.invoke("spinner", request("/ok"), { env: {} })).body), "spinner ok")
    }).pipe(Effect.provide(runtime({ processes: 2 }))), 30_000)

  it.live("invocations queued behind a runaway in its own process move to a healthy one; the runaway stays home", () =>
    Effect.gen(function*() {
      const functions = yield* FunctionRuntime
      yield* functions.deploy("spinner", 1, spinning, { timeoutMs: 1_000, memoryMb: 128 }) // slot 0
      yield* functions.deploy("echo", 1, answering("echo"), limits) // slot 1
      yield* functions.deploy("neighbour", 1, answering("neighbour"), limits) // slot 0, with the spinner

      const runaway = yield* Effect.flip(functions.invoke("spinner", request("/spin"), { env: {} })).pipe(Effect.forkChild)
      // Frozen once it has its go, and not yet seen as stalled (500 ms of silence): the neighbour's requests go to
      // the frozen process and wait there. A neighbour that had its go before the spinner's would be lost with the
      // process (an invocation that started is never run again), so none is sent before.
      yield* startedOn(0, "spinner")
      // A second runaway invocation waits there too; it must not be moved to (and freeze) the healthy process.
      const again = yield* Effect.flip(functions.invoke("spinner", request("/spin"), { env: {} })).pipe(Effect.forkChild)
      const latencies: Array<number> = []
      const failures: Array<string> = []
      const start = yield* Clock.currentTimeMillis
      yield* Effect.forEach(["neighbour", "echo", "neighbour", "echo", "neighbour", "echo"], (name) =>
        Effect.gen(function*() {
          while ((yield* Clock.currentTimeMillis) - start < 2_000) {
            const sent = performance.now()
            const outcome = yield* Effect.result(functions.invoke(name, request(), { env: {} }))
            latencies.push(performance.now() - sent)
            if (outcome._tag === "Failure") failures.push(`${name} ${outcome.failure.reason}: ${outcome.failure.message}`)
            else assert.strictEqual(text(outcome.success.body), name)
          }
        }), { concurrency: "unbounded", discard: true })
      assert.strictEqual((yield* Fiber.join(runaway)).reason, "timeout")
      assert.strictEqual((yield* Fiber.join(again)).reason, "timeout")
      console.log(
        `neighbours and others while a runaway froze its process: ${latencies.length} invocations, failed ${failures.length}, ` +
          `p50 ${percentile(latencies, 50).toFixed(1)} ms, p99 ${percentile(latencies, 99).toFixed(1)} ms, ` +
          `max ${Math.max(...latencies).toFixed(1)} ms`
      )
      assert.deepStrictEqual(failures, [])
    }).pipe(Effect.provide(runtime({ processes: 2 }))), 30_000)
})
