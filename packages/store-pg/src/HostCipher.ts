/**
 * The host's secret cipher as a migration reaches it: the key of `PARLEY_SECRET_KEY`, else the one stored in
 * `host_keys` (created here as the host would on first use, the first offer winning as in `FunctionsRepo.secretKey`).
 * For migrations that seal values written before the host sealed them (0027; 0017 keeps its own copy, as landed).
 */
import { configuredSecretKey, generateSecretKeyMaterial, makeSecretCipher } from "@parley/core"
import { Effect, Redacted, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { decodeRows } from "./Rows.ts"

const decodeHostKeys = decodeRows("host_keys", Schema.Struct({ key: Schema.String }))

export const migrationCipher = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const configured = yield* configuredSecretKey
  const material = configured !== undefined ? Redacted.value(configured) : yield* Effect.gen(function*() {
    const candidate = yield* generateSecretKeyMaterial
    yield* sql`INSERT INTO host_keys (name, key) VALUES ('function_secrets', ${candidate}) ON CONFLICT (name) DO NOTHING`
    const rows = yield* decodeHostKeys(yield* sql`SELECT key FROM host_keys WHERE name = 'function_secrets'`)
    return rows[0]!.key
  })
  return yield* Effect.try({ try: () => makeSecretCipher(material), catch: (error) => error }).pipe(Effect.orDie)
})
