/** The service's mirror of the network's message templates (decisions 4.8.1), per project and business account. */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE msg_templates (
      id text COLLATE "C" PRIMARY KEY,
      project_id text COLLATE "C" NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      business_account_id text COLLATE "C" NOT NULL,
      upstream_template_id text COLLATE "C" NOT NULL,
      name text NOT NULL,
      language text NOT NULL,
      status text NOT NULL,
      category text NOT NULL,
      sub_category text,
      parameter_format text NOT NULL,
      components jsonb NOT NULL,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL
    )`
  yield* sql`CREATE INDEX msg_templates_project_created_idx ON msg_templates (project_id, created_at DESC, id DESC)`
  yield* sql`CREATE INDEX msg_templates_account_idx ON msg_templates (project_id, business_account_id)`
})
