/** Project secrets (decisions 10.5.4): values encrypted by the host, one per (project, name). */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE project_secrets (
      project_id text COLLATE "C" NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      name text COLLATE "C" NOT NULL,
      ciphertext text NOT NULL,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL,
      PRIMARY KEY (project_id, name)
    )`
})
