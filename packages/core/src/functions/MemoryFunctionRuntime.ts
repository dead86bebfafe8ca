/**
 * In-process `FunctionRuntime` and `FunctionKv` for unit tests of the code
 * around functions (deploys, invocation logs, payload building). Function code
 * runs in a `node:vm` context of its own per deployed version, with the Web
 * APIs a handler needs (`Request`, `Response`, `Headers`, `URL`,
 * `TextEncoder`/`TextDecoder`, `crypto`, timers, streams) and a captured
 * `console`; `fetch` refuses every request unless a `fetch` is supplied.
 *
 * NOT a sandbox. The context shares the host's heap, thread and built-in
 * classes (`console.log.constructor` reaches the host's `Function`), there is
 * no memory limit, and only the synchronous part of an invocation is bounded
 * in real time (`vm`'s timeout): a busy loop after the handler's first `await`
 * blocks the whole test process. Asynchronous waiting is bounded by Effect's
 * `Clock`, so `TestClock.adjust` ends a hanging invocation. Module code may not
 * `import` (there is no module loader). Run untrusted code only on the
 * `workerd` adapter.
 */
import { Clock, Effect, Layer, Option } from "effect"
import { AsyncLocalStorage } from "node:async_hooks"
import * as Vm from "node:vm"
import {
  codeShapeProblem,
  detectCodeShape,
  functionRequestBase,
  functionStack,
  guestSupportSource,
  toModuleSource,
  withFunctionStacks
} from "./FunctionCode.ts"
import { FunctionKv, FunctionKvError, type KvKey, KvLimits, serveKvOperation } from "./FunctionKv.ts"
import {
  type ConsoleEntry,
  FunctionDeployError,
  type FunctionEnvValue,
  FunctionInvokeError,
  type FunctionLimits,
  type FunctionRequest,
  type FunctionResponse,
  FunctionRuntime,
  type LoadedFunction
} from "./FunctionRuntime.ts"

export interface MemoryFunctionRuntimeOptions {
  /** Outbound `fetch` for function code; by default every request is refused. */
  readonly fetch?: ((request: Request) => Promise<Response>) | undefined
}

interface GuestError {
  readonly message: string
  readonly stack?: string | undefined
}
type GuestResult =
  | { readonly ok: true; readonly status: number; readonly headers: Array<[string, string]>; readonly body: ArrayBuffer }
  | { readonly ok: false; readonly error: GuestError }

/** The guest support object, living in the function's realm. */
interface Guest {
  readonly makeConsole: (current: () => Array<ConsoleEntry> | undefined, now: () => number) => unknown
  readonly makeKv: (call: (op: string, args: Record<string, unknown>) => Promise<unknown>) => unknown
  readonly probe: (module: unknown) => { readonly ok: true } | { readonly ok: false; readonly error: GuestError }
  readonly errorOf: (error: unknown) => GuestError
}

interface Instance {
  readonly loaded: LoadedFunction
  readonly context: Vm.Context
  readonly guest: Guest
  readonly kv: unknown
  /** The context's global object: what the function's code sees as globals. */
  readonly sandbox: Record<string, unknown>
}

