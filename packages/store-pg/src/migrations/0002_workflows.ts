/** Workflows (definition as jsonb) and their triggers. */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE workflows (
      id text COLLATE "C" PRIMARY KEY,
      project_id text COLLATE "C" NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      name text NOT NULL,
      slug text NOT NULL,
      description text,
      status text NOT NULL,
      lock_version integer NOT NULL,
      message_debounce_seconds integer,
      agent_default_tools_version integer,
      inbound_message_read_mode text NOT NULL,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL,
      execution_count integer NOT NULL DEFAULT 0,
      last_executed_at timestamptz,
      created_by jsonb NOT NULL,
      definition jsonb NOT NULL,
      -- Target of the triggers' foreign key, so a trigger cannot point into another project.
      CONSTRAINT workflows_project_id_id_key UNIQUE (project_id, id)
    )`
  // Created name first: when both collide, PostgreSQL reports the older index, as the memory adapter does.
  yield* sql`CREATE UNIQUE INDEX workflows_project_name_key ON workflows (project_id, lower(name))`
  yield* sql`CREATE UNIQUE INDEX workflows_project_slug_key ON workflows (project_id, slug)`
  yield* sql`CREATE INDEX workflows_project_created_idx ON workflows (project_id, created_at DESC, id DESC)`
  yield* sql`
    CREATE TABLE triggers (
      id text COLLATE "C" PRIMARY KEY,
      project_id text COLLATE "C" NOT NULL,
      workflow_id text COLLATE "C" NOT NULL,
      trigger_type text NOT NULL,
      active boolean NOT NULL,
      display_name text NOT NULL,
      triggerable jsonb NOT NULL,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL,
      CONSTRAINT triggers_workflow_fkey FOREIGN KEY (project_id, workflow_id)
        REFERENCES workflows (project_id, id) ON DELETE CASCADE
    )`
  yield* sql`CREATE INDEX triggers_workflow_idx ON triggers (project_id, workflow_id, created_at, id)`
  yield* sql`CREATE INDEX triggers_type_idx ON triggers (project_id, trigger_type, created_at, id)`
})
