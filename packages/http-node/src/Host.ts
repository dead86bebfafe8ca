/**
 * The Parley host as a layer a team mounts: every route (Platform API, older
 * surface, OpenAPI, docs, health) over the core services. Storage is the
 * caller's choice: Postgres (`layerPostgres`) or memory ports for tests.
 */
import { Ids, Parley, ParleyApi, PublicUrl } from "@parley/core"
import { layerMemoryJobQueue, layerMemoryStorage } from "@parley/core/testing"
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { HttpApiBuilder, HttpApiScalar } from "effect/http-api"
import { AuthenticationLive } from "./handlers/Authentication.ts"
import { RequestErrorsLive } from "./handlers/RequestErrors.ts"
import { FlowsHandlers, TriggersHandlers, WorkflowsHandlers } from "./handlers/Workflows.ts"
import { EventDefinitionsHandlers, EventsHandlers } from "./handlers/Events.ts"
import { RequestLog } from "./RequestLog.ts"

const ApiRoutes = HttpApiBuilder.layer(ParleyApi, { openapiPath: "/openapi.json" }).pipe(
  Layer.provide([WorkflowsHandlers, TriggersHandlers, FlowsHandlers]),
  Layer.provide([EventsHandlers, EventDefinitionsHandlers]),
  // The HTTP pipeline resolves the middleware again per request, so they stay in the output.
  Layer.provideMerge(RequestErrorsLive),
  Layer.provideMerge(AuthenticationLive)
)

// The reference must render on a closed network: no web fonts fetched from elsewhere.
const DocsRoute = HttpApiScalar.layer(ParleyApi, { path: "/docs", scalar: { withDefaultFonts: false } })

const HealthRoute = HttpRouter.add("GET", "/healthz", HttpServerResponse.jsonUnsafe({ status: "ok" }))

/** Anything no route claims: 404 in the spec's error shape instead of an empty body. */
const NotFoundRoute = HttpRouter.add(
  "*",
  "/*",
  Effect.succeed(HttpServerResponse.jsonUnsafe({ error: "Not found" }, { status: 404 }))
)

/** Every route of the host; needs the core services and their ports. */
export const routes = Layer.mergeAll(ApiRoutes, DocsRoute, HealthRoute, NotFoundRoute, RequestLog)

/**
 * The routes over the core services, which it also exposes (so the caller can
 * bootstrap projects); the ports (storage, ids, jobs) come from the caller.
 */
export const layer = (options: { readonly publicUrl: string }) =>
  routes.pipe(
    // The capabilities' job workers run for as long as the host does.
    Layer.merge(Parley.layerWorkers),
    Layer.provideMerge(Parley.layerServices),
    Layer.provide(Layer.succeed(PublicUrl, options.publicUrl))
  )

/** Serves `layer` on an HTTP server the caller provides (Node's, in `main.ts` and tests). */
export const serve = (options: { readonly publicUrl: string }) =>
  HttpRouter.serve(routes, { disableLogger: true, disableListenLog: true }).pipe(
    // The capabilities' job workers run for as long as the host does.
    Layer.merge(Parley.layerWorkers),
    Layer.provideMerge(Parley.layerServices),
    Layer.provide(Layer.succeed(PublicUrl, options.publicUrl))
  )

/** The host over memory ports: for unit tests and demos, nothing persists. */
export const layerMemory = (options: { readonly publicUrl: string }) =>
  layer(options).pipe(Layer.provideMerge(Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layer)))
