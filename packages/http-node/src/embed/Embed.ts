/**
 * Parley embedded in an application, in one call: every route of the host (Platform API, older surface, proxy,
 * upstream ingestion, sandbox, health, setup pages, inbox, workflow viewer, MCP, docs, OpenAPI, model simulator) as a web-standard
 * `(Request) => Promise<Response>` handler and a `node:http` handler, under a path prefix of the application's
 * choice, with the storage, job queue, workers and default project behind it. Background work starts with the
 * handler and stops with it. `npm start` (`main.ts`) is one user of this; `examples/embed-http` another.
 *
 *   const parley = await makeParley({ publicUrl: "http://127.0.0.1:3000", basePath: "/parley", apiKey })
 *   server.on("request", (req, res) => req.url?.startsWith("/parley") ? parley.handler(req, res) : app(req, res))
 *   ...
 *   await parley.dispose()
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { PgClient } from "@effect/sql-pg"
import { Ids, MessageConfigs, type Project, Projects, type ProviderModelDeclaration } from "@parley/core"
import * as Pg from "@parley/store-pg"
import {
  Cause,
  Clock,
  Config,
  ConfigProvider,
  Context,
  Effect,
  Exit,
  Layer,
  Logger,
  type LogLevel,
  Metric,
  Option,
  Redacted,
  References,
  Scope,
  Tracer
} from "effect"
import { type HttpMiddleware, HttpEffect, HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import type { SqlClient } from "effect/sql"
import type { IncomingMessage, ServerResponse } from "node:http"
import { deepContexts } from "../ContextDepth.ts"
import * as Host from "../Host.ts"
import { layerPorts } from "../Ports.ts"
import * as Tracing from "../telemetry/Tracing.ts"
import { type BasePathError, isMounted, normalizeBasePath, type ParleyMount, stripBasePath } from "./Mount.ts"

/**
 * What the host needs below it: storage, ids, the job queue and the simulator's store. The router and Node's
 * platform services are provided by the entry point.
 */
export type HostPorts = Exclude<
  Layer.Services<ReturnType<typeof Host.layer>>,
  HttpRouter.HttpRouter | Layer.Success<typeof NodeHttpServer.layerHttpServices>
>

/** Every service an embedded Parley runs: what `runPromise` can reach (`Projects`, `Workflows`, ...). */
export type ParleyServices = Layer.Success<ReturnType<typeof Host.layer>> | HostPorts

/**
 * Where Parley keeps its data. Unset: `DATABASE_URL` when the environment has one, else an embedded PostgreSQL in
 * `PARLEY_DATA_DIR` (default `./.parley`), as `npm start` does.
 */
export type ParleyStorage =
  /** An embedded PostgreSQL with its cluster under this directory, started and stopped with Parley. */
  | { readonly dataDir: string }
  /** A PostgreSQL server of the application's (Parley migrates its own tables there). */
  | { readonly databaseUrl: string | Redacted.Redacted<string> }
  /**
   * The application's own `@effect/sql-pg` client (`PgClient.layer({...})`): Parley's statements go through it; its
   * transactions and the job queue open connections of their own to the same database.
   */
  | { readonly pgClient: Layer.Layer<PgClient.PgClient | SqlClient.SqlClient, unknown> }
  /** Ports of the caller's choosing: memory ports in a test (`@parley/core/testing`), or adapters of its own. */
  | { readonly ports: Layer.Layer<HostPorts, unknown> }

/** The messaging network Parley talks to. */
export type ParleyNetwork =
  /** An in-process simulator: no credentials, a number connected to the default project, `/sandbox` routes. */
  | { readonly mode: "simulator"; readonly appSecret?: string | undefined }
  /** The real Cloud API (see the README's `PARLEY_UPSTREAM_*` settings). */
  | {
    readonly mode: "cloud"
    /** Base address of the Cloud API (default `https://graph.facebook.com`). */
    readonly url?: string | undefined
    /** Checks `X-Hub-Signature-256` of the network's webhooks; unset: every webhook POST answers 401. */
    readonly appSecret?: string | undefined
    /** The token the webhook subscription handshake must present. */
    readonly verifyToken?: string | undefined
    /** The app and signup configuration setup links send customers through. */
    readonly appId?: string | undefined
    readonly signupConfigId?: string | undefined
  }

