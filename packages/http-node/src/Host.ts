/**
 * The Parley host as a layer a team mounts: every route (Platform API, older
 * surface, OpenAPI, docs, health) over the core services. Storage is the
 * caller's choice: Postgres (`layerPostgres`) or memory ports for tests.
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import {
  ExecutionsSettings,
  ApiRateLimitSettings,
  FunctionSecretKey,
  type FunctionKv,
  type FunctionRuntime,
  Ids,
  MediaIngest,
  Inbox,
  Viewer,
  MessagingProxy,
  layerTranscriptionModelConfig,
  layerVoiceNoteWorkers,
  OpenAiCompatible,
  Parley,
  ParleyApi,
  PublicUrl,
  Transactor,
  Upstream
} from "@parley/core"
import { layerMemoryFunctionRuntime, layerMemoryJobQueue, layerMemoryStorage } from "@parley/core"
import { Effect, Layer, Scope } from "effect"
import { createServer, type Server } from "node:http"
import type { Duplex } from "node:stream"
import { HttpClient, HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApi, HttpApiBuilder, HttpApiScalar, OpenApi } from "effect/http-api"
import { notReady, Readiness } from "./Readiness.ts"
import { AuthenticationLive, ProxyKeyLive } from "./handlers/Authentication.ts"
import { RequestErrorsLive } from "./handlers/RequestErrors.ts"
import { FlowsHandlers, TriggersHandlers, WorkflowsHandlers } from "./handlers/Workflows.ts"
import { ExecutionsHandlers, FlowExecutionsHandlers } from "./handlers/Executions.ts"
import { WorkflowLifecycleHandlers } from "./handlers/WorkflowLifecycle.ts"
import { EventDefinitionsHandlers, EventsHandlers } from "./handlers/Events.ts"
import { MsgConfigsHandlers, MsgMediaHandlers, PhoneNumbersHandlers } from "./handlers/MessagingNumbers.ts"
import { CustomersHandlers } from "./handlers/Customers.ts"
import { MsgTemplatesHandlers } from "./handlers/Templates.ts"
import { ProviderModelsHandlers } from "./handlers/ProviderModels.ts"
import { MsgConversationsHandlers } from "./handlers/Conversations.ts"
import { SandboxHandlers } from "./handlers/MessagingSandbox.ts"
import * as Ingestion from "./ingestion/Routes.ts"
import * as Proxy from "./proxy/Routes.ts"
import { FunctionInvokeHandlers, FunctionsHandlers, LegacyFunctionsHandlers } from "./handlers/Functions.ts"
import { layerWorkerdFunctionRuntimeConfig } from "./adapters/workerd/Workerd.ts"
import { WebhookDeliveriesHandlers, WebhooksHandlers } from "./handlers/Webhooks.ts"
import { layerNodeWebhookHttp } from "./adapters/NodeWebhookHttp.ts"
import { RequestLog } from "./RequestLog.ts"
import { InputLimits } from "./InputLimits.ts"
import * as Simulators from "./simulators/Choice.ts"
import { layerDeclaredModels } from "./Models.ts"
import { LegacySetupLinksHandlers, SetupLinksHandlers } from "./handlers/SetupLinks.ts"
import * as SetupPages from "./pages/SetupPages.ts"
import * as Mcp from "./mcp/Routes.ts"
import { InboxAuthenticationLive, InboxEmbedsHandlers, InboxHandlers } from "./handlers/InboxEmbeds.ts"
import * as InboxPage from "./pages/InboxPage.ts"
import * as ViewerPage from "./pages/ViewerPage.ts"
import { ViewerAuthenticationLive, ViewerHandlers, WorkflowEmbedsHandlers } from "./handlers/WorkflowEmbeds.ts"
import { MsgContactsHandlers } from "./handlers/Contacts.ts"
import { VoiceAgentsHandlers } from "./handlers/VoiceAgents.ts"
import { ApiLogsHandlers } from "./handlers/ApiLogs.ts"
import { LogSearchHandlers } from "./handlers/LogSearch.ts"
import { LegacyBroadcastsHandlers, MsgBroadcastsHandlers } from "./handlers/Broadcasts.ts"
import { GuardrailsHandlers } from "./handlers/Guardrails.ts"
import * as MetricsRoute from "./telemetry/MetricsRoute.ts"

export { deepContexts } from "./ContextDepth.ts"

export { Readiness } from "./Readiness.ts"

/**
 * The contract as this host serves it: `servers` names the public URL (with an embedder's path prefix), so the
 * document and the reference's "try it" send requests where the host really answers.
 */
