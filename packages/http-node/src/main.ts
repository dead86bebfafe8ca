/**
 * `npm start`: the standalone host. Postgres from `DATABASE_URL` or an
 * embedded server in `PARLEY_DATA_DIR`, the job queue on it, every route on
 * `HOST:PORT`. First start creates a default project and prints its key once.
 * SIGINT/SIGTERM close the server, let running jobs finish, stop the database.
 */
import { NodeHttpServer, NodeRuntime } from "@effect/platform-node"
import { Ids, MessageConfigs, Projects } from "@parley/core"
import { Console, Effect, Layer, Option, Redacted } from "effect"
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
      onSome: (pnid) => [`  Network        simulator; number ${pnid} connected (try POST ${publicUrl}/sandbox/inbound)`]
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
    yield* Console.log(banner(config.publicUrl, boot.createdSecret, Option.map(simulated, (c) => c.phone_number_id)))
  }))
  return Bootstrap.pipe(
    Layer.provideMerge(Host.serve({ publicUrl: config.publicUrl })),
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

Layer.launch(Main).pipe(Effect.provide(layerLogging), NodeRuntime.runMain)
