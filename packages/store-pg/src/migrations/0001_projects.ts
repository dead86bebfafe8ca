/** Projects (the tenants) and their hashed API keys. */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // Ids are compared byte-wise (COLLATE "C") so list order matches the memory adapter on any database.
  yield* sql`
    CREATE TABLE projects (
      id text COLLATE "C" PRIMARY KEY,
      name text NOT NULL,
      disabled boolean NOT NULL DEFAULT false,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL
    )`
  yield* sql`CREATE INDEX projects_created_idx ON projects (created_at, id)`
  yield* sql`
    CREATE TABLE api_keys (
      id text COLLATE "C" PRIMARY KEY,
      project_id text COLLATE "C" NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      name text NOT NULL,
      key_hash text NOT NULL,
      prefix text NOT NULL,
      created_at timestamptz NOT NULL,
      revoked_at timestamptz
    )`
  yield* sql`CREATE UNIQUE INDEX api_keys_key_hash_key ON api_keys (key_hash)`
  yield* sql`CREATE INDEX api_keys_project_idx ON api_keys (project_id, created_at, id)`
})
