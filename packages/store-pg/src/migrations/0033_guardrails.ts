/**
 * Guardrails (issue 32 §1, §2): opt-outs (one per recipient and scope: a number, or the project when
 * `msg_config_id` is null), the settings of the project and of each number, contacts' own time zones, and the
 * marketing templates let through that frequency caps count (pruned as they age).
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE guardrail_opt_outs (
      id text COLLATE "C" PRIMARY KEY,
      project_id text COLLATE "C" NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      msg_config_id text COLLATE "C" REFERENCES msg_configs (id) ON DELETE CASCADE,
      recipient text COLLATE "C" NOT NULL,
      source text NOT NULL CHECK (source IN ('keyword', 'network', 'api')),
      keyword text,
      created_at timestamptz NOT NULL
    )`
  yield* sql`
    CREATE UNIQUE INDEX guardrail_opt_outs_scope_idx
    ON guardrail_opt_outs (project_id, recipient, (coalesce(msg_config_id, '')))`
  yield* sql`CREATE INDEX guardrail_opt_outs_project_created_idx ON guardrail_opt_outs (project_id, created_at DESC, id DESC)`
  yield* sql`
    CREATE TABLE guardrail_settings (
      project_id text COLLATE "C" NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      msg_config_id text COLLATE "C" REFERENCES msg_configs (id) ON DELETE CASCADE,
      settings jsonb NOT NULL,
      updated_at timestamptz NOT NULL
    )`
  yield* sql`CREATE UNIQUE INDEX guardrail_settings_scope_idx ON guardrail_settings (project_id, (coalesce(msg_config_id, '')))`
  yield* sql`
    CREATE TABLE guardrail_contact_zones (
      project_id text COLLATE "C" NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      recipient text COLLATE "C" NOT NULL,
      time_zone text NOT NULL,
      updated_at timestamptz NOT NULL,
      PRIMARY KEY (project_id, recipient)
    )`
  yield* sql`
    CREATE TABLE guardrail_marketing_sends (
      project_id text COLLATE "C" NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      msg_config_id text COLLATE "C" NOT NULL,
      recipient text COLLATE "C" NOT NULL,
      key text COLLATE "C" NOT NULL,
      sent_at timestamptz NOT NULL,
      PRIMARY KEY (project_id, recipient, msg_config_id, key)
    )`
})
