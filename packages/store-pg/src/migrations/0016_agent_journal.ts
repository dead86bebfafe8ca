/** The agent node's journal (decisions 10.6), written with the execution in every checkpoint; null off agent nodes. */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE workflow_executions ADD COLUMN agent jsonb`
})
