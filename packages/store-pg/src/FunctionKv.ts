/**
 * `FunctionKv` on PostgreSQL (`function_kv` of migration 0006): one row per
 * (function, key). Expiry times come from Effect's `Clock`, as the memory
 * adapter's do, and an expired row reads as absent; a later `put` of the key
 * replaces it, `clear` or the function's deletion removes it.
 */
import { FunctionKv, KvLimits, type KvListOptions, type KvPutOptions } from "@parley/core"
import { FunctionKvError } from "@parley/core"
import { Clock, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { decodeRows, Nullable } from "./Rows.ts"

const decodeValues = decodeRows("function_kv", Schema.Struct({ value: Schema.String }))
/** A key and its expiry, kept as a Date: the listing answers it in seconds. */
const decodeKeys = decodeRows("function_kv keys", Schema.Struct({ key: Schema.String, expires_at: Nullable(Schema.Date) }))

export const layerFunctionKv = Layer.effect(
  FunctionKv,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms).toISOString())

    return FunctionKv.of({
      get: Effect.fnUntraced(function*(functionId: string, key: string) {
        const at = yield* now
        const rows = yield* decodeValues(
          yield* sql`
          SELECT value FROM function_kv
          WHERE function_id = ${functionId} AND key = ${key} AND (expires_at IS NULL OR expires_at > ${at}::timestamptz)`
        )
        return Option.fromNullishOr(rows[0]?.value)
      }, Effect.orDie),

      put: Effect.fnUntraced(function*(functionId: string, key: string, value: string, options?: KvPutOptions) {
        const ttl = options?.expirationTtl
        const expiresAt = ttl === undefined ? null : new Date((yield* Clock.currentTimeMillis) + ttl * 1000).toISOString()
        yield* sql`
          INSERT INTO function_kv (function_id, key, value, expires_at)
          VALUES (${functionId}, ${key}, ${value}, ${expiresAt})
          ON CONFLICT (function_id, key) DO UPDATE SET value = EXCLUDED.value, expires_at = EXCLUDED.expires_at`
      }, Effect.orDie),

      delete: Effect.fnUntraced(function*(functionId: string, key: string) {
        yield* sql`DELETE FROM function_kv WHERE function_id = ${functionId} AND key = ${key}`
      }, Effect.orDie),

      list: Effect.fnUntraced(function*(functionId: string, options?: KvListOptions) {
        const limit = options?.limit ?? KvLimits.maxListLimit
        if (!Number.isInteger(limit) || limit < 1 || limit > KvLimits.maxListLimit) {
          return yield* new FunctionKvError({ message: `limit must be from 1 to ${KvLimits.maxListLimit}` })
        }
        const prefix = options?.prefix ?? ""
        const at = yield* now
        const rows = yield* sql`
          SELECT key, expires_at FROM function_kv
          WHERE ${
          sql.and([
            sql`function_id = ${functionId}`,
            sql`(expires_at IS NULL OR expires_at > ${at}::timestamptz)`,
            ...(prefix === "" ? [] : [sql`starts_with(key, ${prefix})`]),
            ...(options?.cursor === undefined ? [] : [sql`key > ${options.cursor}`])
          ])
        }
          ORDER BY key LIMIT ${limit + 1}`.pipe(Effect.orDie, Effect.flatMap(decodeKeys))
        const page = rows.slice(0, limit)
        return {
          keys: page.map((row) =>
            row.expires_at === null
              ? { name: row.key }
              : { name: row.key, expiration: Math.floor(row.expires_at.getTime() / 1000) }
          ),
          cursor: rows.length > limit ? page[page.length - 1]!.key : undefined
        }
      }),

      clear: Effect.fnUntraced(function*(functionId: string) {
        yield* sql`DELETE FROM function_kv WHERE function_id = ${functionId}`
      }, Effect.orDie),

      purgeExpired: Effect.fnUntraced(function*(limit: number) {
        const at = yield* now
        const rows = yield* sql`
          DELETE FROM function_kv WHERE (function_id, key) IN (
            SELECT function_id, key FROM function_kv WHERE expires_at <= ${at}::timestamptz LIMIT ${limit}
          ) RETURNING key`
        return rows.length
      }, Effect.orDie)
    })
  })
)
