/**
 * The 24-hour window of a message acknowledged but not recorded yet (decisions "One hop from the network to the
 * run"): ingestion records who wrote the messages of an upstream POST beside its bytes (`senders`, cleared when the
 * POST is processed), so a send asks the store instead of parsing the bodies of unprocessed POSTs.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE msg_upstream_inbox ADD COLUMN senders text[] NOT NULL DEFAULT '{}'`
  yield* sql`CREATE INDEX msg_upstream_inbox_unprocessed_senders ON msg_upstream_inbox USING gin (senders) WHERE processed_at IS NULL`
})
