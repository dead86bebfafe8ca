/** Inbox embeds (decisions 2.17): tokens stored as their sha256 hash, found by it on every inbox request. */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE inbox_embeds (
      id text COLLATE "C" PRIMARY KEY,
      project_id text COLLATE "C" NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      name text NOT NULL,
      scope_type text NOT NULL CHECK (scope_type IN ('project', 'customer', 'phone_number')),
      scope_id text,
      scope_name text,
      assigned_user_id text,
      assigned_user_name text,
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
  yield* sql`CREATE INDEX inbox_embeds_project_created_idx ON inbox_embeds (project_id, created_at DESC, id DESC)`
})
