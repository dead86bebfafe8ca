/**
 * `npm start`: the standalone host. Postgres from `DATABASE_URL` or an
 * embedded server in `PARLEY_DATA_DIR`, the job queue on it, every route on
 * `HOST:PORT`. First start creates a default project and prints its key once.
 * SIGINT/SIGTERM close the server, let running jobs finish, stop the database.
 */
import { NodeHttpServer, NodeRuntime } from "@effect/platform-node"
import { Ids, MessageConfigs, Projects } from "@parley/core"
import { Cause, Console, Effect, Layer, Option, Redacted } from "effect"
import { HostConfig } from "./Config.ts"
import * as Host from "./Host.ts"
import { layerLogging } from "./Logging.ts"
import { layerPorts } from "./Ports.ts"

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

const Main = Layer.unwrap(Effect.gen(function*() {
  const config = yield* HostConfig
  const Bootstrap = Layer.effectDiscard(Effect.gen(function*() {
    const projects = yield* Projects
    const boot = yield* projects.bootstrap(Option.map(config.apiKey, Redacted.value).pipe(Option.getOrUndefined))
    // In simulator mode the simulated number is connected to the default project (idempotent across restarts).
    const simulated = yield* (yield* MessageConfigs).bootstrap(boot.project.id)
    // Ready (`/readyz`) once the configured key works; the banner says so at the same moment.
    yield* (yield* Host.Readiness).markReady
    yield* Console.log(banner(config.publicUrl, boot.createdSecret, Option.map(simulated, (c) => c.phone_number_id)))
  }))
  return Bootstrap.pipe(
    Layer.provideMerge(Host.serve({ publicUrl: config.publicUrl, readiness: "manual" })),
    Layer.provide(NodeHttpServer.layer(Host.createNodeServer, { port: config.port, host: config.host })),
    Layer.provide(Layer.mergeAll(layerPorts, Ids.layer))
  )
}))

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
  if (error._tag === "ServeError" && inner?.code === "EADDRINUSE") {
    return `${String(inner.address)}:${String(inner.port)} is already in use (another Parley? set PORT or HOST)`
  }
  if (error._tag === "ServeError" && inner?.code === "EACCES") {
    return `not allowed to listen on ${String(inner.address)}:${String(inner.port)} (set PORT above 1023)`
  }
  if (error._tag === "SqlError") return `the database does not answer (${String(error.message)}); check DATABASE_URL`
  const message = typeof error.message === "string" && error.message.length > 0 ? error.message : String(error)
  return message.split("\n")[0]!
}

Layer.launch(Main).pipe(
  Effect.catchCause((cause) =>
    Cause.hasInterruptsOnly(cause) ? Effect.failCause(cause) : Effect.gen(function*() {
      yield* Effect.logDebug("Startup failed", cause)
      yield* Console.error(`Parley could not start: ${startupFailure(cause)}`)
      process.exitCode = 1
    })),
  Effect.provide(layerLogging),
  NodeRuntime.runMain
)
