/**
 * The MCP tool server's route (`/mcp`, decisions 4.12): the key is checked before any session starts (401 in the
 * spec's shape), and every action reaches the Platform API in process (`LocalApi`) with the caller's key, through
 * the same router, middleware and handlers a REST request takes.
 */
import { LocalApi, McpCaller, McpTools, Projects } from "@parley/core"
import { Effect, Layer, Option, Redacted, Schema } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { presentedKey } from "../handlers/Authentication.ts"
import { Readiness, unknownKey } from "../Readiness.ts"
import { setProjectId } from "../RequestInfo.ts"

const unauthorized = () => HttpServerResponse.jsonUnsafe({ error: "Invalid API key" }, { status: 401 })

/** `X-API-Key` or `Authorization: Bearer` → the caller of every MCP request; 401 otherwise, before the MCP layer. */
const McpAuthentication = HttpRouter.middleware<{ provides: McpCaller }>()(Effect.gen(function*() {
  const projects = yield* Projects
  const readiness = yield* Readiness
  return (httpEffect) =>
    Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const key = presentedKey(request)
      if (key === null || key === undefined) return unauthorized()
      const principal = yield* Effect.option(projects.authenticate(key))
      if (Option.isNone(principal)) return yield* unknownKey(readiness, Effect.sync(unauthorized))
      setProjectId(request, principal.value.project.id)
      return yield* Effect.provideService(httpEffect, McpCaller, { principal: principal.value, key: Redacted.make(key) })
    })
}))

const decodeJson = Schema.decodeUnknownOption(Schema.fromJsonString(Schema.Unknown))

/** The router's own answer to a request made here: the REST pipeline, global middleware included. */
const layerLocalApi = Layer.effect(
  LocalApi,
  Effect.gen(function*() {
    const router = yield* HttpRouter.HttpRouter
    return LocalApi.of({
      call: (call) =>
        Effect.gen(function*() {
          const headers: Record<string, string> = { "x-api-key": Redacted.value(call.key) }
          if (call.body !== undefined) headers["content-type"] = "application/json"
          const web = new Request(`http://parley.local${call.path}`, {
            method: call.method,
            headers,
            ...(call.body !== undefined ? { body: JSON.stringify(call.body) } : {})
          })
          const response = yield* router.asHttpEffect().pipe(
            Effect.provideService(HttpServerRequest.HttpServerRequest, HttpServerRequest.fromWeb(web)),
            Effect.scoped
          )
          const text = yield* Effect.promise(() => HttpServerResponse.toWeb(response).text())
          const body = text.length === 0 ? undefined : Option.getOrElse(decodeJson(text), () => text)
          return { status: response.status, body }
        }).pipe(
          // The request log answers every failure itself; anything past it is the host's fault, as for REST.
          Effect.catchCause(() => Effect.succeed({ status: 500, body: { error: "Internal server error" } }))
        )
    })
  })
)

export const routes = McpTools.layerHttp.pipe(
  Layer.provide(McpAuthentication.layer),
  Layer.provide(layerLocalApi)
)
