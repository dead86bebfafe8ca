/**
 * The live executions (running, waiting, handoff) by status, waiting reason and last move: `/metrics` counts them at
 * every scrape (`ExecutionsRepo.liveCounts`), which without this index reads the whole table, ended runs included.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE INDEX workflow_executions_live_idx ON workflow_executions (status, waiting_reason, last_event_at)
    WHERE status IN ('running', 'waiting', 'handoff')`
})
