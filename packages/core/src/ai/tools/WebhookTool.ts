/**
 * Webhook tools of the agent node (decisions 2.3.9 `flow_agent_webhooks`, 10.6): the model's arguments, checked
 * against `body_schema`, override keys of the interpolated `body` template; `GET` and `DELETE` send them as the
 * query string instead of a body. The request goes through the `WebhookHttp` port like the workflow's webhook
 * node, so the private-address rule and the 30 s timeout are the port's. Every failure is a tool result the
 * model reads; only the caller's interpolation can fail the effect.
 */
import { Effect, Option, Predicate } from "effect"
import { search } from "jmespath"
import { WebhookHttp, type WebhookHttpMethod } from "../../ports/WebhookHttp.ts"
import { parseJson } from "../../shared/Json.ts"
import { WebhookSettings } from "../../shared/OutboundSettings.ts"
import { validateArguments } from "./JsonSchema.ts"
import { cutToolResult, type Interpolate, TOOL_TIMEOUT_MS, type ToolOutcome } from "../../shared/ToolResult.ts"

/** One entry of `flow_agent_webhooks`, as stored in the node's configuration. */
export interface WebhookToolConfig {
  readonly name: string
  readonly description?: string | null | undefined
  readonly url: string
  readonly http_method?: string | null | undefined
  readonly headers?: Readonly<Record<string, unknown>> | null | undefined
  readonly body?: unknown
  readonly body_schema?: unknown
  readonly jmespath_query?: string | null | undefined
}

const METHODS: ReadonlyArray<WebhookHttpMethod> = ["GET", "POST", "PUT", "PATCH", "DELETE"]

/** Bytes of an answer read at most: enough for `jmespath_query` to see a whole JSON document of a usual API. */
const RESPONSE_MAX_BYTES = 256 * 1024

/** Characters of a non-2xx answer the model sees. */
const ERROR_BODY_CHARS = 512

const failed = (error: string, extra: { readonly body?: string; readonly status?: number } = {}): ToolOutcome => ({
  ok: false,
  result: extra.body === undefined ? { error } : { error, body: extra.body },
  ...(extra.status === undefined ? {} : { status: extra.status })
})

const asText = (value: unknown): string => Predicate.isString(value) ? value : JSON.stringify(value)

/** The query string of a `GET`/`DELETE`: the URL's own parameters, those of `params` replacing same-named ones. */
const withQuery = (url: URL, params: Readonly<Record<string, unknown>>): string => {
  for (const [key, value] of Object.entries(params)) {
    url.searchParams.delete(key)
    for (const item of Array.isArray(value) ? value : [value]) {
      if (item !== null && item !== undefined) url.searchParams.append(key, asText(item))
    }
  }
  return url.toString()
}

/** Calls one webhook tool with the model's arguments (`unknown`, parsed JSON). */
export const callWebhookTool = <E, R>(
  config: WebhookToolConfig,
  args: unknown,
  interpolate: Interpolate<E, R>
): Effect.Effect<ToolOutcome, E, R | WebhookHttp | WebhookSettings> =>
  Effect.gen(function*() {
    const checked = yield* Effect.result(validateArguments(config.body_schema, args))
    if (checked._tag === "Failure") return failed(checked.failure.message)
    const input = args ?? {}
    if (!Predicate.isObject(input)) return failed("Invalid arguments: / must be an object")

    const method = (config.http_method ?? "POST").toUpperCase() as WebhookHttpMethod
    if (!METHODS.includes(method)) return failed(`The tool's http_method ${method} is not one of ${METHODS.join(", ")}`)
    const url = yield* interpolate(config.url)
    const parsed = Predicate.isString(url) && URL.canParse(url.trim()) ? new URL(url.trim()) : undefined
    if (parsed === undefined || (parsed.protocol !== "http:" && parsed.protocol !== "https:")) {
      return failed("The tool's url is not an http or https URL")
    }

    const headers: Record<string, string> = {}
    for (const [name, template] of Object.entries(config.headers ?? {})) {
      const value = yield* interpolate(template)
      if (value !== null && value !== undefined) headers[name] = asText(value)
    }
    const template = config.body === undefined || config.body === null ? {} : yield* interpolate(config.body)
    const payload = { ...(Predicate.isObject(template) ? template : {}), ...input }
    const inQuery = method === "GET" || method === "DELETE"
    if (!inQuery && !Object.keys(headers).some((h) => h.toLowerCase() === "content-type")) {
      headers["Content-Type"] = "application/json"
    }

    const http = yield* WebhookHttp
    const settings = yield* WebhookSettings
    const answer = yield* Effect.result(http.request({
      method,
      url: inQuery ? withQuery(parsed, payload) : parsed.toString(),
      headers,
      body: inQuery ? undefined : new TextEncoder().encode(JSON.stringify(payload)),
      timeoutMs: TOOL_TIMEOUT_MS,
      allowPrivate: settings.allowPrivateUrls,
      maxBodyBytes: RESPONSE_MAX_BYTES
    }))
    if (answer._tag === "Failure") return failed(`Request failed: ${answer.failure.message}`)
    const { body, status } = answer.success
    if (status < 200 || status > 299) return failed(`HTTP ${status}`, { status, body: body.slice(0, ERROR_BODY_CHARS) })

    const json = parseJson(body)
    const query = config.jmespath_query?.trim()
    if (Option.isNone(json) || query === undefined || query === "") {
      return { ok: true, status, result: cutToolResult(Option.getOrElse(json, () => body)) }
    }
    const selected = yield* Effect.result(Effect.try({
      try: () => search(json.value, query) ?? null,
      catch: (error) => (error as Error).message
    }))
    return selected._tag === "Success"
      ? { ok: true, status, result: cutToolResult(selected.success) }
      : failed(`The tool's jmespath_query cannot be applied: ${selected.failure}`, { status })
  })
