/**
 * An inbound message no longer pays for the broadcast counters of migration 0030 when its conversation carries no
 * broadcast message (issue 30). The insert trigger runs for every inbound message to find the conversation's
 * broadcast messages of the 25 hours before it (the reply may be their response); it found them through
 * `msg_messages_conversation_idx`, visiting every message of the conversation in that span and its row to read
 * `origin`: a conversation with a bot holds dozens a day, and the search cost grew with them.
 *
 * A partial index of the broadcast messages by conversation serves that search alone: for a conversation that never
 * carried a broadcast it is one descent that finds nothing, whatever the conversation's length. It holds only the
 * broadcast messages (one entry per send, in the transaction that records it), so the counters stay exactly what
 * the messages say, as the trigger reads the same rows as before. The trigger's statement is unchanged: its
 * conditions (`origin = 'broadcast' AND direction = 'outbound'`) are the index's, so the planner takes it.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE INDEX msg_messages_broadcast_conversation_idx ON msg_messages (conversation_id, created_at)
    WHERE origin = 'broadcast' AND direction = 'outbound'`
})
