/**
 * Running deployed functions (decisions 10.5.2, 10.5.3): the HTTP invoke of
 * the Platform API (who may call, rate limit of public functions, body
 * checks, response modes, the 500 of a failure) and the calls of the
 * execution engine (`FunctionCalls`), both through `run`, which passes the
 * function's decrypted secrets as its `env`, makes sure this host's runtime
 * serves the function's current version, and writes the invocation record.
 *
 * Runtime state is per host: a host that has not loaded a function's current
 * version (another host ran its deploy, or it restarted) loads the version's
 * stored code snapshot first, and once more if the runtime lost it.
 */
import { Clock, Context, Data, Effect, Layer, Option, Schema, Semaphore } from "effect"
import { Projects } from "../projects/Projects.ts"
import { BadGateway, BadRequest, type NotFound, notFound, type Unprocessable, unprocessable } from "../shared/ApiError.ts"
import { Ids } from "../shared/Ids.ts"
import { PublicUrl, publicUrlOf } from "../shared/PublicUrl.ts"
import {
  FunctionBounds,
  type FunctionRecord,
  type FunctionInvocationRecord,
  type FunctionInvocationSource,
  functionRuntimeLimitsOf,
  type FunctionSecretRecord
} from "./Function.ts"
import {
  type FunctionEnvValue,
  type FunctionInvokeError,
  type FunctionRequest,
  type FunctionResponse,
  FunctionRuntime
} from "./FunctionRuntime.ts"
import { FunctionsRepo } from "./FunctionsRepo.ts"
import { InvocationTargets } from "./InvocationTargets.ts"
import { FunctionInvocationLog } from "./InvocationLog.ts"
import {
  clipCharacters,
  isInvalidJsonBody,
  loggedBody,
  sanitizeInboundHeaders,
  type ShapedInvokeAnswer,
  shapeAnswer
} from "./Rules.ts"
import { FunctionSecretsCipher } from "../shared/SecretCipher.ts"
import { ProjectSecrets } from "../projects/ProjectSecrets.ts"
import { RateLimits } from "../ports/RateLimits.ts"
import { TracePropagation, traceHeaders } from "../shared/Telemetry.ts"
import { observeInvocation } from "./FunctionTelemetry.ts"
import { observeAdmission } from "../projects/RateLimitTelemetry.ts"

export const FUNCTION_NOT_DEPLOYED_ERROR = "Function has no deployed version"
export const INVOKE_INVALID_JSON_ERROR = "Request body is not valid JSON"
export const INVOCATION_FAILED_ERROR = "Function invocation failed"

/** Decisions 7.2: the 500 of a thrown error, a timeout or a crash, naming the invocation record. */
export class FunctionInvocationFailed extends Schema.Error<FunctionInvocationFailed>("FunctionInvocationFailed")({
  error: Schema.String,
  detail: Schema.String,
  invocation_id: Schema.String
}, { httpApiStatus: 500 }) {
  readonly _tag = "FunctionInvocationFailed" as const
}

/** Decisions 8.1: a public function past its invokes of the minute. */
export class InvokeRateLimited extends Data.TaggedError("InvokeRateLimited")<{
  readonly limit: number
  /** Epoch seconds at which the window resets. */
  readonly reset: number
  readonly retryAfterSeconds: number
}> {}

/** The failure of one run, as the caller sees it. */
export interface FunctionRunFailure {
  readonly reason: FunctionInvokeError["reason"] | "load_failed"
  /** At most 512 characters (decisions 7.2). */
  readonly detail: string
}

export interface FunctionRunOutcome {
  readonly invocation: FunctionInvocationRecord
  readonly result:
    | { readonly _tag: "Answered"; readonly response: FunctionResponse }
    | { readonly _tag: "Failed"; readonly failure: FunctionRunFailure }
}

export interface FunctionHttpInvokeRequest {
  readonly functionId: string
  /** The presented key: undefined for none, null for two different ones. */
  readonly apiKey: string | null | undefined
  readonly method: string
  /** Path and query as received. */
  readonly url: string
  readonly headers: Readonly<Record<string, string | undefined>>
  readonly body: Uint8Array
}

export type FunctionHttpInvokeError = NotFound | BadRequest | Unprocessable | BadGateway | FunctionInvocationFailed | InvokeRateLimited

