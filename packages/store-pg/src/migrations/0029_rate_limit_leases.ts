/**
 * `rate_limits.granted`: the takes the row's last write granted. A host leases a share of a window at once
 * (`RateLimits.lease`) and the statement grants `min(wanted, limit - count)`: RETURNING sees only the new count, so
 * the grant is written beside it. Adding a column with a constant default rewrites nothing.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE rate_limits ADD COLUMN granted integer NOT NULL DEFAULT 0`
})
