/**
 * The Promise facade of the Parley client, for code that does not use Effect.
 * Its shape is derived from the `ParleyApi` contract, exactly like the Effect
 * client's: `client.<group>.<endpoint>(request)` answers a `Promise` of the
 * same decoded value, so a group the contract gains appears here unchanged.
 *
 * Lists answer what the Effect client answers, `{ body, headers }` (the
 * contract's `WithHeaders` value): `(await client.workflows.list({ query: {} })).body.data`.
 *
 * Every rejection is a `ParleyError`.
 */
import type { ErrorDetail } from "@parley/core"
import { ParleyApi } from "@parley/core"
import { Cause, Effect, Exit, ManagedRuntime, Option, Schema } from "effect"
import { HttpClientError } from "effect/http"
import type { HttpApiClient, HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { HttpApi } from "effect/http-api"
import { ParleyClient, type ParleyClientOptions } from "./Client.ts"
import { decodeNetworkErrorBody, type NetworkErrorObject } from "./NetworkError.ts"

type Groups<Api> = Api extends HttpApi.HttpApi<infer _Id, infer G> ? G : never

type RequestOf<Endpoint extends HttpApiEndpoint.ConstraintRequest> = HttpApiEndpoint.ClientRequest<
  Endpoint["~Params"],
  Endpoint["~Query"],
  Endpoint["~Payload"],
  Endpoint["~Headers"],
  "decoded-only"
>

/**
 * One endpoint as a Promise-returning method: the Effect client's request, its decoded success. A request every part
 * of which is optional (a list's query) may be left out: `client.workflows.list()`.
 */
export type PromiseMethod<Endpoint extends HttpApiEndpoint.ConstraintRequest> = MayBeLeftOut<RequestOf<Endpoint>> extends true
  ? (request?: RequestOf<Endpoint>) => Promise<HttpApiClient.SuccessType<Endpoint["~Success"]>>
  : (request: RequestOf<Endpoint>) => Promise<HttpApiClient.SuccessType<Endpoint["~Success"]>>

/**
 * Whether each part of a request (`query`, `params`, `headers`) takes `{}`: then the request itself may be left out.
 * A request with a body never may (its body is the call's point).
 */
type MayBeLeftOut<Request> = [Request] extends [void] ? true
  : "payload" extends keyof Request ? false
  : false extends {
    readonly [K in Exclude<keyof Request, "responseMode" | "sseOptions">]-?: {} extends NonNullable<Request[K]> ? true : false
  }[Exclude<keyof Request, "responseMode" | "sseOptions">] ? false
  : true

type PromiseGroup<Group extends HttpApiGroup.Constraint> = Group["endpoints"] extends
  infer Endpoints extends Readonly<Record<string, HttpApiEndpoint.ConstraintRequest>> ?
  { readonly [Identifier in keyof Endpoints]: PromiseMethod<Endpoints[Identifier]> }
  : {}

type TopLevelMethods<G extends HttpApiGroup.Constraint> = {
  readonly [
    Endpoint in Extract<
      HttpApiGroup.Endpoints<Extract<G, { readonly topLevel: true }>>,
      HttpApiEndpoint.ConstraintRequest
    > as Endpoint["identifier"]
  ]: PromiseMethod<Endpoint>
}

/** The Promise client of an API: the same groups and methods as `HttpApiClient.ForApi`. */
export type PromiseClientFor<Api extends HttpApi.Constraint> =
  & {
    readonly [G in Extract<Groups<Api>, { readonly topLevel: false }> as HttpApiGroup.Identifier<G>]: PromiseGroup<G>
  }
  & TopLevelMethods<Groups<Api>>

export type ParleyPromiseClient = PromiseClientFor<typeof ParleyApi> & {
  /** Releases the client's runtime; calls made afterwards reject. */
  readonly close: () => Promise<void>
}

/**
 * Why a call failed. `status` is the HTTP status (0 when no response was
 * received: network failure, timeout, request that could not be encoded,
 * closed client); `error`, `code` and `details` are the server's error body
 * (on the proxy, the network's: `message`, `code` as text, `error_data.details`
 * with an empty path; the whole object in `network`); `cause` is the original
 * value (the contract's typed error, e.g. `NotFound`, or the transport error).
 */
export class ParleyError extends Error {
  override readonly name = "ParleyError"
  readonly status: number
  readonly error: string
  readonly code: string | undefined
  readonly details: ReadonlyArray<ErrorDetail> | undefined
  /** The network's error object, when the proxy answered one. */
  readonly network: NetworkErrorObject | undefined
  override readonly cause: unknown

  constructor(options: {
    readonly status: number
    readonly error: string
    readonly code?: string | undefined
    readonly details?: ReadonlyArray<ErrorDetail> | undefined
    readonly network?: NetworkErrorObject | undefined
    readonly cause?: unknown
  }) {
    super(options.status > 0 ? `${options.status}: ${options.error}` : options.error)
    this.status = options.status
    this.error = options.error
    this.code = options.code
    this.details = options.details
    this.network = options.network
    this.cause = options.cause
  }
}

export const isParleyError = (u: unknown): u is ParleyError => u instanceof ParleyError

/**
 * HTTP status of every error schema the contract declares, read once from the
 * contract itself (the schemas are annotated copies of the error classes, so
 * they are matched with `Schema.is`, not by identity).
 */
const contractErrors: ReadonlyArray<{ readonly is: (u: unknown) => boolean; readonly status: number }> = (() => {
  const found = new Map<Schema.Top, { readonly is: (u: unknown) => boolean; readonly status: number }>()
  HttpApi.reflect(ParleyApi, {
    onGroup: () => {},
    onEndpoint: ({ errors }) => {
      for (const [status, schemas] of errors) {
        for (const schema of schemas) {
          if (!found.has(schema)) found.set(schema, { is: Schema.is(schema), status })
        }
      }
    }
  })
  return Array.from(found.values())
})()

const contractStatusOf = (u: unknown): number | undefined => contractErrors.find((entry) => entry.is(u))?.status

const ErrorBody = Schema.Struct({
  error: Schema.String,
  code: Schema.optionalKey(Schema.String),
  details: Schema.optionalKey(Schema.Array(Schema.Struct({ path: Schema.String, message: Schema.String })))
})
const decodeErrorBody = Schema.decodeUnknownOption(ErrorBody)

interface ErrorFields {
  readonly error: string
  readonly code?: string | undefined
  readonly details?: ReadonlyArray<ErrorDetail> | undefined
  readonly network?: NetworkErrorObject | undefined
}

/** An answer's error body as the error's fields: the service's `{ error, code, details }` or the network's object. */
const errorFields = (json: unknown): Option.Option<ErrorFields> => {
  const flat = decodeErrorBody(json)
  if (Option.isSome(flat)) return Option.some<ErrorFields>(flat.value)
  return Option.map(decodeNetworkErrorBody(json), ({ error: network }) => ({
    error: network.message,
    code: String(network.code),
    details: network.error_data?.details === undefined ? undefined : [{ path: "", message: network.error_data.details }],
    network
  }))
}

/** The innermost reason of a transport failure: Node's code and message (`ECONNREFUSED 127.0.0.1:9`), or a timeout. */
const transportCause = (error: HttpClientError.HttpClientError): string => {
  const reason = error.reason
  if (reason._tag === "TransportError" && reason.description !== undefined) return reason.description
  let cause: unknown = "cause" in reason ? reason.cause : undefined
  let said: string | undefined
  // fetch wraps the socket's error: TypeError("fetch failed") with the `ECONNREFUSED` one as its cause.
  for (let depth = 0; depth < 5 && cause !== undefined && cause !== null; depth++) {
    const found = decodeNodeError(cause)
    if (Option.isSome(found)) {
      said = found.value.code !== undefined && !found.value.message.includes(found.value.code)
        ? `${found.value.code}: ${found.value.message}`
        : found.value.message
      if (found.value.code !== undefined) break
    }
    cause = Option.getOrUndefined(decodeCauseOf(cause))
  }
  return said ?? reason._tag
}

const decodeNodeError = Schema.decodeUnknownOption(Schema.Struct({ message: Schema.String, code: Schema.optionalKey(Schema.String) }))
const decodeCauseOf = (u: unknown) =>
  Option.map(Schema.decodeUnknownOption(Schema.Struct({ cause: Schema.Unknown }))(u), (e) => e.cause)

/** A failure as a `ParleyError`; reads the body of an undeclared error status for the server's message. */
const toParleyError = (failure: unknown): Effect.Effect<ParleyError> => {
  const status = contractStatusOf(failure)
  if (status !== undefined) {
    const body = decodeErrorBody(failure)
    if (Option.isSome(body)) return Effect.succeed(new ParleyError({ status, ...body.value, cause: failure }))
  }
  if (HttpClientError.isHttpClientError(failure)) {
    const response = failure.response
    if (response === undefined) {
      // Which request, and why it got no answer (connection refused, timeout, ...).
      const request = failure.request
      const error = `${request.method} ${request.url} failed: ${transportCause(failure)}`
      return Effect.succeed(new ParleyError({ status: 0, error, cause: failure }))
    }
    return response.json.pipe(
      Effect.option,
      Effect.map((json) => {
        const body = Option.flatMap(json, errorFields)
        return Option.isSome(body)
          ? new ParleyError({ status: response.status, ...body.value, cause: failure })
          : new ParleyError({ status: response.status, error: failure.message, cause: failure })
      })
    )
  }
  const error = failure instanceof Error ? failure.message : String(failure)
  return Effect.succeed(new ParleyError({ status: 0, error, cause: failure }))
}

/**
 * A Promise client for the Parley host at `baseUrl`, authenticated with
 * `apiKey`. Call `close()` when done to release its runtime.
 */
export const createParleyClient = (options: ParleyClientOptions): ParleyPromiseClient => {
  const runtime = ManagedRuntime.make(ParleyClient.layer(options))

  const call = async (
    group: string | undefined,
    endpoint: string,
    request: unknown,
    defaults: Readonly<Record<string, unknown>>
  ): Promise<unknown> => {
    const exit = await runtime.runPromiseExit(
      ParleyClient.use((client) => {
        const methods = (group === undefined ? client : client[group as keyof typeof client]) as unknown as Record<
          string,
          (request: unknown) => Effect.Effect<unknown, unknown>
        >
        // A part left out is an empty one (`client.workflows.list()` is `list({ query: {} })`).
        return methods[endpoint]!(request === undefined || request === null ? defaults : { ...defaults, ...request })
      }).pipe(Effect.catch((failure) => Effect.flatMap(toParleyError(failure), Effect.fail)))
    )
    if (Exit.isSuccess(exit)) return exit.value
    const failure = Cause.findErrorOption(exit.cause)
    if (Option.isSome(failure)) throw failure.value
    throw new ParleyError({
      status: 0,
      error: Cause.hasInterruptsOnly(exit.cause) ? "The client was closed" : "Unexpected client failure",
      cause: Cause.squash(exit.cause)
    })
  }

  const client: Record<string, unknown> = {}
  HttpApi.reflect(ParleyApi, {
    onGroup: ({ group }) => {
      if (!group.topLevel) client[group.identifier] = {}
    },
    onEndpoint: ({ endpoint, group }) => {
      const defaults = {
        ...(endpoint.params !== undefined ? { params: {} } : {}),
        ...(endpoint.query !== undefined ? { query: {} } : {}),
        ...(endpoint.headers !== undefined ? { headers: {} } : {})
      }
      const method = (request: unknown) =>
        call(group.topLevel ? undefined : group.identifier, endpoint.identifier, request, defaults)
      if (group.topLevel) client[endpoint.identifier] = method
      else (client[group.identifier] as Record<string, unknown>)[endpoint.identifier] = method
    }
  })
  client.close = () => runtime.dispose()
  return client as ParleyPromiseClient
}
