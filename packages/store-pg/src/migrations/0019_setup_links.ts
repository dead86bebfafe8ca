/** Setup links of customers (decisions 2.13): the token is stored only as its SHA-256; one active link per customer. */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE setup_links (
      id text COLLATE "C" PRIMARY KEY,
      project_id text COLLATE "C" NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      customer_id text COLLATE "C" NOT NULL REFERENCES customers (id) ON DELETE CASCADE,
      token_hash text COLLATE "C" NOT NULL UNIQUE,
      status text NOT NULL CHECK (status IN ('active', 'used', 'expired', 'revoked')),
      msg_setup_status text NOT NULL CHECK (msg_setup_status IN ('pending', 'processing', 'completed', 'failed')),
      error_code text,
      expires_at timestamptz NOT NULL,
      success_redirect_url text,
      failure_redirect_url text,
      allowed_connection_types jsonb NOT NULL,
      theme_config jsonb NOT NULL,
      language text,
      provision_phone_number boolean NOT NULL,
      phone_number_country_isos jsonb NOT NULL,
      upstream_billing_mode text NOT NULL,
      reconnect_phone_number text,
      phone_number_id text,
      used_at timestamptz,
      revoked_at timestamptz,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL
    )`
  yield* sql`CREATE UNIQUE INDEX setup_links_one_active ON setup_links (customer_id) WHERE status = 'active'`
  yield* sql`CREATE INDEX setup_links_customer_created_idx ON setup_links (customer_id, created_at DESC, id DESC)`
})
