/** Media the proxy uploaded to the network, with the number and business account it went up through. */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE msg_media_uploads (
      network_media_id text COLLATE "C" NOT NULL,
      project_id text COLLATE "C" NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      msg_config_id text COLLATE "C" NOT NULL,
      business_account_id text COLLATE "C" NOT NULL,
      created_at timestamptz NOT NULL,
      PRIMARY KEY (project_id, network_media_id)
    )`
})
