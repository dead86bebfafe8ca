/**
 * The write rules of functions and their secrets (decisions 2.7, 4.4, 7.2,
 * 8.4), each a check answering the refusal's exact message, and the
 * HTTP-neutral rules of an invoke: which inbound headers reach the function
 * (decisions 5), how its answer is shaped (10.5.3), and how bodies are kept
 * in the invocation log.
 */
import { Effect, Predicate } from "effect"
import { unprocessable } from "../shared/ApiError.ts"
import { SLUG_MAX } from "../shared/Slug.ts"
import { detectCodeShape } from "./FunctionCode.ts"
import {
  defaultFunctionRuntimeConfig,
  FUNCTION_SLUG_PATTERN,
  FUNCTION_TYPE,
  FunctionBounds,
  type FunctionRuntimeConfig,
  type FunctionRuntimeConfigInput,
  FUNCTION_SECRET_NAME_PATTERN
} from "./Function.ts"

const utf8 = new TextEncoder()
export const byteLength = (text: string): number =>
  text.length * 3 <= 1024 ? utf8.encode(text).byteLength : Buffer.byteLength(text, "utf8")

/** Decisions 7.2: the refusal of code of neither accepted shape. */
export const CODE_SHAPE_ERROR = "Code must define async function handler(request, env) or export default { fetch }"

export const checkName = (name: string, path: string) => {
  const trimmed = name.trim()
  return trimmed.length === 0 || trimmed.length > FunctionBounds.nameMax
    ? Effect.fail(unprocessable(`name must be 1-${FunctionBounds.nameMax} characters`, [
      { path: `${path}.name`, message: `must be 1-${FunctionBounds.nameMax} characters` }
    ]))
    : Effect.succeed(trimmed)
}

/** At most 1 MB and of one of the two shapes (decisions 10.5.1); a syntax error shows at deploy. */
export const checkCode = (code: string, path: string) => {
  if (byteLength(code) > FunctionBounds.codeBytes) {
    return Effect.fail(unprocessable("Code must be at most 1 MB", [{ path: `${path}.code`, message: "must be at most 1 MB" }]))
  }
  return detectCodeShape(code) === undefined
    ? Effect.fail(unprocessable(CODE_SHAPE_ERROR, [{ path: `${path}.code`, message: "has neither accepted shape" }]))
    : Effect.void
}

export const checkSlug = (slug: string, path: string) =>
  !FUNCTION_SLUG_PATTERN.test(slug) || slug.length > SLUG_MAX
    ? Effect.fail(unprocessable(`slug must match ^[a-z0-9-]+$ and be at most ${SLUG_MAX} characters`, [
      { path: `${path}.slug`, message: "is invalid" }
    ]))
    : Effect.void

export const checkDescription = (description: string | null | undefined, path: string) =>
  description !== undefined && description !== null && description.length > FunctionBounds.descriptionMax
    ? Effect.fail(unprocessable(`description must be at most ${FunctionBounds.descriptionMax} characters`, [
      { path: `${path}.description`, message: `must be at most ${FunctionBounds.descriptionMax} characters` }
    ]))
    : Effect.void

export const checkFunctionType = (type: string | undefined, path: string) =>
  type !== undefined && type !== FUNCTION_TYPE
    ? Effect.fail(unprocessable(`function_type must be ${FUNCTION_TYPE}`, [
      { path: `${path}.function_type`, message: `must be ${FUNCTION_TYPE}` }
    ]))
    : Effect.void

/** A partial `runtime_config` over the current one: timeout 1-30 whole seconds, memory 128 only. */
export const resolveRuntimeConfig = (
  input: FunctionRuntimeConfigInput | undefined,
  current: FunctionRuntimeConfig = defaultFunctionRuntimeConfig,
  path: string
) =>
  Effect.gen(function*() {
    if (input === undefined) return current
    const { timeoutMaxSeconds: max, timeoutMinSeconds: min } = FunctionBounds
    const timeout = input.timeout ?? current.timeout
    if (!Number.isInteger(timeout) || timeout < min || timeout > max) {
      return yield* unprocessable(`runtime_config.timeout must be a whole number of seconds from ${min} to ${max}`, [
        { path: `${path}.runtime_config.timeout`, message: `must be an integer from ${min} to ${max}` }
      ])
    }
    const memory = input.memory ?? current.memory
    if (memory !== FunctionBounds.memoryMb) {
      return yield* unprocessable(`runtime_config.memory must be ${FunctionBounds.memoryMb}`, [
        { path: `${path}.runtime_config.memory`, message: `must be ${FunctionBounds.memoryMb}` }
      ])
    }
    return { timeout, memory }
  })

// ---- secrets ----

export const SECRET_NAME_ERROR = "Secret names may contain only A-Z, 0-9 and _"
export const NOT_DEPLOYED_SECRETS_ERROR = "Deploy the function before adding secrets"

export const checkSecretName = (name: string) =>
  name.length === 0 || !FUNCTION_SECRET_NAME_PATTERN.test(name)
    ? Effect.fail(unprocessable(SECRET_NAME_ERROR, [{ path: "secret.name", message: "must match ^[A-Z0-9_]+$" }]))
    : name.length > FunctionBounds.secretNameMax
    ? Effect.fail(unprocessable(`Secret names may be at most ${FunctionBounds.secretNameMax} characters`, [
      { path: "secret.name", message: `must be at most ${FunctionBounds.secretNameMax} characters` }
    ]))
    : Effect.void