export interface ParleyOptions {
  /**
   * The application's address as its clients reach it (`https://app.example`); Parley's URLs are this plus
   * `basePath`. Required: every URL Parley hands out (paging links, `endpoint_url`, setup, inbox and viewer links, the
   * OpenAPI `servers`) is built from it.
   */
  readonly publicUrl: string
  /** The path Parley is mounted under (`"/parley"`); default the root. Requests reach Parley with it. */
  readonly basePath?: string | undefined
  readonly storage?: ParleyStorage | undefined
  /** Default: `PARLEY_UPSTREAM` from the environment, else the simulator. */
  readonly network?: ParleyNetwork | undefined
  /** Language models declared at start (upserted by name), beside `parley-sim` in simulator mode. */
  readonly models?: ReadonlyArray<ProviderModelDeclaration> | undefined
  /**
   * Key material (16+ characters) secrets are sealed with; default `PARLEY_SECRET_KEY`, else a random key
   * generated on first use and kept in the database.
   */
  readonly secretKey?: string | Redacted.Redacted<string> | undefined
  /**
   * A key the default project accepts (created on first start if new); without one a key is generated on the
   * first start of an empty database and given once in `createdApiKey`.
   */
  readonly apiKey?: string | Redacted.Redacted<string> | undefined
  /** Where Parley's log entries go: JSON lines on stdout (default), nowhere, or the application's own logger. */
  readonly logger?: "json" | "none" | Logger.Logger<unknown, unknown> | undefined
  /** The least severe entry logged; default `PARLEY_LOG_LEVEL`, else Info. */
  readonly logLevel?: LogLevel.LogLevel | undefined
  /** Parts to leave out: `{ mcp: false, sandbox: false }` answers 404 there. Every part is mounted by default. */
  readonly mount?: ParleyMount | undefined
  /**
   * Any other setting of the README's configuration table (`PARLEY_RATE_LIMIT_PER_MINUTE`, ...), over the
   * environment. Settings neither here nor in the options above are read from the environment.
   */
  readonly settings?: Readonly<Record<string, string>> | undefined
  /**
   * Where Parley's spans go: the application's own tracer (e.g. `@effect/opentelemetry`'s over its tracer provider).
   * Unset: exported over OTLP/HTTP when the environment (or `settings`) has `OTEL_EXPORTER_OTLP_ENDPOINT`, else nowhere.
   */
  readonly tracer?: Tracer.Tracer | undefined
  /** How long a stop waits for requests in flight before it ends them (default 10 s). */
  readonly drainTimeoutMs?: number | undefined
}

/** A running Parley inside the application. */
export interface Parley {
  /** The web-standard handler (Hono, Bun, Deno, a service worker...): requests under `basePath`. */
  readonly fetch: (request: Request) => Promise<Response>
  /** The `node:http` handler (`http.createServer`, Express, Fastify's raw request): requests under `basePath`. */
  readonly handler: (request: IncomingMessage, response: ServerResponse) => void
  /** The normalized prefix (`"/parley"`, or `""` at the root). */
  readonly basePath: string
  /** `publicUrl` + `basePath`: the base of every URL Parley hands out. */
  readonly url: string
  /** The default project. */
  readonly project: Project
  /** The key the default project accepts when this start knows one: the configured key, or the one it created. */
  readonly apiKey: string | undefined
  /** The key created by this start (first start of an empty database without `apiKey`): shown once, keep it. */
  readonly createdApiKey: string | undefined
  /** In simulator mode, the simulated number connected to the default project. */
  readonly simulatedPhoneNumberId: string | undefined
  /** Runs an Effect over Parley's services (`Projects`, `Workflows`, `Events`, ...), e.g. to create a project. */
  readonly runPromise: <A, E>(effect: Effect.Effect<A, E, ParleyServices>) => Promise<A>
  /** The services themselves, for an application that runs Effect of its own. */
  readonly context: Context.Context<ParleyServices>
}

/** `Parley` started by `makeParley`: `dispose` stops it. */
export interface ParleyHandle extends Parley {
  /**
   * Stops Parley: new requests answer 503, requests in flight finish (up to `drainTimeoutMs`), running jobs finish
   * or go back to the queue, the workers and function processes stop, an embedded PostgreSQL shuts down.
   * Stop the application's server from taking requests first. Every call answers the same promise.
   */
  readonly dispose: () => Promise<void>
}

const notFound = HttpServerResponse.jsonUnsafe({ error: "Not found" }, { status: 404 })

const unavailable = (why: string) =>
  HttpServerResponse.jsonUnsafe({ error: `Not ready: ${why}` }, { status: 503, headers: { "retry-after": "1" } })

const secretValue = (value: string | Redacted.Redacted<string>) => typeof value === "string" ? value : Redacted.value(value)

