/**
 * `GET /metrics`: the host's Prometheus exposition (`OperationalMetrics`), off unless the operator sets
 * `PARLEY_METRICS_TOKEN`; then only a request with `Authorization: Bearer <token>` gets it, any other 401. The
 * standalone host can also serve it without a token on an operator port of its own (`PARLEY_METRICS_PORT`).
 */
import { OperationalMetrics } from "@parley/core"
import { Config, Effect, Layer, Option, Redacted } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { timingSafeEqual } from "node:crypto"

/** Prometheus's text exposition format. */
export const CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

export const MetricsToken = Config.option(Config.Redacted("PARLEY_METRICS_TOKEN")).pipe(
  Config.map(Option.filter((token) => Redacted.value(token).length > 0))
)

const bearer = (header: string | undefined): string | undefined => {
  const match = header === undefined ? null : /^Bearer\s+(.+)$/i.exec(header.trim())
  return match === null ? undefined : match[1]
}

const sameSecret = (given: string, expected: string) => {
  const a = Buffer.from(given)
  const b = Buffer.from(expected)
  return a.length === b.length && timingSafeEqual(a, b)
}

/** The exposition as a response. */
export const exposition = (metrics: OperationalMetrics["Service"]) =>
  Effect.map(metrics.scrape, (body) => HttpServerResponse.text(body, { contentType: CONTENT_TYPE }))

const refused = HttpServerResponse.jsonUnsafe(
  { error: "Missing or invalid metrics token" },
  { status: 401, headers: { "www-authenticate": "Bearer" } }
)

/** The route on the host's router, when a token is configured. */
export const routes = HttpRouter.use((router) =>
  Effect.gen(function*() {
    const token = yield* MetricsToken
    if (Option.isNone(token)) return
    const expected = Redacted.value(token.value)
    const metrics = yield* OperationalMetrics
    yield* router.add(
      "GET",
      "/metrics",
      Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
        const given = bearer(request.headers.authorization)
        return given !== undefined && sameSecret(given, expected) ? exposition(metrics) : Effect.succeed(refused)
      })
    )
  }).pipe(Effect.orDie)
).pipe(Layer.provide(OperationalMetrics.layer))
