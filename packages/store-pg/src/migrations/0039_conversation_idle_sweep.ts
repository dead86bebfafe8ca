/**
 * A conversation's end after 24 hours of silence is found by a sweep every minute instead of a pg-boss timer per
 * conversation (one job insert, its indexes and WAL, for every conversation opened: an API start for a new contact,
 * each broadcast recipient).
 *
 * `last_active_at` has no index on purpose (0009: every message moves it, and an indexed column would cost each of
 * those updates its HOT path). The sweep reads `idle_from` instead: a past value of `last_active_at`, never later than
 * it, set when the conversation is written first and moved up only by the sweep when it finds the conversation spoke
 * since (about once a day per conversation). Partial on `status = 'active'`, so ended conversations cost nothing.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE msg_conversations ADD COLUMN idle_from timestamptz`
  yield* sql`UPDATE msg_conversations SET idle_from = last_active_at WHERE status = 'active'`
  yield* sql`CREATE INDEX msg_conversations_idle_from_idx ON msg_conversations (idle_from, id) WHERE status = 'active'`
})
