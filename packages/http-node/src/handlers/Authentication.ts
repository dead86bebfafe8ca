/** The API-key middleware of the contract: `X-API-Key` or `Authorization: Bearer`, resolved by `Projects`. */
import { ApiRateLimits, Authentication, CurrentPrincipal, Projects, ProxyKey, Unauthorized } from "@parley/core"
import { Effect, Layer, Option } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { admitRequest } from "../RateLimited.ts"
import { Readiness, unknownKey } from "../Readiness.ts"
import { setApiKey, setProjectId } from "../RequestInfo.ts"

const invalid = new Unauthorized({ error: "Invalid API key" })

/** The one key a request presents; two different keys answer 401 (decisions 5). */
export const presentedKey = (request: HttpServerRequest.HttpServerRequest): string | undefined | null => {
  const header = request.headers["x-api-key"]
  const authorization = request.headers["authorization"]
  const bearer = authorization !== undefined && /^bearer\s+/i.test(authorization)
    ? authorization.replace(/^bearer\s+/i, "").trim()
    : undefined
  if (header !== undefined && bearer !== undefined && header !== bearer) return null
  return header ?? bearer
}

export const AuthenticationLive = Layer.effect(
  Authentication,
  Effect.gen(function*() {
    const projects = yield* Projects
    const limits = yield* ApiRateLimits
    const readiness = yield* Readiness
    const refusedKey = (refused: Unauthorized) => unknownKey(readiness, Effect.fail(refused))
    return Authentication.of({
      apiKey: (httpEffect) =>
        Effect.gen(function*() {
          const request = yield* HttpServerRequest.HttpServerRequest
          const key = presentedKey(request)
          if (key === null || key === undefined) return yield* invalid
          const principal = yield* Effect.catchTag(projects.authenticate(key), "Unauthorized", refusedKey)
          // Not judged: the host is not ready (`unknownKey`'s 503).
          if (HttpServerResponse.isHttpServerResponse(principal)) return principal
          setProjectId(request, principal.project.id)
          setApiKey(request, principal.apiKey)
          const refused = yield* admitRequest(limits, principal)
          if (Option.isSome(refused)) return refused.value
          return yield* Effect.provideService(httpEffect, CurrentPrincipal, principal)
        })
    })
  })
)


/** The proxy's routes check the key themselves (`ProxyKey` documents it): every request passes. */
export const ProxyKeyLive = Layer.succeed(ProxyKey, ProxyKey.of({ apiKey: (httpEffect) => httpEffect }))