const servedApi = PublicUrl.useSync((url) => ParleyApi.annotate(OpenApi.Servers, [{ url }]))

const ApiRoutes = Layer.unwrap(Effect.map(servedApi, (api) => HttpApiBuilder.layer(api, { openapiPath: "/openapi.json" }))).pipe(
  Layer.provide([WorkflowsHandlers, TriggersHandlers, FlowsHandlers]),
  Layer.provide([ExecutionsHandlers, FlowExecutionsHandlers, WorkflowLifecycleHandlers]),
  Layer.provide([EventsHandlers, EventDefinitionsHandlers]),
  Layer.provide([PhoneNumbersHandlers, MsgConfigsHandlers, SandboxHandlers, CustomersHandlers]),
  Layer.provide(MsgConversationsHandlers),
  Layer.provide(MsgTemplatesHandlers),
  Layer.provide(ProviderModelsHandlers),
  Layer.provide(Proxy.ProxyHandlers),
  Layer.provide([FunctionsHandlers, FunctionInvokeHandlers, LegacyFunctionsHandlers]),
  Layer.provide([WebhooksHandlers, WebhookDeliveriesHandlers]),
  Layer.provide([SetupLinksHandlers, LegacySetupLinksHandlers]),
  Layer.provide([InboxEmbedsHandlers, InboxHandlers, WorkflowEmbedsHandlers, ViewerHandlers]),
  Layer.provide([MsgContactsHandlers, VoiceAgentsHandlers]),
  Layer.provide([LogSearchHandlers, ApiLogsHandlers]),
  Layer.provide(MsgMediaHandlers),
  Layer.provide([MsgBroadcastsHandlers, LegacyBroadcastsHandlers, GuardrailsHandlers]),
  // The HTTP pipeline resolves the middleware again per request, so they stay in the output.
  Layer.provideMerge(RequestErrorsLive),
  Layer.provideMerge(AuthenticationLive),
  Layer.provideMerge(ProxyKeyLive),
  Layer.provideMerge(Layer.mergeAll(InboxAuthenticationLive, ViewerAuthenticationLive))
)

// The reference must render on a closed network: no web fonts fetched from elsewhere, Scalar's script inlined. That
// script is ~13 MB of heap once loaded (its module's source and the string, kept for the process's life), which the
// old generation then grows by half again: it is loaded on the first request for the page, not at start.
const DocsRoute = HttpRouter.use(Effect.fnUntraced(function*(router) {
  const api = yield* servedApi
  const scope = yield* Scope.Scope
  // The page's own router, its one route matching any path (the host's router sends it `/docs`, under an embedder's
  // prefix too).
  const page = yield* Effect.cached(Effect.gen(function*() {
    const docs = yield* HttpRouter.make
    yield* Layer.buildWithScope(HttpApiScalar.layer(api, { path: "/*", scalar: { withDefaultFonts: false } }), scope).pipe(
      Effect.provideService(HttpRouter.HttpRouter, docs)
    )
    return docs.asHttpEffect()
  }))
  // That router always finds its route: any failure there is a bug.
  yield* router.add("GET", "/docs", Effect.orDie(Effect.flatten(page)))
}))

