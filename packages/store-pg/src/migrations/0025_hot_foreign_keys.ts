/**
 * The rows written for every inbound message (its contact, conversation, message, media) and every execution no
 * longer reference `projects` (docs/decisions.md "Inbound resume speed"). Each such foreign key cost a lookup of the
 * project row per inserted row, `FOR KEY SHARE`, all on the one row of the project, whose concurrent share locks
 * PostgreSQL keeps as multixacts. Nothing deletes a project (no API, no repository method), so the
 * `ON DELETE CASCADE` they carried never ran; the project ids these rows carry come from records read in the same
 * work (the number's config, the workflow), and an execution still references its workflow, a message its
 * conversation, a conversation its config. `log_entries` was made without one for the same reason (0023).
 * `domain_events`, `webhook_deliveries` and `workflow_execution_inputs` keep theirs: their ports promise to refuse
 * a row of a missing project (conformance).
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

const TABLES = [
  "msg_contacts",
  "msg_conversations",
  "msg_messages",
  "msg_media",
  "workflow_executions"
] as const

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  for (const table of TABLES) {
    yield* sql.unsafe(`ALTER TABLE ${table} DROP CONSTRAINT ${table}_project_id_fkey`)
  }
})
