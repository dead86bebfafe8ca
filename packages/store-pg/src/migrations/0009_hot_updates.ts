/**
 * Conversations and messages are updated many times after they are written
 * (every message counts on its conversation; every status report moves its
 * message). Such an update is cheap (HOT: no index entry, dead versions
 * pruned in the page) only when it changes no indexed column and the page has
 * room. So: no index on `last_active_at` (only the periodic backstop sweep of
 * idle conversations read it; it now reads the active ones), and pages keep
 * room for the next versions of their rows.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`DROP INDEX msg_conversations_idle_idx`
  yield* sql`ALTER TABLE msg_conversations SET (fillfactor = 50)`
  yield* sql`ALTER TABLE msg_messages SET (fillfactor = 80)`
})