/** A string (`text`) or an object (`json`) of at most 32 KB; answers the type and the stored plaintext. */
export const checkSecretValue = (value: unknown) =>
  Effect.gen(function*() {
    if (!Predicate.isString(value) && !Predicate.isObject(value)) {
      return yield* unprocessable("Secret values must be a string or an object", [
        { path: "secret.value", message: "must be a string or an object" }
      ])
    }
    const plaintext = typeof value === "string" ? value : JSON.stringify(value)
    if (byteLength(plaintext) > FunctionBounds.secretValueBytes) {
      return yield* unprocessable("Secret values may be at most 32 KB", [
        { path: "secret.value", message: "must be at most 32 KB" }
      ])
    }
    return { type: typeof value === "string" ? "text" as const : "json" as const, plaintext }
  })

// ---- invoke ----

/** Headers dropped by name (decisions 5): credentials, proxy and hop-by-hop headers. */
const droppedHeaders = new Set([
  "authorization",
  "proxy-authorization",
  "cookie",
  "x-api-key",
  "forwarded",
  "via",
  "x-real-ip",
  "connection",
  "keep-alive",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "host",
  "content-length",
  "expect"
])

const signatureHeader = /signature|^webhook-(?:id|timestamp)$/

/**
 * Inbound headers a function sees (decisions 5): content headers,
 * `User-Agent`, `Accept*`, custom `X-*` headers and signature headers
 * (`X-Hub-Signature-256`, `Stripe-Signature`, Standard Webhooks' `webhook-*`);
 * never credentials (`Authorization`, `Cookie`, `X-API-Key`), proxy headers
 * (`Forwarded`, `X-Forwarded-*`, `Via`, `X-Real-IP`), hop-by-hop headers or
 * Parley's own (`X-Parley-*`). Applied to private and public invokes alike:
 * the project's key never reaches code.
 */
export const sanitizeInboundHeaders = (headers: Readonly<Record<string, string | undefined>>): Record<string, string> => {
  const kept: Record<string, string> = {}
  for (const [raw, value] of Object.entries(headers)) {
    if (value === undefined) continue
    const name = raw.toLowerCase()
    if (droppedHeaders.has(name) || name.startsWith("x-forwarded-") || name.startsWith("x-parley-")) continue
    if (
      name.startsWith("content-") || name === "user-agent" || name.startsWith("accept") || name.startsWith("x-") ||
      signatureHeader.test(name)
    ) {
      kept[name] = value
    }
  }
  return kept
}

export const isJsonContentType = (contentType: string | undefined): boolean => {
  if (contentType === undefined) return false
  const type = contentType.split(";")[0]!.trim().toLowerCase()
  return type === "application/json" || (type.startsWith("application/") && type.endsWith("+json"))
}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true })
const lenientUtf8 = new TextDecoder()

/** Decisions 7.2: a body sent as JSON must parse; an empty body is no body. */
export const isInvalidJsonBody = (contentType: string | undefined, body: Uint8Array): boolean => {
  if (!isJsonContentType(contentType) || body.byteLength === 0) return false
  try {
    const text = strictUtf8.decode(body)
    if (text.trim().length === 0) return false
    JSON.parse(text)
    return false
  } catch {
    return true
  }
}

/** At most 16 KB of a body as text for the invocation log (cut on a character boundary); null when empty. */
export const loggedBody = (body: Uint8Array): string | null => {
  if (body.byteLength === 0) return null
  const cut = body.byteLength > FunctionBounds.invocationBodyBytes
    ? body.subarray(0, FunctionBounds.invocationBodyBytes)
    : body
  const text = lenientUtf8.decode(cut)
  return body.byteLength > FunctionBounds.invocationBodyBytes ? text.replace(/\uFFFD+$/, "") : text
}

/** At most `max` characters (code points kept whole). */
export const clipCharacters = (text: string, max: number): string => {
  if (text.length <= max) return text
  const clipped = text.slice(0, max)
  return /[\uD800-\uDBFF]$/.test(clipped) ? clipped.slice(0, -1) : clipped
}

/** Response headers passed back to invoke callers besides `Content-Type`. */
const forwardedResponseHeaders = new Set([
  "cache-control",
  "content-disposition",
  "content-language",
  "etag",
  "last-modified",
  "location",
  "vary"
])

export interface ShapedInvokeAnswer {
  readonly status: number
  readonly headers: Record<string, string>
  readonly body: Uint8Array
}

/**
 * Decisions 10.5.3: `passthrough` answers the function's status, body and
 * `Content-Type` unchanged (with its caching, location and custom `X-*`
 * headers); `wrapped` puts a 2xx JSON answer under `data`, and the text of a
 * non-JSON 2xx answer as a string. Anything else passes through in both modes.
 */
export const shapeAnswer = (
  mode: "passthrough" | "wrapped",
  answer: { readonly status: number; readonly headers: Readonly<Record<string, string>>; readonly body: Uint8Array }
): ShapedInvokeAnswer => {
  const headers: Record<string, string> = {}
  for (const [name, value] of Object.entries(answer.headers)) {
    if (
      name === "content-type" || forwardedResponseHeaders.has(name) ||
      (name.startsWith("x-") && !name.startsWith("x-parley-") && !name.startsWith("x-ratelimit-"))
    ) headers[name] = value
  }
  // 204 and 205 carry no body to wrap.
  if (mode === "passthrough" || answer.status < 200 || answer.status > 299 || answer.status === 204 || answer.status === 205) {
    return { status: answer.status, headers, body: answer.body }
  }
  const contentType = answer.headers["content-type"]
  let data: unknown = lenientUtf8.decode(answer.body)
  if (isJsonContentType(contentType)) {
    try {
      data = JSON.parse(data as string)
    } catch {
      // Not JSON after all: wrapped as its text.
    }
  }
  const { "content-type": _, "content-disposition": __, ...rest } = headers
  return {
    status: answer.status,
    headers: { ...rest, "content-type": "application/json" },
    body: utf8.encode(JSON.stringify({ data: data === undefined ? null : data }))
  }
}
