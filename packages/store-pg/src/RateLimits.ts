/** `RateLimits` on PostgreSQL (migration 0018): one statement per take, so concurrent hosts never over-admit. */
import { RateLimits } from "@parley/core"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"

export const layerRateLimits = Layer.effect(
  RateLimits,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return RateLimits.of({
      take: Effect.fnUntraced(function*(key: string, windowStart: string, limit: number) {
        // The row lock of ON CONFLICT serializes takes of one window; a full window updates (and returns) nothing.
        const rows = yield* sql<{ readonly count: number }>`
          INSERT INTO rate_limits (key, window_start, count)
          SELECT ${key}, ${windowStart}::timestamptz, 1 WHERE ${limit}::integer > 0
          ON CONFLICT (key, window_start) DO UPDATE SET count = rate_limits.count + 1
            WHERE rate_limits.count < ${limit}::integer
          RETURNING count`
        const row = rows[0]
        if (row === undefined) return { admitted: false, count: limit }
        // A window's first take drops those over (the longest window) a minute older: the table holds about a minute.
        if (row.count === 1) {
          yield* sql`DELETE FROM rate_limits WHERE window_start < ${windowStart}::timestamptz - interval '1 minute'`
        }
        return { admitted: true, count: row.count }
      }, Effect.orDie)
    })
  })
)
