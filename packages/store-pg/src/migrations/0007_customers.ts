/** Customers of a project; message configs point at them. */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE customers (
      id text COLLATE "C" PRIMARY KEY,
      project_id text COLLATE "C" NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      name text NOT NULL,
      external_customer_id text,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL
    )`
  yield* sql`
    CREATE UNIQUE INDEX customers_project_external_key ON customers (project_id, external_customer_id)
    WHERE external_customer_id IS NOT NULL`
  yield* sql`CREATE INDEX customers_project_created_idx ON customers (project_id, created_at DESC, id DESC)`
})
