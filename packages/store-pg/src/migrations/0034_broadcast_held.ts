/** Broadcast recipients held for their quiet hours (guardrails, issue 32 §2): counted as `held` while pending. */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE msg_broadcast_recipients ADD COLUMN held_until timestamptz`
})
