/**
 * `RateLimits` on PostgreSQL (migrations 0018, 0029): one statement per take or lease, so concurrent hosts never
 * over-admit.
 */
import { type RateLimitLease, RateLimits } from "@parley/core"
import { Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { decodeRows } from "./Rows.ts"

const decodeGrants = decodeRows(Schema.Struct({ count: Schema.Number, granted: Schema.Number }))

export const layerRateLimits = Layer.effect(
  RateLimits,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const lease = Effect.fnUntraced(function*(key: string, windowStart: string, limit: number, wanted: number) {
      // The row lock of ON CONFLICT serializes grants of one window; a full window updates (and returns) nothing.
      // SET reads the count before the update on both sides, so `granted` is what this statement added.
      const rows = yield* sql`
        INSERT INTO rate_limits (key, window_start, count, granted)
        SELECT ${key}, ${windowStart}::timestamptz, LEAST(${wanted}::integer, ${limit}::integer),
          LEAST(${wanted}::integer, ${limit}::integer)
        WHERE ${limit}::integer > 0 AND ${wanted}::integer > 0
        ON CONFLICT (key, window_start) DO UPDATE
          SET count = rate_limits.count + LEAST(${wanted}::integer, ${limit}::integer - rate_limits.count),
            granted = LEAST(${wanted}::integer, ${limit}::integer - rate_limits.count)
          WHERE rate_limits.count < ${limit}::integer
        RETURNING count, granted`.pipe(Effect.flatMap(decodeGrants))
      const row = rows[0]
      if (row === undefined) return { granted: 0, count: limit } satisfies RateLimitLease
      // A window's first grant drops those over (the longest window) a minute older: the table holds about a minute.
      if (row.count === row.granted) {
        yield* sql`DELETE FROM rate_limits WHERE window_start < ${windowStart}::timestamptz - interval '1 minute'`
      }
      return { granted: row.granted, count: row.count } satisfies RateLimitLease
    }, Effect.orDie)
    return RateLimits.of({
      lease,
      take: (key, windowStart, limit) =>
        Effect.map(lease(key, windowStart, limit, 1), (l) => ({ admitted: l.granted === 1, count: l.count }))
    })
  })
)
