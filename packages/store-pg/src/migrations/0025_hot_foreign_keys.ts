/**
 * The rows written for every inbound message, execution and domain event no longer reference
 * `projects` (docs/decisions.md "Inbound resume speed"). Each such foreign key cost a lookup of the project row per
 * inserted row, `FOR KEY SHARE`: a dozen per inbound resume, all on the one row of the project, whose concurrent
 * share locks PostgreSQL keeps as multixacts. Nothing deletes a project (no API, no repository method), so the
 * `ON DELETE CASCADE` they carried never ran; the project ids these rows carry come from records read in the
 * same work (the number's config, the workflow, the execution), and an execution still references its
 * workflow. `log_entries` was made without one for the same reason (0023). `workflow_execution_inputs` keeps its
 * key: its port promises to refuse an input of a missing project.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

const TABLES = [
  "msg_contacts",
  "msg_conversations",
  "msg_messages",
  "msg_media",
  "domain_events",
  "workflow_executions",
  "webhook_deliveries"
] as const

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  for (const table of TABLES) {
    yield* sql.unsafe(`ALTER TABLE ${table} DROP CONSTRAINT ${table}_project_id_fkey`)
  }
})