/** The options that are settings of the host, as the names the host reads them by (over the environment). */
const settingsOf = (options: ParleyOptions): Record<string, string> => {
  const network = options.network
  const defined = (entries: ReadonlyArray<readonly [string, string | undefined]>) =>
    Object.fromEntries(entries.filter((entry): entry is readonly [string, string] => entry[1] !== undefined))
  return {
    ...options.settings,
    ...defined([
      ["PARLEY_UPSTREAM", network?.mode],
      ["PARLEY_UPSTREAM_APP_SECRET", network?.appSecret],
      ...(network?.mode === "cloud"
        ? [
          ["PARLEY_UPSTREAM_URL", network.url],
          ["PARLEY_UPSTREAM_VERIFY_TOKEN", network.verifyToken],
          ["PARLEY_UPSTREAM_APP_ID", network.appId],
          ["PARLEY_UPSTREAM_SIGNUP_CONFIG_ID", network.signupConfigId]
        ] as const
        : []),
      ["PARLEY_MODELS", options.models === undefined ? undefined : JSON.stringify(options.models)],
      ["PARLEY_SECRET_KEY", options.secretKey === undefined ? undefined : secretValue(options.secretKey)]
    ])
  }
}

/** The options over the environment: the host reads every setting through `Config`. */
const layerSettings = (options: ParleyOptions) =>
  ConfigProvider.layerAdd(ConfigProvider.fromEnv({ env: settingsOf(options) }), { asPrimary: true })

const layerLogging = (options: ParleyOptions) =>
  Layer.unwrap(Effect.gen(function*() {
    const level = options.logLevel ?? (yield* Config.LogLevel("PARLEY_LOG_LEVEL").pipe(Config.withDefault("Info" as const)))
    const logger = options.logger ?? "json"
    return Layer.mergeAll(
      Logger.layer(logger === "json" ? [Logger.consoleJson] : logger === "none" ? [] : [logger]),
      Layer.succeed(References.MinimumLogLevel, level)
    )
  }))

/** The database address of an application's client: its `url`, or one put together from its parts. */
const databaseUrlOfClient = Layer.effect(
  Pg.DatabaseUrl,
  Effect.gen(function*() {
    const { config } = yield* Effect.service(PgClient.PgClient)
    if (config.url !== undefined) return config.url
    const password = config.password === undefined
      ? undefined
      : Redacted.isRedacted(config.password)
      ? config.password
      : yield* config.password
    const url = new URL("postgres://localhost")
    const host = config.host ?? "localhost"
    // A Unix socket directory goes in `host=` (as libpq and both drivers read it), not in the authority.
    if (host.startsWith("/")) url.searchParams.set("host", host)
    else url.hostname = host
    url.port = String(config.port ?? 5432)
    url.pathname = `/${config.database ?? config.username ?? "postgres"}`
    url.username = config.username ?? "postgres"
    if (password !== undefined) url.password = Redacted.value(password)
    return Redacted.make(url.toString())
  })
)

/** The production ports (storage, pg-boss job queue, simulator store, ids) over one database. */
const overDatabase = <E>(database: Layer.Layer<PgClient.PgClient | SqlClient.SqlClient | Pg.DatabaseUrl, E>): Layer.Layer<HostPorts, unknown> =>
  Layer.mergeAll(Pg.layerStorage, Pg.layerJobQueue(), Pg.layerSimulatorStore, Ids.layer).pipe(Layer.provideMerge(database))

const layerStorage = (storage: ParleyStorage | undefined): Layer.Layer<HostPorts, unknown> => {
  if (storage === undefined) return Layer.merge(layerPorts, Ids.layer)
  if ("ports" in storage) return storage.ports
  if ("pgClient" in storage) {
    return overDatabase(
      Layer.effectDiscard(Pg.migrate).pipe(Layer.provideMerge(databaseUrlOfClient), Layer.provideMerge(storage.pgClient))
    )
  }
  const database = "dataDir" in storage
    ? Pg.DatabaseUrl.layerEmbedded({ dataDir: storage.dataDir })
    : Pg.DatabaseUrl.layer(storage.databaseUrl)
  return overDatabase(Layer.unwrap(Pg.DatabaseUrl.useSync(Pg.layerFromUrl)).pipe(Layer.provideMerge(database)))
}

/**
 * Starts Parley in the current scope and answers its handlers once it is ready: the database migrated, the workers
 * running, the default project's key working. Closing the scope stops it (see `ParleyHandle.dispose`).
 */
export const make = (options: ParleyOptions) =>
  makeUnder(options).pipe(
    // Parley's own traces (a request, a slice, a job) are roots, never children of whatever span started Parley.
    Effect.updateContext((context: Context.Context<Scope.Scope>) => Context.omit(Tracer.ParentSpan)(context)),
    Effect.withSpan("Parley.make", { root: true }),
    // Its services, workers and requests copy their contexts far less often (`ContextDepth.ts`).
    deepContexts
  )

