/**
 * The MCP tool server's building blocks (decisions 4.12): a tool is a name and its actions; an action is a name, the
 * JSON Schema of its `params` and what it runs. Most actions are one REST endpoint of the contract (`endpoint`):
 * the params are the endpoint's path parameters plus its query (GET, DELETE) or its body (POST, PATCH, PUT), and the
 * call goes through `LocalApi`, so the endpoint's own schemas decode them and its own errors answer.
 */
import { Context, Data, Effect, Predicate, type Redacted, Schema } from "effect"
import { type HttpApiEndpoint, OpenApi } from "effect/http-api"
import { LocalApi, type LocalApiAnswer } from "./LocalApi.ts"
import type { Principal } from "../projects/Projects.ts"
import type { EventPlans } from "../events/EventPlans.ts"

/** The authenticated caller of the current MCP request (the host resolves it from the key before the session). */
export class McpCaller extends Context.Service<McpCaller, {
  readonly principal: Principal
  readonly key: Redacted.Redacted<string>
}>()("@parley/core/mcp/McpCaller") {}

/** An action's failure: the text of the tool error, `{ "error" }` as the REST endpoint would answer. */
export class ToolFailure extends Data.TaggedError("ToolFailure")<{ readonly error: string }> {}

/** A JSON Schema whose root is an object (what `help` shows for an action's params). */
export interface ParamsSchema {
  readonly type: "object"
  readonly properties: Record<string, unknown>
  readonly required?: ReadonlyArray<string>
  readonly $defs?: Record<string, unknown>
}

export type ActionServices = McpCaller | LocalApi | EventPlans

export interface Action {
  readonly name: string
  readonly description: string
  readonly params: ParamsSchema
  readonly run: (params: Record<string, unknown>) => Effect.Effect<unknown, ToolFailure, ActionServices>
}

export interface Tool {
  readonly name: string
  readonly description: string
  readonly actions: ReadonlyArray<Action>
}

// ---------------------------------------------------------------------------------------------------------------
// Endpoint actions
// ---------------------------------------------------------------------------------------------------------------

/** What an action reads of an endpoint of the contract (e.g. `CustomersApi.endpoints.list`, its group's prefix in). */
export interface ContractEndpoint {
  readonly method: string
  readonly path: string
  readonly params: Schema.Top | undefined
  readonly query: Schema.Top | undefined
  readonly payload: HttpApiEndpoint.PayloadMap
  readonly annotations: Context.Context<never>
}

/** A Struct's JSON Schema as an object root (a schema of no object, e.g. the proxy's raw body, has no properties). */
const objectSchema = (schema: Schema.Top): ParamsSchema => {
  const document = Schema.toJsonSchemaDocument(schema)
  const root = document.schema as { readonly properties?: Record<string, unknown>; readonly required?: ReadonlyArray<string> }
  return {
    type: "object",
    properties: root.properties ?? {},
    ...(root.required !== undefined ? { required: root.required } : {}),
    ...(Object.keys(document.definitions).length > 0 ? { $defs: document.definitions } : {})
  }
}

/** The endpoint's path parameters, query and JSON body as one object schema (the action's `params`). */
const paramsOf = (endpoint: ContractEndpoint, fixed: ReadonlyArray<string>): ParamsSchema => {
  const json = [...endpoint.payload.entries()].find(([contentType]) => contentType === "application/json")?.[1]
  const parts = [endpoint.params, endpoint.query, json?.schemas[0]].filter(Predicate.isNotUndefined).map(objectSchema)
  const properties: Record<string, unknown> = {}
  const required: Array<string> = []
  const defs: Record<string, unknown> = {}
  for (const part of parts) {
    for (const [name, property] of Object.entries(part.properties)) if (!fixed.includes(name)) properties[name] = property
    for (const name of part.required ?? []) if (!fixed.includes(name)) required.push(name)
    Object.assign(defs, part.$defs)
  }
  return {
    type: "object",
    properties,
    ...(required.length > 0 ? { required } : {}),
    ...(Object.keys(defs).length > 0 ? { $defs: defs } : {})
  }
}

/** A query value as the REST caller would write it: scalars as text, arrays repeated. */
const queryValues = (value: unknown): ReadonlyArray<string> =>
  Array.isArray(value)
    ? value.flatMap(queryValues)
    : Predicate.isString(value) ? [value]
    : Predicate.isNumber(value) || Predicate.isBoolean(value) ? [String(value)]
    : value === undefined || value === null ? []
    : [JSON.stringify(value)]

