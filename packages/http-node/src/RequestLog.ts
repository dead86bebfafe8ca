/**
 * The outermost layer of every request: one structured log line (method,
 * path, status, duration, project, request id), a request id header, and the
 * guarantee that no answer leaves without a `{ "error": ... }` body — an
 * unexpected failure becomes a generic 500 whose detail stays in the log.
 *
 * A request that authenticated as a project is also handed to log search
 * (`LogRecorder`, unless `PARLEY_LOG_API_REQUESTS=false`): method, path
 * without the query string, status, duration, the API key's id and name,
 * the `error` of an error answer; never a body or a key. Handing it over
 * queues it in memory: the answer never waits on the log's write.
 */
import { apiRequestEntry, LogRecorder, LogSettings } from "@parley/core"
import { Clock, Effect, LogLevel, Option, Schema, type Types } from "effect"
import { Headers, HttpRouter, HttpServerError, HttpServerRequest, HttpServerResponse } from "effect/http"
import { apiKeyOf, projectIdOf } from "./RequestInfo.ts"

const STATUS_TEXT: Record<number, string> = {
  400: "Bad request",
  401: "Invalid API key",
  404: "Not found",
  405: "Method not allowed",
  413: "Request body too large",
  500: "Internal server error"
}

const errorBody = (status: number) => ({ error: STATUS_TEXT[status] ?? `HTTP ${status}` })

const decoder = new TextDecoder()

/**
 * An error answer with no body gets the spec's error body, and one in plain text (the HTTP layer's own 415, say)
 * carries its text as `error`; everything else passes through.
 */
const ensureErrorBody = (response: HttpServerResponse.HttpServerResponse) => {
  if (response.status < 400) return response
  const body = response.body
  if (body._tag === "Empty") {
    return HttpServerResponse.jsonUnsafe(errorBody(response.status), { status: response.status, headers: response.headers })
  }
  if (body._tag === "Uint8Array" && body.contentType.startsWith("text/plain")) {
    const text = decoder.decode(body.body).trim()
    return HttpServerResponse.jsonUnsafe(text.length > 0 ? { error: text } : errorBody(response.status), {
      status: response.status,
      headers: Headers.remove(response.headers, "content-type")
    })
  }
  return response
}

/**
 * The path as logged: a setup link's or inbox embed's token is a credential of its page, and a contact erasure's
 * identifier (often a phone number) is what the erasure removes, so neither reaches a log line or log search.
 */
const loggedPath = (path: string) =>
  // One test first: almost every path has nothing to hide, and the three replacements ran on each request.
  CARRIES_SECRET.test(path)
    ? path.replace(/^\/setup\/[^/]+/, "/setup/:token").replace(/^\/embed\/[^/]+/, "/embed/:token")
      .replace(/^(\/platform\/v1\/msg\/contacts)\/[^/]+/, "$1/:identifier")
    : path

const CARRIES_SECRET = /^\/(?:setup|embed|platform\/v1\/msg\/contacts)\//

const decodeErrorBody = Schema.decodeUnknownOption(Schema.fromJsonString(Schema.Struct({ error: Schema.String })))

/** The `error` of an error answer in JSON, cut to 1 KB; null otherwise. */
const errorMessageOf = (response: HttpServerResponse.HttpServerResponse): string | null => {
  if (response.status < 400 || response.body._tag !== "Uint8Array") return null
  return Option.getOrNull(Option.map(decodeErrorBody(decoder.decode(response.body.body)), (b) => b.error.slice(0, 1024)))
}

export const RequestLog = HttpRouter.middleware(Effect.gen(function*() {
  const recorder = yield* LogRecorder
  const { recordApiRequests } = yield* LogSettings
  return (httpEffect: Effect.Effect<HttpServerResponse.HttpServerResponse, Types.unhandled>): Effect.Effect<HttpServerResponse.HttpServerResponse, Types.unhandled, HttpServerRequest.HttpServerRequest> =>
    Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const start = yield* Clock.currentTimeMillis
      const requestId = request.headers["x-request-id"] ?? crypto.randomUUID()
      const exit = yield* Effect.exit(httpEffect)
      let response: HttpServerResponse.HttpServerResponse
      if (exit._tag === "Success") {
        response = ensureErrorBody(exit.value)
      } else {
        const [fromCause, cause] = yield* HttpServerError.causeResponse(exit.cause)
        if (fromCause.status >= 500) {
          yield* Effect.logError("Request failed", cause).pipe(Effect.annotateLogs({ request_id: requestId }))
          response = HttpServerResponse.jsonUnsafe(errorBody(500), { status: 500 })
        } else {
          response = ensureErrorBody(fromCause)
        }
      }
      const end = yield* Clock.currentTimeMillis
      const query = request.url.indexOf("?")
      const path = loggedPath(query === -1 ? request.url : request.url.slice(0, query))
      const projectId = projectIdOf(request)
      // The line's annotations are built only when it is written (`PARLEY_LOG_LEVEL` above info skips it).
      if (yield* LogLevel.isEnabled("Info")) {
        yield* Effect.logInfo("request").pipe(Effect.annotateLogs({
          method: request.method,
          path,
          status: response.status,
          duration_ms: end - start,
          project_id: projectId,
          request_id: requestId
        }))
      }
      if (recordApiRequests && projectId !== null) {
        yield* recorder.record([apiRequestEntry({
          projectId,
          method: request.method,
          path,
          status: response.status,
          durationMs: end - start,
          startedAt: new Date(start).toISOString(),
          requestId,
          apiKey: apiKeyOf(request),
          errorMessage: errorMessageOf(response),
          ip: Option.getOrNull(request.remoteAddress)
        })])
      }
      return HttpServerResponse.setHeader(response, "x-request-id", requestId)
    })
}), { global: true })
