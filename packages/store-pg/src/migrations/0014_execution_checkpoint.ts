/**
 * Every checkpoint rewrites its execution's row. Such an update is cheap (HOT:
 * no new index entries, dead versions pruned in the page) only when it changes
 * no indexed column and the page has room. The quiet index of 0011 held
 * `last_event_at` and `lease_until`, which every checkpoint moves: now it holds
 * only what a run never changes (`started_at`, `id`) under the same predicate.
 * The recovery sweep reads the running runs (those in flight, few) and filters
 * their lease and last move on the row. Pages keep room for the next versions.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`DROP INDEX workflow_executions_quiet_idx`
  yield* sql`CREATE INDEX workflow_executions_running_idx ON workflow_executions (started_at, id) WHERE status = 'running'`
  yield* sql`ALTER TABLE workflow_executions SET (fillfactor = 70)`
})
