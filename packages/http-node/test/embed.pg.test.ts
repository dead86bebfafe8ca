/**
 * The embedding entry point over PostgreSQL given by the application: a `DATABASE_URL` of its own, or its own
 * `@effect/sql-pg` client layer (Parley migrates its tables there and runs its job queue beside it).
 */
import { PgClient } from "@effect/sql-pg"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { emptyDatabase } from "../../store-pg/test/pg.ts"
import { makeParley, type ParleyStorage } from "../src/index.ts"

const KEY = "pk_embed_pg_0123456789abcdef"

const roundTrip = (storage: ParleyStorage) =>
  Effect.promise(async () => {
    const parley = await makeParley({ publicUrl: "http://app.example", basePath: "/p", storage, apiKey: KEY, logger: "none" })
    try {
      const headers = { "x-api-key": KEY, "content-type": "application/json" }
      const created = await parley.fetch(new Request("http://app.example/p/platform/v1/workflows", {
        method: "POST",
        headers,
        body: JSON.stringify({ workflow: { name: "Stored" } })
      }))
      assert.strictEqual(created.status, 201)
      const listed = await (await parley.fetch(new Request("http://app.example/p/platform/v1/workflows", { headers }))).json()
      return (listed as { data: Array<{ name: string }> }).data.map((w) => w.name)
    } finally {
      await parley.dispose()
    }
  })

const migrations = (url: string) =>
  SqlClient.SqlClient.use((sql) => sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM parley_migrations`).pipe(
    Effect.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 })),
    Effect.map((rows) => rows[0]!.n)
  )

describe("makeParley over the application's PostgreSQL", () => {
  it.live("stores through a DATABASE_URL, and through the application's own client layer", () =>
    Effect.scoped(Effect.gen(function*() {
      const byUrl = yield* emptyDatabase
      assert.deepStrictEqual(yield* roundTrip({ databaseUrl: byUrl }), ["Stored"])
      assert.isAbove(yield* migrations(byUrl), 0)

      const byClient = yield* emptyDatabase
      const url = new URL(byClient)
      // The parts, not a URL: the job queue's address is put together from the client's configuration.
      const client = PgClient.layer({
        // The test server listens on a Unix socket (`?host=<directory>`) where it can.
        host: url.searchParams.get("host") ?? url.hostname,
        port: Number(url.searchParams.get("port") ?? (url.port || 5432)),
        database: url.pathname.slice(1),
        username: decodeURIComponent(url.username),
        password: Redacted.make(decodeURIComponent(url.password))
      })
      assert.deepStrictEqual(yield* roundTrip({ pgClient: client }), ["Stored"])
      assert.isAbove(yield* migrations(byClient), 0)
    })), 120_000)
})
