/**
 * The production `FunctionRuntime`: function code runs in `workerd`
 * (Cloudflare's open-source Workers runtime, the binary of the `workerd` npm
 * package) run directly under the supervisor of `Supervisor.ts`, not through
 * miniflare. Each function is a dynamic worker (an isolate of its own) loaded
 * by a Worker Loader; a deploy loads a new generation and probes it, and only
 * then routes invocations to it, so a failed deploy leaves the serving
 * version in place. Nothing starts until the first deploy or invoke.
 *
 * What a function can reach: its request, the `env` of the invocation
 * (secrets are passed per invocation, never stored in the process), `env.KV`
 * (its own namespace of `FunctionKv`, checked on the host), and `fetch`
 * through the host, where the private-address rule applies. No host files
 * (workerd gives it a virtual file system of its own bundle), no environment
 * variables (`process.env` is empty; workerd itself starts with an empty
 * environment), no raw sockets.
 */
import * as NodeServices from "@effect/platform-node/NodeServices"
import {
  codeShapeProblem,
  type ConsoleEntry,
  detectCodeShape,
  FunctionDeployError,
  type FunctionEnvValue,
  FunctionInvokeError,
  type FunctionKv,
  type FunctionLimits,
  type FunctionRequest,
  type FunctionResponse,
  FunctionRuntime,
  functionRequestBase,
  functionStack,
  type LoadedFunction,
  toModuleSource,
  withFunctionStacks
} from "@parley/core"
import { Clock, Config, Context, Effect, Layer, Option, Semaphore } from "effect"
import { createRequire } from "node:module"
import { notLoadedMarker } from "./Dispatcher.ts"
import { makeSupervisor, type ProcessStats, type SendFailure, type SupervisorOptions } from "./Supervisor.ts"

export interface WorkerdRuntimeOptions {
  /** Processes functions are spread over; default 2. */
  readonly processes?: number | undefined
  /** V8 heap cap of every function (isolate); default 128 MB. */
  readonly memoryMb?: number | undefined
  /** A process above this resident size is recycled; default 1024 MB. */
  readonly maxProcessRssMb?: number | undefined
  /** A process older than this is recycled; default 6 hours. */
  readonly recycleAfterMs?: number | undefined
  /** Liveness ping interval; default 250 ms. */
  readonly heartbeatMs?: number | undefined
  /** Silence after which a process gets no new work; default 500 ms. */
  readonly stallMs?: number | undefined
  /** Longest wait for a process to start; default 10 s. */
  readonly startTimeoutMs?: number | undefined
  /** Lets functions `fetch` private and loopback addresses (`PARLEY_ALLOW_PRIVATE_WEBHOOK_URLS`); default false. */
  readonly allowPrivateNetwork?: boolean | undefined
  /** workerd binary; default the one of the `workerd` npm package. */
  readonly binary?: string | undefined
}

interface WorkerdPackage {
  readonly default: string
  readonly compatibilityDate: string
  readonly version: string
}

/** The `workerd` npm package: its binary's path and the compatibility date it supports. */
export const workerdPackage = (): WorkerdPackage => createRequire(import.meta.url)("workerd") as WorkerdPackage

/** Diagnostics of the process pool, for tests and benchmarks. */
export class WorkerdSupervisor extends Context.Service<WorkerdSupervisor, {
  /** The running processes as last observed. */
  readonly stats: Effect.Effect<ReadonlyArray<ProcessStats>>
  /** The running processes with their resident size read now (Linux). */
  readonly measure: Effect.Effect<ReadonlyArray<ProcessStats>>
}>()("@parley/http-node/runtime/WorkerdSupervisor") {}

interface Deployed extends LoadedFunction {
  readonly generation: number
  readonly source: string
  readonly slot: number
}

const empty = new Uint8Array(0)

