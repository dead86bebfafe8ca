/** Broadcasts and their recipients (decisions 2.14, 3.4, 4.9). */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE msg_broadcasts (
      id text COLLATE "C" PRIMARY KEY,
      project_id text COLLATE "C" NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      name text NOT NULL,
      status text NOT NULL,
      msg_config_id text COLLATE "C" NOT NULL,
      msg_template_id text COLLATE "C" NOT NULL,
      template jsonb NOT NULL,
      scheduled_at timestamptz,
      started_at timestamptz,
      completed_at timestamptz,
      stopped_at timestamptz,
      stop_reason text,
      lease_owner text,
      lease_until timestamptz,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL
    )`
  yield* sql`CREATE INDEX msg_broadcasts_project_idx ON msg_broadcasts (project_id, created_at DESC, id DESC)`
  // The sender's work after a restart and the scheduler's: few rows at any time.
  yield* sql`CREATE INDEX msg_broadcasts_runnable_idx ON msg_broadcasts (created_at, id) WHERE status IN ('scheduled', 'sending')`
  yield* sql`CREATE INDEX msg_broadcasts_config_idx ON msg_broadcasts (msg_config_id)`
  yield* sql`
    CREATE TABLE msg_broadcast_recipients (
      id text COLLATE "C" PRIMARY KEY,
      broadcast_id text COLLATE "C" NOT NULL REFERENCES msg_broadcasts (id) ON DELETE CASCADE,
      project_id text COLLATE "C" NOT NULL,
      phone_number text COLLATE "C" NOT NULL,
      contact_id text COLLATE "C",
      status text NOT NULL,
      message_id text COLLATE "C" NOT NULL,
      attempts integer NOT NULL DEFAULT 0,
      retry_at timestamptz,
      attempted_at timestamptz,
      template_parameters jsonb,
      sent_at timestamptz,
      failed_at timestamptz,
      error_message text,
      error_details jsonb,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL
    )`
  // Duplicates within a broadcast meet here (decisions 4.9: the same normalised phone number).
  yield* sql`CREATE UNIQUE INDEX msg_broadcast_recipients_phone_key ON msg_broadcast_recipients (broadcast_id, phone_number)`
  yield* sql`CREATE INDEX msg_broadcast_recipients_list_idx ON msg_broadcast_recipients (broadcast_id, created_at DESC, id DESC)`
  // The sender's next batch: the pending ones only, so the index shrinks as the broadcast goes out.
  yield* sql`CREATE INDEX msg_broadcast_recipients_pending_idx ON msg_broadcast_recipients (broadcast_id, created_at, id) WHERE status = 'pending'`
  yield* sql`CREATE INDEX msg_broadcast_recipients_phone_idx ON msg_broadcast_recipients (project_id, phone_number)`
})
