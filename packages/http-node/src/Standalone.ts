/**
 * The standalone host (`npm start`, through `main.ts`): one user of the embedding entry point (`embed/Embed.ts`) with Parley at the
 * root of its own `node:http` server on `HOST:PORT`. Storage and every other setting come from the environment
 * (see the README's configuration table). First start creates a default project and prints its key once.
 * SIGINT/SIGTERM stop taking requests, let requests and jobs in flight finish, stop the database.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Cause, Console, Data, Effect, Option, Redacted } from "effect"
import type { IncomingMessage, Server, ServerResponse } from "node:http"
import { HostConfig } from "./Config.ts"
import * as Embed from "./embed/Embed.ts"
import { serveMetricsPort } from "./telemetry/MetricsPort.ts"
import * as Host from "./Host.ts"
import { layerLogging } from "./Logging.ts"

const banner = (publicUrl: string, secret: Option.Option<string>, simulated: Option.Option<string>) =>
  [
    "",
    "Parley is running.",
    `  Platform API   ${publicUrl}/platform/v1`,
    `  Older surface  ${publicUrl}/api/v1`,
    `  API docs       ${publicUrl}/docs`,
    `  OpenAPI        ${publicUrl}/openapi.json`,
    ...Option.match(simulated, {
      onNone: () => [],
      onSome: (pnid) => [
        `  Network        simulator; number ${pnid} connected (try POST ${publicUrl}/sandbox/inbound)`,
        `  Models         parley-sim, the model simulator at ${publicUrl}/model-simulator/v1 (add real ones: parley models add)`
      ]
    }),
    ...Option.match(secret, {
      onNone: () => ["  API key        (already issued; create another with `npm exec parley -- keys create`)"],
      onSome: (key) => [`  API key        ${key}`, "                 shown once: keep it somewhere safe"]
    }),
    ""
  ].join("\n")

/** The port could not be opened (in use, not allowed). */
class ListenError extends Data.TaggedError("ListenError")<{
  readonly cause: Error & { readonly code?: unknown; readonly address?: unknown; readonly port?: unknown }
}> {}

/**
 * What a connection gets while Parley starts: the port is open from the first moment (so a port in use fails at
 * once, before the database starts), and nothing that connects then waits unanswered. `/healthz` says the process
 * answers; everything else, an authenticated route too (it cannot judge a key yet), is 503 with `Retry-After`.
 */
const starting = (request: IncomingMessage, response: ServerResponse) => {
  const healthz = (request.url ?? "").split("?")[0] === "/healthz"
  const body = JSON.stringify(healthz ? { status: "ok" } : { error: "Not ready: starting" })
  response.writeHead(healthz ? 200 : 503, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(body),
    ...(healthz ? {} : { "retry-after": "1" })
  })
  response.end(body)
}

/** Listens on `host:port`; closes the server when the scope ends (a backstop: the stop below closes it first). */
const listen = (server: Server, host: string, port: number) =>
  Effect.acquireRelease(
    Effect.callback<void, ListenError>((resume) => {
      const failed = (cause: ListenError["cause"]) => resume(Effect.fail(new ListenError({ cause })))
      server.once("error", failed)
      server.listen(port, host, () => {
        server.off("error", failed)
        resume(Effect.void)
      })
    }),
    () => close(server)
  )

/**
 * Stops taking requests and waits for those in flight (idle keep-alive connections are closed at once); after
 * 10 s the connections still open are cut.
 */
const close = (server: Server) =>
  Effect.callback<void>((resume) => {
    if (!server.listening) return resume(Effect.void)
    server.close(() => resume(Effect.void))
    server.closeIdleConnections()
  }).pipe(
    Effect.timeoutOrElse({ duration: "10 seconds", orElse: () => Effect.sync(() => server.closeAllConnections()) })
  )

const Main = Effect.gen(function*() {
  const config = yield* HostConfig
  const server = Host.createNodeServer()
  let serve = starting
  // Attached before the port opens: every connection has a handler from the first moment.
  server.on("request", (request: IncomingMessage, response: ServerResponse) => serve(request, response))
  yield* listen(server, config.host, config.port)
  const parley = yield* Embed.make({
    publicUrl: config.publicUrl,
    apiKey: Option.getOrUndefined(Option.map(config.apiKey, Redacted.value))
  })
  serve = parley.handler
  // The operator's metrics port, when configured (docs/operations.md).
  const metricsUrl = yield* serveMetricsPort(parley)
  if (Option.isSome(metricsUrl)) yield* Console.log(`Metrics for Prometheus at ${metricsUrl.value}`)
  // Registered after Parley started, so it runs before Parley stops: no request reaches a stopped Parley.
  yield* Effect.addFinalizer(() => close(server))
  yield* Console.log(banner(
    parley.url,
    Option.fromUndefinedOr(parley.createdApiKey),
    Option.fromUndefinedOr(parley.simulatedPhoneNumberId)
  ))
  return yield* Effect.never
})

// Ctrl-C in a terminal signals the embedded PostgreSQL too: it stops at once, and the pg driver reports the
// connections it closed (57P01) as unhandled errors while the host shuts down. Expected then; fatal otherwise.
let stopping = false
for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => (stopping = true))
process.on("uncaughtException", (error: Error & { readonly code?: unknown }) => {
  if (stopping && error.code === "57P01") return
  console.error(error)
  process.exit(1)
})

/** What went wrong at startup, in one line an operator can act on. */
const startupFailure = (cause: Cause.Cause<unknown>): string => {
  const error = Cause.squash(cause) as { readonly _tag?: unknown; readonly message?: unknown; readonly cause?: unknown }
  const inner = error.cause as { readonly code?: unknown; readonly address?: unknown; readonly port?: unknown } | undefined
  if (error._tag === "ListenError" && inner?.code === "EADDRINUSE") {
    return `${String(inner.address)}:${String(inner.port)} is already in use (another Parley? set PORT or HOST)`
  }
  if (error._tag === "ListenError" && inner?.code === "EACCES") {
    return `not allowed to listen on ${String(inner.address)}:${String(inner.port)} (set PORT above 1023)`
  }
  if (error._tag === "SqlError") return `the database does not answer (${String(error.message)}); check DATABASE_URL`
  const message = typeof error.message === "string" && error.message.length > 0 ? error.message : String(error)
  return message.split("\n")[0]!
}

Effect.scoped(Main).pipe(
  Effect.catchCause((cause) =>
    Cause.hasInterruptsOnly(cause) ? Effect.failCause(cause) : Effect.gen(function*() {
      yield* Effect.logDebug("Startup failed", cause)
      yield* Console.error(`Parley could not start: ${startupFailure(cause)}`)
      process.exitCode = 1
    })),
  Effect.provide(layerLogging),
  NodeRuntime.runMain
)