const HealthRoute = HttpRouter.use((router) =>
  Effect.gen(function*() {
    const readiness = yield* Readiness
    const tx = yield* Transactor
    yield* router.add("GET", "/healthz", HttpServerResponse.jsonUnsafe({ status: "ok" }))
    yield* router.add(
      "GET",
      "/readyz",
      Effect.gen(function*() {
        if (!(yield* readiness.isReady)) return notReady("starting")
        // The database answers: one empty transaction, bounded.
        const reachable = yield* tx.withTransaction(Effect.void).pipe(
          Effect.timeout("2 seconds"),
          Effect.as(true),
          Effect.catchCause(() => Effect.succeed(false))
        )
        return reachable ? HttpServerResponse.jsonUnsafe({ status: "ready" }) : notReady("the database does not answer")
      })
    )
  })
)

/** Every (method, path pattern) the host serves outside `/proxy` (which takes any method). */
const servedRoutes: ReadonlyArray<{ readonly method: string; readonly pattern: RegExp }> = (() => {
  const routes: Array<{ readonly method: string; readonly path: string }> = [
    { method: "GET", path: "/healthz" },
    { method: "GET", path: "/readyz" },
    { method: "GET", path: "/docs" },
    { method: "GET", path: "/openapi.json" },
    ...Ingestion.ROUTES,
    ...SetupPages.ROUTES,
    ...Simulators.ROUTES,
    ...InboxPage.ROUTES,
    ...ViewerPage.ROUTES
  ]
  HttpApi.reflect(ParleyApi, {
    onGroup: () => {},
    onEndpoint: ({ endpoint }) => void routes.push({ method: endpoint.method, path: endpoint.path })
  })
  return routes.map(({ method, path }) => ({
    method,
    pattern: new RegExp(`^${path.replace(/[.*+?^${}()|[\]\\]/g, "\\$&").replace(/:[A-Za-z_]+/g, "[^/]+")}/?$`)
  }))
})()

/**
 * Anything no route claims, in the spec's error shape: 405 with `Allow` when the path is served with other methods
 * only, else 404 (a path served with this very method reaches here when the router refuses a segment, e.g. an id
 * over its length limit: no such resource).
 */
const NotFoundRoute = HttpRouter.add(
  "*",
  "/*",
  Effect.map(HttpServerRequest.HttpServerRequest, (request) => {
    const path = new URL(request.url, "http://host").pathname
    const allowed = [...new Set(servedRoutes.filter((r) => r.pattern.test(path)).map((r) => r.method))]
    return allowed.length === 0 || allowed.includes(request.method)
      ? HttpServerResponse.jsonUnsafe({ error: "Not found" }, { status: 404 })
      : HttpServerResponse.jsonUnsafe({ error: "Method not allowed" }, { status: 405, headers: { allow: allowed.join(", ") } })
  })
)

/**
 * Every route of the host; needs the core services and their ports. One `MessagingProxy` serves the documented
 * proxy endpoints and the other `/proxy/*` routes alike (its per-recipient send order and caches are shared).
 */
export const routes = Layer.mergeAll(
  ApiRoutes,
  Ingestion.routes,
  Proxy.routes,
  DocsRoute,
  HealthRoute,
  Simulators.routes,
  SetupPages.routes,
  Mcp.routes,
  InboxPage.routes,
  ViewerPage.routes,
  MetricsRoute.routes,
  NotFoundRoute,
  // Global middleware: the first registered is the outermost (every answer, a refusal of `InputLimits` too, is logged).
  RequestLog,
  InputLimits
)
  // The embedded inbox sends and marks read through the same proxy.
  .pipe(Layer.provide(Inbox.layer), Layer.provide(Viewer.layer), Layer.provide(MessagingProxy.layer), Layer.provide(MediaIngest.layer))

/**
 * Node's HTTP server for the host: requests Node itself refuses before any route sees them (malformed, headers too
 * large) get the spec's error body too, instead of Node's empty one.
 */
