/**
 * A database of its own for each test file, in the server `globalSetup.ts`
 * started (or the one `DATABASE_URL` names), dropped when the scope closes.
 *
 *   layer(layerTestDatabase, { excludeTestServices: true })("my suite", (it) => ...)
 *   const url = yield* freshDatabase   // inside a scope, for clients of your own (pg-boss)
 */
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Redacted, type Scope } from "effect"
import { SqlClient } from "effect/sql"
import * as Crypto from "node:crypto"
import { inject } from "vitest"
import { type DatabaseUrl, layerFromUrl, migrate } from "../src/Database.ts"

declare module "vitest" {
  export interface ProvidedContext {
    /** Superuser URL of the test run's PostgreSQL server, set by `globalSetup.ts`. */
    parleyPgAdminUrl: string
  }
}

/** URL of the test server's `postgres` database; a superuser, so it may create databases. */
export const adminUrl: Effect.Effect<string> = Effect.suspend(() => {
  const url = injected() ?? process.env.PARLEY_TEST_ADMIN_URL ?? process.env.DATABASE_URL
  return url !== undefined && url !== ""
    ? Effect.succeed(url)
    : Effect.die(new Error("No test database server: is packages/store-pg/test/globalSetup.ts in vitest's globalSetup?"))
})

const injected = (): string | undefined => {
  try {
    return inject("parleyPgAdminUrl")
  } catch {
    // Outside a vitest worker there is nothing to inject.
    return undefined
  }
}

const withClient = <A, E>(url: string, effect: Effect.Effect<A, E, SqlClient.SqlClient>) =>
  Effect.provide(effect, PgClient.layer({ url: Redacted.make(url), maxConnections: 1 }))

/** A new, empty database (no migrations); its URL. Dropped, connections and all, when the scope closes. */
export const emptyDatabase: Effect.Effect<string, never, Scope.Scope> = Effect.gen(function*() {
  const admin = yield* adminUrl
  const name = `parley_test_${Crypto.randomBytes(8).toString("hex")}`
  const run = (statement: string) => withClient(admin, SqlClient.SqlClient.use((sql) => sql.unsafe(statement)))
  yield* Effect.acquireRelease(
    run(`CREATE DATABASE "${name}"`),
    () => Effect.orDie(run(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`))
  ).pipe(Effect.orDie)
  const url = new URL(admin)
  url.pathname = `/${name}`
  return url.toString()
})

/** A new database with Parley's migrations applied; its URL. Dropped when the scope closes. */
export const freshDatabase: Effect.Effect<string, never, Scope.Scope> = Effect.tap(
  emptyDatabase,
  (url) => withClient(url, migrate).pipe(Effect.orDie)
)

/** PgClient + SqlClient + DatabaseUrl over a fresh migrated database, dropped when the layer is released. */
export const layerTestDatabase: Layer.Layer<PgClient.PgClient | SqlClient.SqlClient | DatabaseUrl> = Layer.unwrap(
  Effect.map(emptyDatabase, (url) => layerFromUrl(url))
).pipe(Layer.orDie)
