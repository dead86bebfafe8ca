/**
 * The Parley host as a layer a team mounts: every route (Platform API, older
 * surface, OpenAPI, docs, health) over the core services. Storage is the
 * caller's choice: Postgres (`layerPostgres`) or memory ports for tests.
 */
import { NodeHttpClient } from "@effect/platform-node"
import {
  ExecutionsSettings,
  FunctionSecretKey,
  type FunctionKv,
  type FunctionRuntime,
  Ids,
  MessagingProxy,
  Parley,
  ParleyApi,
  PublicUrl,
  Upstream
} from "@parley/core"
import { layerMemoryFunctionRuntime, layerMemoryJobQueue, layerMemoryStorage } from "@parley/core/testing"
import { Effect, Layer } from "effect"
import { HttpClient, HttpRouter, HttpServerResponse } from "effect/http"
import { HttpApiBuilder, HttpApiScalar } from "effect/http-api"
import { AuthenticationLive, ProxyKeyLive } from "./handlers/Authentication.ts"
import { RequestErrorsLive } from "./handlers/RequestErrors.ts"
import { FlowsHandlers, TriggersHandlers, WorkflowsHandlers } from "./handlers/Workflows.ts"
import { ExecutionsHandlers, FlowExecutionsHandlers } from "./handlers/Executions.ts"
import { EventDefinitionsHandlers, EventsHandlers } from "./handlers/Events.ts"
import { MsgConfigsHandlers, PhoneNumbersHandlers } from "./handlers/MessagingNumbers.ts"
import { CustomersHandlers } from "./handlers/Customers.ts"
import { MsgConversationsHandlers } from "./handlers/Conversations.ts"
import { SandboxHandlers } from "./handlers/MessagingSandbox.ts"
import * as Ingestion from "./ingestion/Routes.ts"
import * as Proxy from "./proxy/Routes.ts"
import { FunctionInvokeHandlers, FunctionsHandlers, LegacyFunctionsHandlers } from "./handlers/Functions.ts"
import { layerWorkerdFunctionRuntimeConfig } from "./runtime/Workerd.ts"
import { WebhookDeliveriesHandlers, WebhooksHandlers } from "./handlers/Webhooks.ts"
import { layerNodeWebhookHttp } from "./delivery/NodeWebhookHttp.ts"
import { RequestLog } from "./RequestLog.ts"

const ApiRoutes = HttpApiBuilder.layer(ParleyApi, { openapiPath: "/openapi.json" }).pipe(
  Layer.provide([WorkflowsHandlers, TriggersHandlers, FlowsHandlers]),
  Layer.provide([ExecutionsHandlers, FlowExecutionsHandlers]),
  Layer.provide([EventsHandlers, EventDefinitionsHandlers]),
  Layer.provide([PhoneNumbersHandlers, MsgConfigsHandlers, SandboxHandlers, CustomersHandlers]),
  Layer.provide(MsgConversationsHandlers),
  Layer.provide(Proxy.ProxyHandlers),
  Layer.provide([FunctionsHandlers, FunctionInvokeHandlers, LegacyFunctionsHandlers]),
  Layer.provide([WebhooksHandlers, WebhookDeliveriesHandlers]),
  // The HTTP pipeline resolves the middleware again per request, so they stay in the output.
  Layer.provideMerge(RequestErrorsLive),
  Layer.provideMerge(AuthenticationLive),
  Layer.provideMerge(ProxyKeyLive)
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

/**
 * Every route of the host; needs the core services and their ports. One `MessagingProxy` serves the documented
 * proxy endpoints and the other `/proxy/*` routes alike (its per-recipient send order and caches are shared).
 */
export const routes = Layer.mergeAll(ApiRoutes, Ingestion.routes, Proxy.routes, DocsRoute, HealthRoute, NotFoundRoute, RequestLog)
  .pipe(Layer.provide(MessagingProxy.layer))

export interface HostOptions {
  readonly publicUrl: string
  /**
   * Where function code runs: by default workerd processes under the
   * supervisor (`PARLEY_FUNCTION_PROCESSES`, `PARLEY_ALLOW_PRIVATE_WEBHOOK_URLS`),
   * started on the first deploy or invoke, so a host without functions runs none.
   */
  readonly functionRuntime?: Layer.Layer<FunctionRuntime, never, FunctionKv> | undefined
  /**
   * Whether the host runs the capabilities' job workers (`Parley.layerWorkers`); default true. Without,
   * jobs and domain events wait for workers built later over the host's services (a benchmark's backlog).
   */
  readonly workers?: boolean | undefined
}

/** The Cloud API adapter's client: undici's (see `Upstream.UpstreamHttpClient`). */
const layerUpstreamHttpClient = Layer.effect(Upstream.UpstreamHttpClient, Effect.service(HttpClient.HttpClient)).pipe(
  Layer.provide(NodeHttpClient.layerUndici)
)

/** `http` (the routes, served or not) over the core services, with their workers unless `workers` is false. */
const withCapabilities = <A, E, R>(http: Layer.Layer<A, E, R>, options: HostOptions) =>
  http.pipe(
    // The capabilities' job workers run for as long as the host does.
    Layer.merge(options.workers === false ? Layer.empty : Parley.layerWorkers),
    Layer.provideMerge(Parley.layerExecutionServices),
    Layer.provideMerge(Parley.layerFunctionServices),
    Layer.provideMerge(Parley.layerWebhookServices.pipe(Layer.provide(layerNodeWebhookHttp))),
    Layer.provideMerge(Parley.layerServices),
    Layer.provideMerge(options.functionRuntime ?? layerWorkerdFunctionRuntimeConfig()),
    Layer.provide(Layer.mergeAll(
      Layer.succeed(PublicUrl, options.publicUrl),
      FunctionSecretKey.layerConfig,
      ExecutionsSettings.layerConfig,
      layerUpstreamHttpClient
    ))
  )

/**
 * The routes over the core services, which it also exposes (so the caller can
 * bootstrap projects); the ports (storage, ids, jobs) come from the caller.
 */
export const layer = (options: HostOptions) => withCapabilities(routes, options)

/** Serves `layer` on an HTTP server the caller provides (Node's, in `main.ts` and tests). */
export const serve = (options: HostOptions) =>
  withCapabilities(HttpRouter.serve(routes, { disableLogger: true, disableListenLog: true }), options)

/** The host over memory ports: for unit tests and demos, nothing persists. */
export const layerMemory = (options: HostOptions) =>
  layer({ functionRuntime: layerMemoryFunctionRuntime(), ...options }).pipe(Layer.provideMerge(Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layer)))
