/**
 * The `webhook` node (decisions 2.3.8) in two halves: the request is checked
 * and logged, the engine records it as pending, then `callWebhook` makes it
 * once.
 */
import { Effect, Option, Predicate } from "effect"
import { WebhookHttp, type WebhookHttpMethod } from "../../ports/WebhookHttp.ts"
import { parseJson } from "../../shared/Json.ts"
import { WebhookSettings } from "../../shared/OutboundSettings.ts"
import { CONTEXT_MAX_BYTES, renderText, secretsUsed } from "../Interpolation.ts"
import { follow, type StepOutcome, StepFailed } from "../Step.ts"
import { aiFieldsOf, generateAiFields, withAiValues } from "../ai/AiFields.ts"
import { configTexts, type StepInput, text, value, withVars } from "./NodeInput.ts"

/** The webhook node's timeout (decisions 2.3.8). */
export const WEBHOOK_TIMEOUT_MS = 30_000
/**
 * Bytes of a webhook answer read at most: the execution context's own limit (2.4.5), since a longer answer could
 * not be saved anyway. A longer answer fails the step when `save_response_to` asks for it, else only its head is logged.
 */
export const WEBHOOK_RESPONSE_MAX_BYTES = CONTEXT_MAX_BYTES
/** Characters of a failed answer's body kept in `error_details` (decisions 2.3.8). */
const WEBHOOK_ERROR_BODY_CHARS = 512

const METHODS: ReadonlyArray<WebhookHttpMethod> = ["GET", "POST", "PUT", "PATCH", "DELETE"]

/** The request a webhook node makes, interpolated (decisions 2.3.8), with the secret values it holds. */
const webhookRequest = Effect.fnUntraced(function*(input: StepInput) {
  const config = input.node.data.config
  const ctx = input.execution.execution_context
  const secrets = secretsUsed(config, input.secrets)
  const failMasked = (message: string, code: string) => Effect.fail(new StepFailed({ message, code, secrets }))
  const method = (configTexts(config).method?.toUpperCase() ?? "POST") as WebhookHttpMethod
  if (!METHODS.includes(method)) return yield* failMasked(`Webhook method ${String(config.method)} is not one of ${METHODS.join(", ")}`, "invalid_request")
  const url = (yield* text(String(config.url ?? ""), ctx, input.secrets)).trim()
  const parsed = URL.canParse(url) ? new URL(url) : undefined
  if (parsed === undefined || (parsed.protocol !== "http:" && parsed.protocol !== "https:")) {
    return yield* failMasked(`Webhook url is not an http or https URL: ${url}`, "invalid_url")
  }
  // Stored definitions have headers as an object; the older surface's JSON text is read the same way.
  const rawHeaders = Predicate.isString(config.headers) ? Option.getOrUndefined(parseJson(config.headers)) : config.headers
  if (rawHeaders !== undefined && rawHeaders !== null && !Predicate.isObject(rawHeaders)) {
    return yield* failMasked("Webhook headers must be an object of strings", "invalid_request")
  }
  const headers: Record<string, string> = {}
  for (const [name, raw] of Object.entries((rawHeaders ?? {}) as Record<string, unknown>)) {
    headers[name] = yield* text(Predicate.isString(raw) ? raw : renderText(raw), ctx, input.secrets)
  }
  const sendsBody = method !== "GET" && method !== "DELETE" && config.body_template !== undefined && config.body_template !== null
  const body = sendsBody ? yield* value(config.body_template, ctx, input.secrets) : undefined
  if (sendsBody && !Object.keys(headers).some((h) => h.toLowerCase() === "content-type")) headers["Content-Type"] = "application/json"
  return { method, url, headers, body, secrets }
})

/**
 * `webhook` (decisions 2.3.8), first half: the request is checked and logged, and the engine records that it is
 * about to be made (`Perform` with a `webhook` pending action) before `callWebhook` makes it.
 */
export const webhookNode = Effect.fnUntraced(function*(input: StepInput) {
  const values = yield* generateAiFields(input, aiFieldsOf(input.node))
  const request = yield* webhookRequest({ ...input, node: withAiValues(input.node, values) })
  const outcome: StepOutcome = {
    context: input.execution.execution_context,
    events: [{
      event_type: "action_executing",
      payload: { action: "webhook", request: { method: request.method, url: request.url, headers: request.headers, body: request.body ?? null } }
    }],
    next: {
      _tag: "Perform",
      pending: {
        kind: "webhook",
        key: `${input.execution.id}:${input.execution.step_seq}`,
        node_id: input.node.id,
        started_at: input.now,
        ...(Object.keys(values).length > 0 ? { ai_values: values } : {})
      }
    },
    secrets: request.secrets
  }
  return outcome
})

/**
 * `webhook`, second half: the request, once, with the 30 s timeout and the private-address rule. A 2xx answer
 * goes on by `next` (the body, parsed JSON or else text, in `save_response_to`); anything else fails the step.
 */
export const callWebhook = Effect.fnUntraced(function*(input: StepInput) {
  const http = yield* WebhookHttp
  const settings = yield* WebhookSettings
  const request = yield* webhookRequest(input)
  const { secrets } = request
  const failed = (message: string, code: string, extra: Record<string, unknown> = {}) =>
    Effect.fail(new StepFailed({
      message,
      code,
      secrets,
      events: [{ event_type: "action_failed", payload: { action: "webhook", error: { message, code }, ...extra } }]
    }))
  const answer = yield* Effect.result(http.request({
    method: request.method,
    url: request.url,
    headers: request.headers,
    body: request.body === undefined ? undefined : new TextEncoder().encode(JSON.stringify(request.body)),
    timeoutMs: WEBHOOK_TIMEOUT_MS,
    allowPrivate: settings.allowPrivateUrls,
    maxBodyBytes: WEBHOOK_RESPONSE_MAX_BYTES
  }))
  if (answer._tag === "Failure") return yield* failed(`Webhook request failed: ${answer.failure.message}`, answer.failure.reason)
  const { body, status, truncated } = answer.success
  if (status < 200 || status > 299) {
    return yield* failed(`Webhook answered HTTP ${status}: ${body.slice(0, WEBHOOK_ERROR_BODY_CHARS)}`, String(status), { response_status: status })
  }
  const saveTo = configTexts(input.node.data.config).save_response_to
  if (saveTo !== undefined && truncated) {
    return yield* failed(`Webhook answer is larger than ${WEBHOOK_RESPONSE_MAX_BYTES} bytes and cannot be saved`, "response_too_large", {
      response_status: status
    })
  }
  const response = Option.getOrElse(parseJson(body), () => body)
  const ctx = input.execution.execution_context
  return {
    ...follow(saveTo === undefined ? ctx : withVars(ctx, { [saveTo]: response }), [
      { event_type: "action_performed", payload: { action: "webhook", response_status: status, response } }
    ]),
    secrets
  }
})

