/**
 * The place where function code runs. A deploy loads (or replaces) a
 * function's code and proves it loads; an invoke hands it one HTTP request and
 * gets its answer back with what it wrote to the console. The production
 * adapter runs the code in `workerd` processes under a supervisor
 * (`@parley/http-node`); `@parley/core/testing` has an in-process one for unit
 * tests. Both run the conformance suite in `testing/conformance`.
 *
 * Secrets are handed over with every invoke rather than stored at deploy, so a
 * changed secret reaches the code on its next invocation without a redeploy,
 * and every host of a cluster sees the same values. `env.KV` is backed by the
 * `FunctionKv` port, keyed by the function id.
 */
import { Context, type Effect, type Option, Schema } from "effect"

/** Limits of one deployed version (the function's `runtime_config`). */
export interface FunctionLimits {
  /** Deadline of one invocation, from the request leaving the host to the whole answer arriving. */
  readonly timeoutMs: number
  /** Heap allowed to the function. */
  readonly memoryMb: number
}

export interface FunctionRequest {
  readonly method: string
  /**
   * What the function sees as `request.url`: an absolute URL, or a path with its query
   * (`/invoke?x=1`), which is resolved against `http://function.invalid`.
   */
  readonly url: string
  /** Header names in any case; the function sees them lower-cased, as Fetch does. */
  readonly headers: Readonly<Record<string, string>>
  /** Ignored for GET and HEAD, which a Fetch `Request` cannot carry a body on. */
  readonly body: Uint8Array
}

/** A value of `env`: a text secret, or the parsed object of a JSON secret. */
export type FunctionEnvValue = string | { readonly [key: string]: unknown }

export interface InvokeOptions {
  /**
   * The function's `env` for this invocation (its secrets, inherited project
   * secrets). `KV` is always the function's key-value store and wins over a
   * secret of that name.
   */
  readonly env: Readonly<Record<string, FunctionEnvValue>>
}

export const ConsoleLevel = Schema.Literals(["debug", "info", "log", "warn", "error"])
export type ConsoleLevel = typeof ConsoleLevel.Type

/** One `console.*` call of an invocation: at most 100 per invocation, message and stack at most 4 KB each. */
export const ConsoleEntry = Schema.Struct({
  level: ConsoleLevel,
  message: Schema.String,
  /** Epoch milliseconds, as the function's clock read it. */
  loggedAt: Schema.Number,
  /** Stack of the first `Error` among the arguments. */
  stack: Schema.optionalKey(Schema.String)
})
export type ConsoleEntry = typeof ConsoleEntry.Type

export const ConsoleLimits = { maxEntries: 100, maxEntryBytes: 4096 } as const

export interface FunctionResponse {
  readonly status: number
  /** Lower-cased names; a repeated header joined with `, `, as Fetch's `Headers.get` gives it. */
  readonly headers: Readonly<Record<string, string>>
  readonly body: Uint8Array
  readonly consoleLogs: ReadonlyArray<ConsoleEntry>
  /** Wall time of the invocation as the host measured it. */
  readonly durationMs: number
}

/** What is serving for a function on this runtime. */
export interface LoadedFunction {
  readonly functionId: string
  readonly version: number
  readonly limits: FunctionLimits
}

/**
 * A deploy that did not replace the serving version (which keeps serving).
 * `invalid_code`: neither accepted code shape, a syntax error, a top-level
 * throw, no `fetch` handler; `timeout`: loading did not finish within the
 * function's timeout; `unavailable`: the runtime could not run the code.
 */
export class FunctionDeployError extends Schema.TaggedError<FunctionDeployError>()("FunctionDeployError", {
  functionId: Schema.String,
  reason: Schema.Literals(["invalid_code", "timeout", "unavailable"]),
  message: Schema.String
}) {}

/**
 * An invocation without an answer from the function.
 *
 * - `thrown`: the code threw (or rejected, or returned something that is not a
 *   `Response`); `message` is `Name: message`, `stack` the function's stack.
 * - `timeout`: no complete answer within the function's timeout.
 * - `crashed`: the code's process ended under it (memory limit, a runaway
 *   neighbour being stopped, a crash of the runtime).
 * - `not_loaded`: nothing is deployed under that id on this runtime.
 *
 * Console output written before the failure is kept.
 */
export class FunctionInvokeError extends Schema.TaggedError<FunctionInvokeError>()("FunctionInvokeError", {
  functionId: Schema.String,
  reason: Schema.Literals(["timeout", "crashed", "not_loaded", "thrown"]),
  message: Schema.String,
  stack: Schema.optionalKey(Schema.String),
  consoleLogs: Schema.Array(ConsoleEntry),
  durationMs: Schema.Number
}) {}

export class FunctionRuntime extends Context.Service<FunctionRuntime, {
  /**
   * Loads `code` (either shape of `detectCodeShape`) as `version` of the
   * function and proves it loads: the module is evaluated and its `fetch`
   * handler looked up, without calling it. Succeeds once the new version
   * serves; on failure the previous version, if any, keeps serving.
   * Deploying again replaces the code without touching other functions.
   */
  readonly deploy: (
    functionId: string,
    version: number,
    code: string,
    limits: FunctionLimits
  ) => Effect.Effect<LoadedFunction, FunctionDeployError>
  /** Runs one request through the serving version, within its timeout. */
  readonly invoke: (
    functionId: string,
    request: FunctionRequest,
    options: InvokeOptions
  ) => Effect.Effect<FunctionResponse, FunctionInvokeError>
  /** Stops serving the function (later invokes fail with `not_loaded`); unknown ids are ignored. */
  readonly unload: (functionId: string) => Effect.Effect<void>
  /** The version serving for the function on this runtime, if any. */
  readonly loaded: (functionId: string) => Effect.Effect<Option.Option<LoadedFunction>>
}>()("@parley/core/functions/FunctionRuntime") {}