export const createNodeServer = (): Server => {
  const server = createServer()
  server.on("clientError", (error: Error & { readonly code?: string }, socket: Duplex) => {
    if (!socket.writable) return socket.destroy()
    const [status, text] = error.code === "HPE_HEADER_OVERFLOW"
      ? [431, "Request Header Fields Too Large"]
      : error.code === "ERR_HTTP_REQUEST_TIMEOUT"
      ? [408, "Request Timeout"]
      : [400, "Bad Request"]
    const body = JSON.stringify({ error: status === 431 ? "Request headers too large" : status === 408 ? "Request timeout" : "Bad request" })
    socket.end(
      `HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
    )
  })
  return server
}

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
  /**
   * When `/readyz` starts answering 200: once the host's layer is built (default), or when the caller says so
   * (`manual`: `Readiness.markReady`, after its own startup work, as `npm start` does after the bootstrap).
   */
  readonly readiness?: "built" | "manual" | undefined
}

/**
 * undici's client, without `NodeHttpClient.layerUndici`'s `layerMergedContext`: that merges the layer's context into
 * every response's, a copy of the calling fiber's whole context (every service of the host) per request — 8% of what a
 * broadcast allocated. Nothing of the client reads that context (the dispatcher is taken when it is made).
 */
const layerUndici = Layer.effect(HttpClient.HttpClient, NodeHttpClient.makeUndici).pipe(
  Layer.provide(NodeHttpClient.layerDispatcher)
)

/** The Cloud API adapter's client: undici's (see `Upstream.UpstreamHttpClient`). */
const layerUpstreamHttpClient = Layer.effect(Upstream.UpstreamHttpClient, Effect.service(HttpClient.HttpClient)).pipe(
  Layer.provide(layerUndici)
)

/** `http` (the routes, served or not) over the core services, with their workers unless `workers` is false. */
const withCapabilities = <A, E, R>(http: Layer.Layer<A, E, R>, options: HostOptions) => {
  const built = capabilities(http, options).pipe(Layer.provideMerge(Readiness.layer))
  // Built last: everything above is up when the host says it is ready.
  return options.readiness === "manual" ? built : Layer.effectDiscard(Readiness.use((r) => r.markReady)).pipe(Layer.provideMerge(built))
}

/** Language models over undici; the model simulator (served in simulator mode, scriptable by tests). */
const layerLanguageModels = Layer.mergeAll(
  OpenAiCompatible.layer.pipe(Layer.provide(layerUndici)),
  Simulators.layerModelSimulator
)

const capabilities = <A, E, R>(http: Layer.Layer<A, E, R>, options: HostOptions) =>
  http.pipe(
    // `parley-sim` in simulator mode and `PARLEY_MODELS`, declared before the host says it is ready.
    Layer.merge(layerDeclaredModels(options.publicUrl)),
    // The capabilities' job workers run for as long as the host does.
    Layer.merge(options.workers === false ? Layer.empty : Layer.merge(Parley.layerWorkers, layerVoiceNoteWorkers)),
    Layer.provideMerge(Parley.layerExecutionServices),
    Layer.provideMerge(Parley.layerFunctionServices),
    // Webhook nodes of executions make their requests through the same `WebhookHttp`.
    Layer.provideMerge(Parley.layerWebhookServices.pipe(Layer.provideMerge(layerNodeWebhookHttp))),
    Layer.provideMerge(Parley.layerServices),
    // The network of the configuration: the simulator (default) or the Cloud API.
    Layer.provideMerge(Simulators.layerNetwork),
    Layer.provideMerge(layerLanguageModels),
    Layer.provideMerge(options.functionRuntime ?? layerWorkerdFunctionRuntimeConfig()),
    // Kept in the output: services read these settings (the public URL, ...) when called, in the caller's fiber
    // (a request of an embedder's handler, `runPromise`), not only while the layers are built.
    Layer.provideMerge(Layer.mergeAll(
      Layer.succeed(PublicUrl, options.publicUrl),
      FunctionSecretKey.layerConfig,
      ExecutionsSettings.layerConfig,
      ApiRateLimitSettings.layerConfig,
      layerTranscriptionModelConfig,
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
