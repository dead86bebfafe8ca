/**
 * Bounds on what a request may carry, enforced before any handler reads it
 * (decisions 8.4, docs/decisions.md "Text a request may carry"):
 *
 * - Platform and older-surface bodies: 10 MB. A larger `Content-Length`
 *   answers 413 unread; a body without one stops being read at the limit.
 *   The proxy, the upstream webhook and function invokes keep their own
 *   limits (their handlers read their bodies).
 * - Text PostgreSQL cannot store (a NUL character, an unpaired surrogate) in
 *   a query value, a path segment or a JSON body, and JSON nested deeper than
 *   `MAX_JSON_DEPTH`, answer 422 naming the field — on the proxy, a 400 in the
 *   network's error shape, like its other refusals.
 */
import { describeTextProblem, invalidParameter, jsonTextProblem, stringProblem, type TextProblem } from "@parley/core"
import { ByteSize, Effect } from "effect"
import { HttpIncomingMessage, HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { MAX_SEND_BODY_BYTES } from "./proxy/Routes.ts"

/** Request bodies of the Platform API and the older surface (decisions 8.4). */
export const MAX_PLATFORM_BODY_BYTES = 10 * 1024 * 1024

const UPSTREAM_WEBHOOK = "/platform/v1/msg/upstream/webhook"
const INVOKE = /^\/platform\/v1\/functions\/[^/]+\/invoke\/?$/

const isJson = (request: HttpServerRequest.HttpServerRequest) =>
  (request.headers["content-type"] ?? "").toLowerCase().includes("json")

const refusal = (proxy: boolean, problem: TextProblem) => {
  const { message, path } = describeTextProblem(problem)
  if (proxy) {
    const a = invalidParameter(400, message)
    return HttpServerResponse.uint8Array(a.body, { status: a.status, contentType: a.contentType })
  }
  return HttpServerResponse.jsonUnsafe({ error: message, details: [{ path, message }] }, { status: 422 })
}

/** The first query value or path segment PostgreSQL could not store. */
const urlProblem = (url: URL): TextProblem | undefined => {
  for (const [name, value] of url.searchParams) {
    const found = stringProblem(name, name) ?? stringProblem(value, name)
    if (found !== undefined) return found
  }
  for (const segment of url.pathname.split("/")) {
    let decoded: string
    try {
      decoded = decodeURIComponent(segment)
    } catch {
      continue
    }
    const found = stringProblem(decoded, "path")
    if (found !== undefined) return found
  }
  return undefined
}

/**
 * What makes a URL's parsed path or values differ from its raw text: percent-escapes (the only way a NUL or a lone
 * surrogate gets in: Node's parser refuses anything but printable ASCII in a request line), dot segments and
 * backslashes (which WHATWG's parser resolves), a fragment, a leading `//` (read as a host) and a URL that is not a
 * path (absolute-form). Without any, the raw path is the parsed one and has nothing to refuse, so it is not parsed:
 * a `URL` per request was 2 % of an authenticated GET's CPU.
 */
const NEEDS_PARSING = /[%\\#]|\/\.|^\/\//

/** The request's path, and the first problem of its URL (undefined when none). */
const pathAndProblem = (raw: string): readonly [string, TextProblem | undefined] => {
  if (raw.charCodeAt(0) === 0x2f && !NEEDS_PARSING.test(raw)) {
    const query = raw.indexOf("?")
    return [query === -1 ? raw : raw.slice(0, query), undefined]
  }
  const url = new URL(raw, "http://host")
  return [url.pathname, urlProblem(url)]
}

const tooLarge = () => HttpServerResponse.jsonUnsafe({ error: "Request body too large" }, { status: 413 })

export const InputLimits = HttpRouter.middleware(
  (httpEffect) =>
    Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const [pathname, fromUrl] = pathAndProblem(request.url)
      const proxy = pathname === "/proxy" || pathname.startsWith("/proxy/")
      if (fromUrl !== undefined) return refusal(proxy, fromUrl)
      // These routes read their bodies themselves, under their own limits, and store them as bytes.
      if (pathname.startsWith(UPSTREAM_WEBHOOK) || INVOKE.test(pathname)) return yield* httpEffect
      const limit = proxy ? MAX_SEND_BODY_BYTES : MAX_PLATFORM_BODY_BYTES
      const declared = Number(request.headers["content-length"] ?? "0")
      if (!proxy && declared > limit) return tooLarge()
      if (isJson(request) && request.method !== "GET" && request.method !== "HEAD") {
        // The body is read once and kept: the handler reads the same bytes, under the same limit.
        const text = yield* request.text.pipe(
          Effect.provideService(HttpIncomingMessage.MaxBodySize, ByteSize.bytes(limit)),
          Effect.result
        )
        if (text._tag === "Failure") {
          // The proxy answers an unreadable body in its own shape.
          if (!proxy) {
            const reason = text.failure.reason
            return reason._tag === "RequestParseError" && reason.reason === "BodyTooLarge"
              ? tooLarge()
              : HttpServerResponse.jsonUnsafe({ error: "Request body could not be read" }, { status: 400 })
          }
        } else {
          const fromBody = jsonTextProblem(text.success)
          if (fromBody !== undefined) return refusal(proxy, fromBody)
        }
      }
      return yield* (proxy ? httpEffect : Effect.provideService(httpEffect, HttpIncomingMessage.MaxBodySize, ByteSize.bytes(limit)))
    }),
  { global: true }
)
