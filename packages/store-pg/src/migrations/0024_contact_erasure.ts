/**
 * Contact erasures (decisions 4.8): one record per erasure, queued → running →
 * done with the step reached, so a job that crashed resumes at its step; and
 * the voice agents operators declare for a project (spec "Voice agent", decisions 4.13).
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // `target` (the contact's identifiers) is dropped when the erasure is done; `step` is a step's name.
  yield* sql`
    CREATE TABLE contact_erasures (
      id text COLLATE "C" PRIMARY KEY,
      project_id text COLLATE "C" NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      contact_id text COLLATE "C" NOT NULL,
      status text NOT NULL,
      step text,
      target jsonb,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL,
      finished_at timestamptz
    )`
  // A repeated request while one is unfinished finds it.
  yield* sql`
    CREATE UNIQUE INDEX contact_erasures_unfinished_key ON contact_erasures (project_id, contact_id)
    WHERE status <> 'done'`
  yield* sql`CREATE INDEX contact_erasures_unfinished_idx ON contact_erasures (created_at, id) WHERE status <> 'done'`
  // The erasure steps find the contact's rows through these.
  yield* sql`CREATE INDEX msg_messages_contact_idx ON msg_messages (contact_id)`
  yield* sql`CREATE INDEX workflow_executions_contact_idx ON workflow_executions (contact_id) WHERE contact_id IS NOT NULL`

  yield* sql`
    CREATE TABLE voice_agents (
      id text COLLATE "C" PRIMARY KEY,
      project_id text COLLATE "C" NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      name text COLLATE "C" NOT NULL,
      provider_type text NOT NULL,
      provider_kind text NOT NULL,
      provider_agent_name text NOT NULL,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL,
      UNIQUE (project_id, name)
    )`
})