const secretStoreFailed = () => new BadGateway({ error: "The function's secrets could not be read" })

const consoleLogsOf = (logs: FunctionResponse["consoleLogs"]) =>
  logs.map((entry) => ({
    level: entry.level,
    message: entry.message,
    logged_at: new Date(entry.loggedAt).toISOString(),
    stack: entry.stack ?? null
  }))

export class FunctionInvoker extends Context.Service<FunctionInvoker, {
  /** `POST /platform/v1/functions/<id>/invoke` (decisions 5, 7.2, 8.1, 10.5.3). */
  readonly invokeHttp: (
    request: FunctionHttpInvokeRequest
  ) => Effect.Effect<ShapedInvokeAnswer & { readonly projectId: string }, FunctionHttpInvokeError>
  /**
   * Runs one request through a deployed function and records the invocation;
   * a failure of the code is a `Failed` result, not an error. 422 when it has
   * no deployed version, 502 when its secrets cannot be read.
   */
  readonly run: (
    target: { readonly function: FunctionRecord; readonly secrets: ReadonlyArray<FunctionSecretRecord> },
    request: FunctionRequest,
    source: FunctionInvocationSource
  ) => Effect.Effect<FunctionRunOutcome, Unprocessable | BadGateway>
  /** `run` for a function of the project, by id: 404 for an unknown id or another project's. */
  readonly call: (
    projectId: string,
    functionId: string,
    request: FunctionRequest,
    source: FunctionInvocationSource
  ) => Effect.Effect<FunctionRunOutcome, NotFound | Unprocessable | BadGateway>
}>()("@parley/core/functions/FunctionInvoker") {
  static readonly layer = Layer.effect(
    FunctionInvoker,
    Effect.gen(function*() {
      const repo = yield* FunctionsRepo
      const targets = yield* InvocationTargets
      const log = yield* FunctionInvocationLog
      const runtime = yield* FunctionRuntime
      const propagate = yield* TracePropagation
      const projects = yield* Projects
      const cipher = yield* FunctionSecretsCipher
      const projectSecrets = yield* ProjectSecrets
      const ids = yield* Ids
      const publicUrl = yield* PublicUrl
      const rateLimits = yield* RateLimits

      const loadLocks = new Map<string, Semaphore.Semaphore>()
      const lockFor = (id: string) => {
        let lock = loadLocks.get(id)
        if (lock === undefined) {
          lock = Semaphore.makeUnsafe(1)
          loadLocks.set(id, lock)
        }
        return lock
      }

      const serves = (fn: FunctionRecord) =>
        Effect.map(runtime.loaded(fn.id), (loaded) => Option.isSome(loaded) && loaded.value.version === fn.version)

      /** Loads the function's serving version from its stored snapshot unless this runtime already serves it. */
      const ensureLoaded = (fn: FunctionRecord, force: boolean): Effect.Effect<Option.Option<string>> =>
        Effect.flatMap(force ? Effect.succeed(false) : serves(fn), (ready) =>
          ready ? Effect.succeedNone : loadSnapshot(fn, force))

      // One load at a time per function: concurrent first invokes on a host wait for the same load.
      const loadSnapshot = (fn: FunctionRecord, force: boolean) =>
        lockFor(fn.id).withPermit(Effect.gen(function*() {
          if (!force && (yield* serves(fn))) return Option.none<string>()
          const deployment = fn.deployed_deployment_id === null
            ? Option.none()
            : yield* repo.findDeployment(fn.id, fn.deployed_deployment_id)
          if (Option.isNone(deployment) || deployment.value.code === null) {
            return Option.some("The deployed code of the function is no longer stored")
          }
          const d = deployment.value
          const loaded = yield* runtime.deploy(fn.id, fn.version, d.code!, functionRuntimeLimitsOf(d.runtime_config)).pipe(
            Effect.result
          )
          return loaded._tag === "Success"
            ? Option.none<string>()
            : Option.some(`The deployed code could not be loaded: ${loaded.failure.message}`)
        }))

      /** The project's secrets (`inherited`, decisions 10.5.4), then the function's own, which win over a project value. */
      const envOf = (fn: FunctionRecord, secrets: ReadonlyArray<FunctionSecretRecord>) =>
        Effect.gen(function*() {
          const inherited = yield* projectSecrets.resolve(fn.project_id).pipe(
            Effect.tapError((error) =>
              Effect.logError("Project secret could not be decrypted").pipe(
                Effect.annotateLogs({ function_id: fn.id, secret: error.name })
              )
            ),
            Effect.mapError(secretStoreFailed)
          )
          const env: Record<string, FunctionEnvValue> = Object.fromEntries(inherited)
          if (secrets.length === 0) return env
          const keys = yield* cipher.cipher
          for (const secret of secrets) {
            const plain = yield* keys.decrypt(fn.id, secret.name, secret.ciphertext).pipe(
              Effect.tapError((error) =>
                Effect.logError("Function secret could not be decrypted").pipe(
                  Effect.annotateLogs({ function_id: fn.id, secret: secret.name, reason: error.message })
                )
              ),
              Effect.mapError(secretStoreFailed)
            )
            env[secret.name] = secret.type === "json" ? JSON.parse(plain) as FunctionEnvValue : plain
          }
          return env
        })

      const detailOf = (error: FunctionInvokeError, timeoutMs: number): string =>
        error.reason === "timeout"
          ? `Function timed out after ${Math.round(timeoutMs / 1000)} s`
          : clipCharacters(error.message, FunctionBounds.failureDetailMax)

      const run = Effect.fn("FunctionInvoker.run")(function*(
        target: { readonly function: FunctionRecord; readonly secrets: ReadonlyArray<FunctionSecretRecord> },
        request: FunctionRequest,
        source: FunctionInvocationSource
      ) {
        const fn = target.function
        if (fn.version === 0 || fn.deployed_deployment_id === null) return yield* unprocessable(FUNCTION_NOT_DEPLOYED_ERROR)
        const env = yield* envOf(fn, target.secrets)
        const id = yield* ids.uuid
        const started = yield* Clock.currentTimeMillis
        // The operator's choice: the function sees this invocation's trace context (`traceparent`).
        const traced = yield* traceHeaders(propagate)
        const sent = Object.keys(traced).length === 0 ? request : { ...request, headers: { ...request.headers, ...traced } }

        const attempt = Effect.gen(function*() {
          const problem = yield* ensureLoaded(fn, false)
          if (Option.isSome(problem)) return { _tag: "LoadFailed" as const, detail: problem.value }
          const first = yield* runtime.invoke(fn.id, sent, { env }).pipe(Effect.result)
          if (first._tag === "Success" || first.failure.reason !== "not_loaded") return { _tag: "Ran" as const, result: first }
          // Unloaded under us (a respawn, an unload racing): load it again, once.
          const again = yield* ensureLoaded(fn, true)
          if (Option.isSome(again)) return { _tag: "LoadFailed" as const, detail: again.value }
          return { _tag: "Ran" as const, result: yield* runtime.invoke(fn.id, sent, { env }).pipe(Effect.result) }
        })
        const ran = yield* attempt
        const finished = yield* Clock.currentTimeMillis
        const timeoutMs = Option.match(yield* runtime.loaded(fn.id), {
          onNone: () => fn.runtime_config.timeout * 1000,
          onSome: (loaded) => loaded.limits.timeoutMs
        })

        const base = {
          id,
          project_id: fn.project_id,
          function_id: fn.id,
          request_body: loggedBody(request.body),
          source,
          created_at: new Date(started).toISOString()
        }
        let outcome: FunctionRunOutcome
        if (ran._tag === "LoadFailed") {
          const detail = clipCharacters(ran.detail, FunctionBounds.failureDetailMax)
          outcome = {
            invocation: {
              ...base,
              status_code: 500,
              duration_ms: finished - started,
              response_body: null,
              error_message: detail,
              console_logs: []
            },
            result: { _tag: "Failed", failure: { reason: "load_failed", detail } }
          }
        } else if (ran.result._tag === "Success") {
          const response = ran.result.success
          outcome = {
            invocation: {
              ...base,
              status_code: response.status,
              duration_ms: Math.round(response.durationMs),
              response_body: loggedBody(response.body),
              error_message: null,
              console_logs: consoleLogsOf(response.consoleLogs)
            },
            result: { _tag: "Answered", response }
          }
        } else {
          const error = ran.result.failure
          const detail = detailOf(error, timeoutMs)
          outcome = {
            invocation: {
              ...base,
              status_code: 500,
              duration_ms: Math.round(error.durationMs),
              response_body: null,
              error_message: detail,
              console_logs: consoleLogsOf(error.consoleLogs)
            },
            result: { _tag: "Failed", failure: { reason: error.reason, detail } }
          }
        }
        yield* log.record(outcome.invocation)
        yield* observeInvocation(fn, source, outcome)
        return outcome
      })

      const call = Effect.fn("FunctionInvoker.call")(function*(
        projectId: string,
        functionId: string,
        request: FunctionRequest,
        source: FunctionInvocationSource
      ) {
        const target = yield* targets.find(functionId)
        if (Option.isNone(target) || target.value.function.project_id !== projectId) return yield* notFound("Function", functionId)
        return yield* run(target.value, request, source)
      })

      // ---- public invoke rate limit: a fixed one-minute window per function, shared by the hosts on the store ----

      const admit = Effect.fnUntraced(function*(functionId: string) {
        const now = yield* Clock.currentTimeMillis
        const minute = Math.floor(now / 60_000)
        const limit = FunctionBounds.publicInvokesPerMinute
        const reset = (minute + 1) * 60
        const taken = yield* rateLimits.take(`function-invoke:${functionId}`, new Date(minute * 60_000).toISOString(), limit)
        yield* observeAdmission("function_invoke", taken.admitted)
        if (!taken.admitted) {
          return { admitted: false as const, limit, reset, retryAfterSeconds: Math.max(1, reset - Math.floor(now / 1000)) }
        }
        return { admitted: true as const, limit, reset, remaining: limit - taken.count }
      })

      const notFoundAnswer = (id: string) => notFound("Function", id)

      const invokeHttp = Effect.fn("FunctionInvoker.invokeHttp")(function*(input: FunctionHttpInvokeRequest) {
        const found = yield* targets.find(input.functionId)
        if (Option.isNone(found) || found.value.projectDisabled) return yield* notFoundAnswer(input.functionId)
        const target = found.value
        const fn = target.function
        const extraHeaders: Record<string, string> = {}
        let source: FunctionInvocationSource
        if (fn.public_endpoint) {
          // A key sent anyway is ignored (and stripped below).
          source = "public"
          const admitted = yield* admit(fn.id)
          if (!admitted.admitted) {
            return yield* new InvokeRateLimited({
              limit: admitted.limit,
              reset: admitted.reset,
              retryAfterSeconds: admitted.retryAfterSeconds
            })
          }
          extraHeaders["x-ratelimit-limit"] = String(admitted.limit)
          extraHeaders["x-ratelimit-remaining"] = String(admitted.remaining)
          extraHeaders["x-ratelimit-reset"] = String(admitted.reset)
        } else {
          // Without a valid key of the owning project, a private function does not exist (decisions 5).
          if (input.apiKey === undefined || input.apiKey === null) return yield* notFoundAnswer(input.functionId)
          const principal = yield* projects.authenticate(input.apiKey).pipe(Effect.mapError(() => notFoundAnswer(input.functionId)))
          if (principal.project.id !== fn.project_id) return yield* notFoundAnswer(input.functionId)
          source = "api"
        }
        const headers = sanitizeInboundHeaders(input.headers)
        if (isInvalidJsonBody(headers["content-type"], input.body)) {
          return yield* new BadRequest({ error: INVOKE_INVALID_JSON_ERROR })
        }
        const outcome = yield* run(target, {
          method: input.method,
          url: publicUrlOf(publicUrl, input.url).href,
          headers,
          body: input.body
        }, source)
        if (outcome.result._tag === "Failed") {
          return yield* new FunctionInvocationFailed({
            error: INVOCATION_FAILED_ERROR,
            detail: outcome.result.failure.detail,
            invocation_id: outcome.invocation.id
          })
        }
        const shaped = shapeAnswer(fn.invoke_response_mode, outcome.result.response)
        return {
          ...shaped,
          headers: { ...shaped.headers, ...extraHeaders, "x-invocation-id": outcome.invocation.id },
          projectId: fn.project_id
        }
      })

      return FunctionInvoker.of({ invokeHttp, run, call })
    })
  )
}
