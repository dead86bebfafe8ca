/** Workflow viewer embeds (issue 31 §3): tokens stored as their sha256 hash, found by it on every viewer request. */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE workflow_embeds (
      id text COLLATE "C" PRIMARY KEY,
      project_id text COLLATE "C" NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      name text NOT NULL,
      scope_type text NOT NULL CHECK (scope_type IN ('project', 'workflow')),
      scope_id text,
      scope_name text,
      access text NOT NULL CHECK (access IN ('view', 'edit')),
      status text NOT NULL CHECK (status IN ('active', 'revoked')),
      allowed_origins jsonb NOT NULL,
      default_mode text NOT NULL,
      language text NOT NULL,
      expires_at timestamptz,
      last_used_at timestamptz,
      token_hash text COLLATE "C" NOT NULL UNIQUE,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL
    )`
  yield* sql`CREATE INDEX workflow_embeds_project_created_idx ON workflow_embeds (project_id, created_at DESC, id DESC)`
})
