/**
 * Number operations (decisions 2.13, 2.15, 4.8): whether a config's number was provisioned by the service (released
 * when disconnected), display name requests with at most one open per config, and the state of each number's health
 * checks (the cached answer and the backoff).
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE msg_configs ADD COLUMN provisioned boolean NOT NULL DEFAULT false`
  yield* sql`
    CREATE TABLE msg_display_name_requests (
      id text COLLATE "C" PRIMARY KEY,
      project_id text COLLATE "C" NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      msg_config_id text COLLATE "C" NOT NULL REFERENCES msg_configs (id) ON DELETE CASCADE,
      requested_display_name text NOT NULL,
      previous_display_name text NOT NULL,
      status text NOT NULL,
      submitted_at timestamptz NOT NULL,
      reviewed_at timestamptz,
      applied_at timestamptz,
      upstream_error_code integer,
      upstream_error_subcode integer,
      upstream_error_type text,
      upstream_error_message text,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL
    )`
  yield* sql`
    CREATE INDEX msg_display_name_requests_config_idx
      ON msg_display_name_requests (project_id, msg_config_id, created_at DESC, id DESC)`
  // One open request per number (decisions 3.6): the store refuses a second one even between racing hosts.
  yield* sql`
    CREATE UNIQUE INDEX msg_display_name_requests_open_key ON msg_display_name_requests (msg_config_id)
      WHERE status NOT IN ('declined', 'failed', 'applied', 'expired', 'cancelled')`
  yield* sql`
    CREATE TABLE msg_number_health (
      msg_config_id text COLLATE "C" PRIMARY KEY REFERENCES msg_configs (id) ON DELETE CASCADE,
      credentials text NOT NULL,
      report jsonb,
      checked_at timestamptz,
      failures integer NOT NULL,
      held_until timestamptz
    )`
})