/** The `{ "error" }` text of a refused call: the platform's `error`, or the network-shaped proxy's `error.message`. */
export const errorOf = (status: number, body: unknown): string => {
  const flat = decodeFlatError(body)
  if (flat._tag === "Some") return flat.value.error
  const network = decodeNetworkError(body)
  if (network._tag === "Some") {
    // The network's message is often generic (`(#100) Invalid parameter`); its details name the field.
    const { message, error_data } = network.value.error
    const details = error_data?.details
    return details === undefined || details === message || message.includes(details) ? message : `${message}: ${details}`
  }
  return `Request failed with status ${status}`
}

const decodeFlatError = Schema.decodeUnknownOption(Schema.Struct({ error: Schema.String }))
const decodeNetworkError = Schema.decodeUnknownOption(Schema.Struct({
  error: Schema.Struct({
    message: Schema.String,
    error_data: Schema.optionalKey(Schema.Struct({ details: Schema.optionalKey(Schema.String) }))
  })
}))

/**
 * Calls `target` (an endpoint of the contract, its group's prefix included) with these params (path, then query or
 * body) and answers its status and body, a refusal included; a missing path parameter is the caller's mistake, named.
 */
export const exchange = (
  target: ContractEndpoint,
  params: Record<string, unknown>,
  fixed: Readonly<Record<string, string>> = {}
): Effect.Effect<LocalApiAnswer, ToolFailure, ActionServices> =>
  Effect.gen(function*() {
    const method = target.method
    const rest: Record<string, unknown> = { ...params }
    let missing: string | undefined
    const path = target.path.replace(/:([A-Za-z_]+)/g, (_, name: string) => {
      const value = fixed[name] ?? rest[name]
      delete rest[name]
      if (!Predicate.isString(value) || value.length === 0) missing ??= name
      return encodeURIComponent(Predicate.isString(value) ? value : "")
    })
    if (missing !== undefined) return yield* new ToolFailure({ error: `params.${missing} is required` })
    const withBody = method === "POST" || method === "PATCH" || method === "PUT"
    const query = new URLSearchParams()
    if (!withBody) for (const [name, value] of Object.entries(rest)) for (const v of queryValues(value)) query.append(name, v)
    const search = query.toString()
    const caller = yield* McpCaller
    return yield* LocalApi.use((api) =>
      api.call({
        method,
        path: search.length > 0 ? `${path}?${search}` : path,
        key: caller.key,
        ...(withBody ? { body: rest } : {})
      })
    )
  })

/** `exchange`, answering the whole body; a refusal is a `ToolFailure` with the endpoint's message. */
export const request = (
  target: ContractEndpoint,
  params: Record<string, unknown>,
  fixed: Readonly<Record<string, string>> = {}
): Effect.Effect<unknown, ToolFailure, ActionServices> =>
  Effect.flatMap(exchange(target, params, fixed), (answer) =>
    answer.status >= 400
      ? Effect.fail(new ToolFailure({ error: errorOf(answer.status, answer.body) }))
      : Effect.succeed(answer.body ?? null))

/** `request`, answering the body's `data`: lists and records; the proxy's network-shaped bodies and 202s as they are. */
export const callEndpoint = (
  target: ContractEndpoint,
  params: Record<string, unknown>,
  fixed: Readonly<Record<string, string>> = {}
): Effect.Effect<unknown, ToolFailure, ActionServices> =>
  Effect.map(request(target, params, fixed), (body) => Predicate.hasProperty(body, "data") ? body.data : body)

/** The endpoint's summary and description, as the reference shows them. */
const describe = (target: ContractEndpoint): string => {
  const summary = Context.getOrUndefined(target.annotations, OpenApi.Summary) ?? `${target.method} ${target.path}`
  const description = Context.getOrUndefined(target.annotations, OpenApi.Description)
  return description === undefined ? summary : `${summary}. ${description}`
}

/**
 * An action that is `target`, an endpoint of the contract (e.g. `CustomersApi.endpoints.list`); `fixed` path
 * parameters (the proxy's version) are not asked of the caller.
 */
export const endpoint = (
  name: string,
  target: ContractEndpoint,
  options: { readonly description?: string; readonly fixed?: Readonly<Record<string, string>> } = {}
): Action => {
  const fixed = options.fixed ?? {}
  return {
    name,
    description: options.description ?? describe(target),
    params: paramsOf(target, Object.keys(fixed)),
    run: (params) => callEndpoint(target, params, fixed)
  }
}

/** An action of its own (not one endpoint), with its params as a Schema: decoded here, shown by `help`. */
export const action = <A extends Record<string, unknown>, R extends ActionServices>(
  name: string,
  description: string,
  schema: Schema.Codec<A, unknown>,
  run: (params: A) => Effect.Effect<unknown, ToolFailure, R>
): Action => {
  const decode = Schema.decodeUnknownEffect(schema)
  return {
    name,
    description,
    params: objectSchema(schema),
    run: (params) =>
      decode(params).pipe(
        Effect.mapError((error) => new ToolFailure({ error: error.message })),
        Effect.flatMap(run)
      )
  }
}
