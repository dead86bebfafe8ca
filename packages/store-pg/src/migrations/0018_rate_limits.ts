/**
 * Shared fixed-window counters (`RateLimits`, decisions 8.1): one row per key and window, so every host on the
 * database counts against one limit. UNLOGGED: a crash may lose the current minute's counts, which only lets that
 * minute admit again; the write-ahead log is not worth it for a counter taken on every public invoke.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE UNLOGGED TABLE rate_limits (
      key text COLLATE "C" NOT NULL,
      window_start timestamptz NOT NULL,
      count integer NOT NULL,
      PRIMARY KEY (key, window_start)
    )`
  // Pruning drops every window before the current one.
  yield* sql`CREATE INDEX rate_limits_window_start ON rate_limits (window_start)`
})