const makeUnder = Effect.fnUntraced(function*(options: ParleyOptions) {
  const basePath = yield* Effect.try({
    try: () => normalizeBasePath(options.basePath),
    catch: (error) => error as BasePathError
  })
  const url = `${options.publicUrl.replace(/\/+$/, "")}${basePath}`
  const mount = options.mount ?? {}
  const scope = yield* Scope.Scope

  const services = Host.layer({ publicUrl: url, readiness: "manual" }).pipe(
    Layer.provideMerge(HttpRouter.layer),
    Layer.provideMerge(layerStorage(options.storage)),
    Layer.provideMerge(NodeHttpServer.layerHttpServices),
    Layer.provideMerge(layerLogging(options)),
    // Built first, closed last: spans of the workers' last moments are still exported.
    Layer.provideMerge(Tracing.layer(options.tracer)),
    // This Parley's own metrics: two in one process (tests, an application with two) do not add up each other's.
    Layer.provideMerge(Layer.sync(Metric.MetricRegistry, () => new Map())),
    Layer.provideMerge(layerSettings(options))
  )
  const context = yield* Layer.buildWithScope(services, scope)
  const within = <A, E>(effect: Effect.Effect<A, E, ParleyServices>) => Effect.provideContext(effect, context)

  // The default project and its key, as `npm start`'s first start does; in simulator mode its number connected.
  const apiKey = options.apiKey === undefined ? undefined : secretValue(options.apiKey)
  const boot = yield* within(Effect.flatMap(Effect.service(Projects), (projects) => projects.bootstrap(apiKey)))
  const simulated = yield* within(Effect.flatMap(Effect.service(MessageConfigs), (configs) => configs.bootstrap(boot.project.id)))

  // Requests in flight, so that a stop lets them finish before the services under them go.
  let inFlight = 0
  let stopping = false
  const mounted: HttpMiddleware.HttpMiddleware = (app) =>
    Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const inner = stripBasePath(basePath, request.url)
      if (!isMounted(mount, inner.split("?")[0]!)) return notFound
      if (stopping) return unavailable("stopping")
      inFlight++
      return yield* app.pipe(
        Effect.provideService(HttpServerRequest.HttpServerRequest, request.modify({ url: inner })),
        Effect.ensuring(Effect.sync(() => void inFlight--))
      )
    })

  const httpEffect = Context.get(context, HttpRouter.HttpRouter).asHttpEffect()
  // `makeHandler` types its middleware after the app's own error and services; `mounted` takes any app.
  const handler = yield* within(NodeHttpServer.makeHandler(httpEffect, { scope, middleware: mounted as never }))
  const fetch = HttpEffect.toWebHandlerWith<ParleyServices, Scope.Scope | HttpServerRequest.HttpServerRequest>(context)(
    httpEffect,
    mounted
  )

  // Added after the services were built, so it runs before their finalizers: requests first, then the workers.
  const drainTimeoutMs = options.drainTimeoutMs ?? 10_000
  yield* Effect.addFinalizer(() =>
    Effect.gen(function*() {
      stopping = true
      const deadline = (yield* Clock.currentTimeMillis) + drainTimeoutMs
      while (inFlight > 0 && (yield* Clock.currentTimeMillis) < deadline) yield* Effect.sleep("10 millis")
    })
  )

  // Ready (`/readyz`) once the configured key works.
  yield* within(Effect.flatMap(Effect.service(Host.Readiness), (readiness) => readiness.markReady))

  return {
    fetch: (request: Request) => fetch(request),
    handler,
    basePath,
    url,
    project: boot.project,
    apiKey: apiKey ?? Option.getOrUndefined(boot.createdSecret),
    createdApiKey: Option.getOrUndefined(boot.createdSecret),
    simulatedPhoneNumberId: Option.getOrUndefined(Option.map(simulated, (config) => config.phone_number_id)),
    runPromise: <A, E>(effect: Effect.Effect<A, E, ParleyServices>) => Effect.runPromise(within(effect)),
    context
  } satisfies Parley
})

/**
 * Starts Parley (see `make`) for an application outside Effect. Resolves once Parley is ready; rejects, with
 * nothing left running, when it cannot start.
 */
export const makeParley = async (options: ParleyOptions): Promise<ParleyHandle> => {
  const scope = Scope.makeUnsafe()
  const exit = await Effect.runPromiseExit(Scope.provide(make(options), scope))
  if (Exit.isFailure(exit)) {
    await Effect.runPromise(Scope.close(scope, exit))
    // The error itself, not Effect's wrapper around it.
    throw Cause.squash(exit.cause)
  }
  let disposed: Promise<void> | undefined
  return {
    ...exit.value,
    dispose: () => (disposed ??= Effect.runPromise(Scope.close(scope, Exit.void)))
  }
}