const staticImport = /^[ \t]*import[ \t]*[\w{*"']/m

/** The module form as a classic script: the default export assigned to `__parley_exports`. */
const moduleToScript = (source: string) =>
  `"use strict";${
    source
      .replace(/^([ \t]*)export[ \t]+default[ \t]+/m, "$1__parley_exports.default = ")
      .replace(/^([ \t]*)export[ \t]+(?=(?:async[ \t]+)?function\b|class\b|const\b|let\b|var\b)/gm, "$1")
  }`

const invokeScript = new Vm.Script("__parley_guest.invoke(__parley_exports, __parley_input, __parley_ctx)", {
  filename: "parley-invoke.js"
})

const isTimeout = (error: unknown) =>
  typeof error === "object" && error !== null && "code" in error && error.code === "ERR_SCRIPT_EXECUTION_TIMEOUT"

/** `Name: message at function.js:line[:column]`, from a compile error of the vm. */
const compileErrorMessage = (error: unknown): string => {
  if (!(error instanceof Error)) return String(error)
  const location = /function\.js:(\d+)(?::(\d+))?/.exec(error.stack ?? "")
  const where = location === null ? "" : ` at function.js:${location[1]}${location[2] === undefined ? "" : `:${location[2]}`}`
  return `${error.name}: ${error.message}${where}`
}

const joinHeaders = (pairs: ReadonlyArray<readonly [string, string]>): Record<string, string> => {
  const headers: Record<string, string> = {}
  for (const [name, value] of pairs) headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`
  return headers
}

const refuseAll = (request: Request) =>
  Promise.reject(new TypeError(`fetch to ${new URL(request.url).host} refused: the memory runtime has no network`))

export const makeMemoryFunctionRuntime = (options: MemoryFunctionRuntimeOptions = {}) =>
  Effect.gen(function*() {
    const clock = yield* Clock.Clock
    const services = yield* Effect.context<FunctionKv>()
    const runKv = Effect.runPromiseWith(services)
    const logsOf = new AsyncLocalStorage<Array<ConsoleEntry>>()
    const instances = new Map<string, Instance>()
    const outbound = options.fetch ?? refuseAll

    const createInstance = (loaded: LoadedFunction, script: Vm.Script): Effect.Effect<Instance, FunctionDeployError> =>
      Effect.try({
        try: () => {
          const sandbox: Record<string, unknown> = {
            Request,
            Response,
            Headers,
            URL,
            URLSearchParams,
            TextEncoder,
            TextDecoder,
            crypto: globalThis.crypto,
            atob,
            btoa,
            structuredClone,
            setTimeout,
            clearTimeout,
            setInterval,
            clearInterval,
            queueMicrotask,
            AbortController,
            AbortSignal,
            Blob,
            FormData,
            ReadableStream,
            WritableStream,
            TransformStream,
            fetch: (input: RequestInfo | URL, init?: RequestInit) => outbound(new Request(input, init)),
            __parley_exports: {},
            __parley_ctx: { waitUntil: () => undefined, passThroughOnException: () => undefined }
          }
          const context = Vm.createContext(sandbox, {
            name: `parley-function:${loaded.functionId}`,
            codeGeneration: { strings: false, wasm: false }
          })
          const guest = Vm.runInContext(guestSupportSource, context, { filename: "parley-guest.js" }) as Guest
          sandbox.__parley_guest = guest
          sandbox.console = guest.makeConsole(() => logsOf.getStore(), () => clock.currentTimeMillisUnsafe())
          const kv = guest.makeKv((op, args) =>
            runKv(
              serveKvOperation(loaded.functionId, { ...args, op }).pipe(
                Effect.mapError((error) => new Error(error.message))
              )
            )
          )
          // Top-level code runs now, as workerd runs it when the worker loads.
          script.runInContext(context, { timeout: loaded.limits.timeoutMs })
          return { loaded, context, guest, kv, sandbox }
        },
        catch: (error) =>
          new FunctionDeployError({
            functionId: loaded.functionId,
            reason: isTimeout(error) ? "timeout" : "invalid_code",
            message: isTimeout(error)
              ? `Loading the code took longer than ${loaded.limits.timeoutMs} ms`
              : describeThrown(error)
          })
      })

    const deploy = Effect.fn("FunctionRuntime.deploy")(
      function*(functionId: string, version: number, code: string, limits: FunctionLimits) {
        const shape = detectCodeShape(code)
        if (shape === undefined) {
          return yield* new FunctionDeployError({ functionId, reason: "invalid_code", message: codeShapeProblem })
        }
        const source = toModuleSource(code, shape)
        if (staticImport.test(source)) {
          return yield* new FunctionDeployError({
            functionId,
            reason: "invalid_code",
            message: "The memory function runtime cannot load modules: `import` is not supported"
          })
        }
        const script = yield* Effect.try({
          try: () => new Vm.Script(moduleToScript(source), { filename: "function.js" }),
          catch: (error) => new FunctionDeployError({ functionId, reason: "invalid_code", message: compileErrorMessage(error) })
        })
        const loaded: LoadedFunction = { functionId, version, limits }
        const instance = yield* createInstance(loaded, script)
        const probe = instance.guest.probe(instance.sandbox.__parley_exports)
        if (!probe.ok) {
          return yield* new FunctionDeployError({ functionId, reason: "invalid_code", message: probe.error.message })
        }
        instances.set(functionId, instance)
        return loaded
      }
    )

    const invoke = Effect.fn("FunctionRuntime.invoke")(
      function*(functionId: string, request: FunctionRequest, invokeOptions: { readonly env: Readonly<Record<string, FunctionEnvValue>> }) {
        const started = yield* Clock.currentTimeMillis
        const logs: Array<ConsoleEntry> = []
        const failure = (reason: FunctionInvokeError["reason"], message: string, stack?: string) =>
          Effect.flatMap(Clock.currentTimeMillis, (now) =>
            Effect.fail(
              new FunctionInvokeError({
                functionId,
                reason,
                message,
                ...(stack === undefined ? {} : { stack }),
                consoleLogs: withFunctionStacks(logs),
                durationMs: now - started
              })
            ))
        const instance = instances.get(functionId)
        if (instance === undefined) return yield* failure("not_loaded", `No code is deployed for function ${functionId}`)
        const { timeoutMs } = instance.loaded.limits
        const timedOut = () => failure("timeout", `The function did not answer within ${timeoutMs} ms`)

        const input = {
          method: request.method.toUpperCase(),
          url: new URL(request.url, functionRequestBase).href,
          headers: Object.entries(request.headers),
          body: new Uint8Array(request.body),
          env: structuredClone(invokeOptions.env),
          kv: instance.kv
        }
        const pending = yield* Effect.try({
          try: () =>
            logsOf.run(logs, () => {
              instance.sandbox.__parley_input = input
              return invokeScript.runInContext(instance.context, { timeout: timeoutMs }) as Promise<GuestResult>
            }),
          catch: (error) => error
        }).pipe(Effect.result)
        if (pending._tag === "Failure") {
          return yield* isTimeout(pending.failure)
            ? timedOut()
            : failure("crashed", describeThrown(pending.failure))
        }
        const settled = yield* Effect.callback<GuestResult>((resume) => {
          pending.success.then(
            (result) => resume(Effect.succeed(result)),
            (error) => resume(Effect.succeed({ ok: false, error: instance.guest.errorOf(error) }))
          )
        }).pipe(Effect.timeoutOption(timeoutMs))
        if (Option.isNone(settled)) return yield* timedOut()
        const result = settled.value
        if (!result.ok) return yield* failure("thrown", result.error.message, functionStack(result.error.stack))
        const finished = yield* Clock.currentTimeMillis
        return {
          status: result.status,
          headers: joinHeaders(result.headers),
          body: new Uint8Array(result.body),
          consoleLogs: withFunctionStacks(logs),
          durationMs: finished - started
        } satisfies FunctionResponse
      }
    )

    const unload = Effect.fn("FunctionRuntime.unload")(function*(functionId: string) {
      instances.delete(functionId)
    })

    const loaded = (functionId: string) =>
      Effect.sync(() => Option.map(Option.fromUndefinedOr(instances.get(functionId)), (instance) => instance.loaded))

    return FunctionRuntime.of({ deploy, invoke, unload, loaded })
  })

const describeThrown = (error: unknown): string => {
  if (typeof error === "object" && error !== null && "message" in error) {
    const name = "name" in error ? String(error.name) : "Error"
    return `${name}: ${String(error.message)}`
  }
  return `Uncaught ${String(error)}`
}

/** The in-process runtime (see the module comment for what it is not); `env.KV` goes to `FunctionKv`. */
export const layerMemoryFunctionRuntime = (
  options: MemoryFunctionRuntimeOptions = {}
): Layer.Layer<FunctionRuntime, never, FunctionKv> =>
  Layer.effect(FunctionRuntime, makeMemoryFunctionRuntime(options))

interface StoredValue {
  readonly value: string
  /** Epoch milliseconds. */
  readonly expiresAt: number | undefined
}

/** An in-memory `FunctionKv` whose expiries read Effect's `Clock`. */
export const makeMemoryFunctionKv = Effect.gen(function*() {
  const namespaces = new Map<string, Map<string, StoredValue>>()
  const namespace = (functionId: string) => {
    let entries = namespaces.get(functionId)
    if (entries === undefined) {
      entries = new Map()
      namespaces.set(functionId, entries)
    }
    return entries
  }
  const live = (entry: StoredValue | undefined, now: number) =>
    entry !== undefined && (entry.expiresAt === undefined || entry.expiresAt > now)

  return FunctionKv.of({
    get: (functionId, key) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        const entry = namespaces.get(functionId)?.get(key)
        return live(entry, now) ? Option.some(entry!.value) : Option.none()
      }),
    put: (functionId, key, value, options) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        const ttl = options?.expirationTtl
        namespace(functionId).set(key, { value, expiresAt: ttl === undefined ? undefined : now + ttl * 1000 })
      }),
    delete: (functionId, key) => Effect.sync(() => void namespaces.get(functionId)?.delete(key)),
    list: (functionId, options) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const prefix = options?.prefix ?? ""
        const limit = options?.limit ?? KvLimits.maxListLimit
        if (!Number.isInteger(limit) || limit < 1 || limit > KvLimits.maxListLimit) {
          return yield* new FunctionKvError({ message: `limit must be from 1 to ${KvLimits.maxListLimit}` })
        }
        const after = options?.cursor
        const names = [...(namespaces.get(functionId) ?? new Map<string, StoredValue>()).entries()]
          .filter(([name, entry]) => name.startsWith(prefix) && (after === undefined || name > after) && live(entry, now))
          .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        const page = names.slice(0, limit)
        const keys: Array<KvKey> = page.map(([name, entry]) =>
          entry.expiresAt === undefined ? { name } : { name, expiration: Math.floor(entry.expiresAt / 1000) }
        )
        return { keys, cursor: names.length > limit ? page[page.length - 1]![0] : undefined }
      }),
    clear: (functionId) => Effect.sync(() => void namespaces.delete(functionId)),
    purgeExpired: (limit) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        let removed = 0
        for (const entries of namespaces.values()) {
          for (const [key, entry] of entries) {
            if (removed >= limit) return removed
            if (!live(entry, now)) {
              entries.delete(key)
              removed++
            }
          }
        }
        return removed
      })
  })
})

export const layerMemoryFunctionKv: Layer.Layer<FunctionKv> = Layer.effect(FunctionKv, makeMemoryFunctionKv)

/** The memory runtime over a memory `FunctionKv`, both provided. */
export const layerMemoryFunctions = (
  options: MemoryFunctionRuntimeOptions = {}
): Layer.Layer<FunctionRuntime | FunctionKv> =>
  layerMemoryFunctionRuntime(options).pipe(Layer.provideMerge(layerMemoryFunctionKv))
