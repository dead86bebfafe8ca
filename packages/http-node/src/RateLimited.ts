/**
 * The general per-key limit (decisions 8.1) applied to an authenticated request, before anything else runs:
 * `X-RateLimit-*` on every answer to it (the handler's refusals included); over the limit, the 429 to answer instead.
 */
import { type ApiRateLimits, type Principal, RATE_LIMIT_EXCEEDED, rateLimitHeaders } from "@parley/core"
import { Effect, Option } from "effect"
import { HttpEffect, type HttpServerRequest, HttpServerResponse } from "effect/http"

export const admitRequest = (
  limits: ApiRateLimits["Service"],
  principal: Principal
): Effect.Effect<Option.Option<HttpServerResponse.HttpServerResponse>, never, HttpServerRequest.HttpServerRequest> =>
  Effect.flatMap(limits.admitRequest(principal.apiKey.id), (admission) => {
    const headers = rateLimitHeaders(admission)
    if (!admission.admitted) return Effect.succeed(Option.some(HttpServerResponse.jsonUnsafe(RATE_LIMIT_EXCEEDED, { status: 429, headers })))
    return Effect.as(
      HttpEffect.appendPreResponseHandler((_, response) => Effect.succeed(HttpServerResponse.setHeaders(response, headers))),
      Option.none()
    )
  })