/** `SyntaxError: ... at function.js:1:34` from workerd's "Failed to start Worker: Uncaught ..." text. */
const loadErrorMessage = (message: string) =>
  message
    .replace(/^Failed to start Worker:\s*/, "")
    .replace(/^Uncaught\s+/, "")
    .replace(/file:\/\/\/bundle\//g, "")
    .replace(/\s*\n\s*/g, " ")
    .trim()

/** workerd's own answer to a handler awaiting a promise nothing can settle. */
const hung = /would never generate a response/

const joinHeaders = (pairs: ReadonlyArray<readonly [string, string]>): Record<string, string> => {
  const headers: Record<string, string> = {}
  for (const [name, value] of pairs) headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`
  return headers
}

const resolveOptions = (options: WorkerdRuntimeOptions): SupervisorOptions => {
  const workerd = options.binary === undefined ? workerdPackage() : undefined
  return {
    binary: options.binary ?? workerd!.default,
    compatibilityDate: workerd?.compatibilityDate ?? workerdPackage().compatibilityDate,
    processes: options.processes ?? 2,
    memoryMb: options.memoryMb ?? 128,
    maxProcessRssMb: options.maxProcessRssMb ?? 1024,
    recycleAfterMs: options.recycleAfterMs ?? 6 * 60 * 60 * 1000,
    heartbeatMs: options.heartbeatMs ?? 250,
    stallMs: options.stallMs ?? 500,
    startTimeoutMs: options.startTimeoutMs ?? 10_000,
    allowPrivateNetwork: options.allowPrivateNetwork ?? false
  }
}

export const makeWorkerdFunctionRuntime = (options: WorkerdRuntimeOptions = {}) =>
  Effect.gen(function*() {
    const deployed = new Map<string, Deployed>()
    /** Generations being probed by a deploy, by `<id>@<generation>`. */
    const probing = new Map<string, string>()
    const locks = new Map<string, Semaphore.Semaphore>()
    let generations = 0

    const supervisor = yield* makeSupervisor(resolveOptions(options), {
      codeFor: (functionId, generation) => {
        const current = deployed.get(functionId)
        return current !== undefined && current.generation === generation
          ? current.source
          : probing.get(`${functionId}@${generation}`)
      },
      residents: () =>
        [...deployed.values()].map((entry) => ({
          functionId: entry.functionId,
          generation: entry.generation,
          slot: entry.slot
        }))
    })

    const lockFor = (functionId: string) => {
      let lock = locks.get(functionId)
      if (lock === undefined) {
        lock = Semaphore.makeUnsafe(1)
        locks.set(functionId, lock)
      }
      return lock
    }

    const deploy = Effect.fn("FunctionRuntime.deploy")(
      function*(functionId: string, version: number, code: string, limits: FunctionLimits) {
        const shape = detectCodeShape(code)
        if (shape === undefined) {
          return yield* new FunctionDeployError({ functionId, reason: "invalid_code", message: codeShapeProblem })
        }
        const source = toModuleSource(code, shape)
        return yield* lockFor(functionId).withPermit(Effect.gen(function*() {
          const previous = deployed.get(functionId)
          const slot = previous?.slot ?? supervisor.place()
          const generation = ++generations
          const key = `${functionId}@${generation}`
          probing.set(key, source)
          const outcome = yield* supervisor.send(slot, "/probe", { fn: functionId, gen: generation }, empty, limits.timeoutMs)
            .pipe(
              Effect.result,
              Effect.ensuring(Effect.sync(() => probing.delete(key)))
            )
          const refuse = (reason: FunctionDeployError["reason"], message: string) => {
            if (previous === undefined) supervisor.release(slot)
            return Effect.fail(new FunctionDeployError({ functionId, reason, message }))
          }
          if (outcome._tag === "Failure") {
            const failure: SendFailure = outcome.failure
            switch (failure._tag) {
              case "Timeout":
                return yield* refuse("timeout", `Loading the code took longer than ${limits.timeoutMs} ms`)
              case "Crashed":
                return yield* refuse("invalid_code", `Loading the code ended its process: ${failure.message}`)
              case "Unavailable":
                return yield* refuse("unavailable", failure.message)
            }
          }
          const answer = outcome.success.meta
          if (answer.ok !== true) return yield* refuse("invalid_code", loadErrorMessage(String(answer.error?.message)))
          const entry: Deployed = { functionId, version, limits, generation, source, slot }
          deployed.set(functionId, entry)
          return { functionId, version, limits } satisfies LoadedFunction
        }))
      }
    )

    const invoke = Effect.fn("FunctionRuntime.invoke")(
      function*(
        functionId: string,
        request: FunctionRequest,
        invokeOptions: { readonly env: Readonly<Record<string, FunctionEnvValue>> }
      ) {
        const started = yield* Clock.currentTimeMillis
        const fail = (
          reason: FunctionInvokeError["reason"],
          message: string,
          extra: { readonly stack?: string | undefined; readonly logs?: ReadonlyArray<ConsoleEntry> } = {}
        ) =>
          Effect.flatMap(Clock.currentTimeMillis, (now) =>
            Effect.fail(
              new FunctionInvokeError({
                functionId,
                reason,
                message,
                ...(extra.stack === undefined ? {} : { stack: extra.stack }),
                consoleLogs: extra.logs ?? [],
                durationMs: now - started
              })
            ))
        const entry = deployed.get(functionId)
        if (entry === undefined) return yield* fail("not_loaded", `No code is deployed for function ${functionId}`)
        const meta = {
          fn: functionId,
          gen: entry.generation,
          method: request.method.toUpperCase(),
          url: new URL(request.url, functionRequestBase).href,
          headers: Object.entries(request.headers),
          env: invokeOptions.env
        }
        const outcome = yield* supervisor.send(entry.slot, "/invoke", meta, request.body, entry.limits.timeoutMs).pipe(
          Effect.result
        )
        if (outcome._tag === "Failure") {
          const failure: SendFailure = outcome.failure
          switch (failure._tag) {
            case "Timeout":
              return yield* fail("timeout", `The function did not answer within ${entry.limits.timeoutMs} ms`)
            case "Crashed":
            case "Unavailable":
              return yield* fail("crashed", failure.message)
          }
        }
        const { body, meta: answer } = outcome.success
        const logs: ReadonlyArray<ConsoleEntry> = Array.isArray(answer.logs) ? withFunctionStacks(answer.logs) : []
        if (answer.ok === true) {
          const finished = yield* Clock.currentTimeMillis
          return {
            status: answer.status,
            headers: joinHeaders(answer.headers),
            body,
            consoleLogs: logs,
            durationMs: finished - started
          } satisfies FunctionResponse
        }
        const message = String(answer.error?.message)
        if (answer.phase === "load") {
          if (message.includes(notLoadedMarker)) {
            return yield* fail("not_loaded", `No code is deployed for function ${functionId}`)
          }
          if (hung.test(message)) {
            return yield* fail("timeout", "The function will never answer: it awaits a promise nothing can settle", { logs })
          }
          return yield* fail("crashed", loadErrorMessage(message), { logs })
        }
        return yield* fail("thrown", message, { stack: functionStack(answer.error?.stack), logs })
      }
    )

    const unload = Effect.fn("FunctionRuntime.unload")(function*(functionId: string) {
      const entry = deployed.get(functionId)
      if (entry === undefined) return
      deployed.delete(functionId)
      supervisor.release(entry.slot)
    })

    const loaded = (functionId: string) =>
      Effect.sync(() =>
        Option.map(Option.fromUndefinedOr(deployed.get(functionId)), (entry): LoadedFunction => ({
          functionId: entry.functionId,
          version: entry.version,
          limits: entry.limits
        }))
      )

    return {
      runtime: FunctionRuntime.of({ deploy, invoke, unload, loaded }),
      supervisor: WorkerdSupervisor.of({ stats: supervisor.stats, measure: supervisor.measure })
    }
  })

/**
 * The workerd runtime and its diagnostics; processes stop with the layer.
 * `env.KV` is served by the `FunctionKv` it is given.
 */
export const layerWorkerdFunctionRuntime = (
  options: WorkerdRuntimeOptions = {}
): Layer.Layer<FunctionRuntime | WorkerdSupervisor, never, FunctionKv> =>
  Layer.effectContext(
    Effect.map(makeWorkerdFunctionRuntime(options), ({ runtime, supervisor }) =>
      Context.make(FunctionRuntime, runtime).pipe(Context.add(WorkerdSupervisor, supervisor)))
  ).pipe(Layer.provide(NodeServices.layer))

/**
 * The same, configured from the environment: `PARLEY_ALLOW_PRIVATE_WEBHOOK_URLS`
 * (`true` lets functions reach private addresses) and
 * `PARLEY_FUNCTION_PROCESSES` (default 2).
 */
export const layerWorkerdFunctionRuntimeConfig = (
  options: WorkerdRuntimeOptions = {}
): Layer.Layer<FunctionRuntime | WorkerdSupervisor, never, FunctionKv> =>
  Layer.unwrap(
    Effect.gen(function*() {
      const allowPrivateNetwork = yield* Config.Boolean("PARLEY_ALLOW_PRIVATE_WEBHOOK_URLS").pipe(
        Config.withDefault(false)
      )
      const processes = yield* Config.Int("PARLEY_FUNCTION_PROCESSES").pipe(Config.withDefault(2))
      return layerWorkerdFunctionRuntime({ allowPrivateNetwork, processes, ...options })
    }).pipe(Effect.orDie)
  )
