/**
 * Webhook registrations, their delivery log (with every attempt and the
 * exact bytes sent) and the buffers of batched events.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE webhooks (
      id text COLLATE "C" PRIMARY KEY,
      project_id text COLLATE "C" NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      phone_number_id text COLLATE "C",
      url text NOT NULL,
      kind text NOT NULL,
      events jsonb NOT NULL,
      secret_key text NOT NULL,
      headers jsonb NOT NULL,
      active boolean NOT NULL,
      paused_at timestamptz,
      pause_reason text,
      retry_schedule text NOT NULL,
      auto_pause boolean NOT NULL,
      buffer_enabled boolean NOT NULL,
      buffer_window_seconds integer NOT NULL,
      max_buffer_size integer NOT NULL,
      buffer_events jsonb NOT NULL,
      inactivity_minutes integer NOT NULL,
      payload_version text NOT NULL,
      failure_window_from timestamptz,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL
    )`
  // One `upstream` webhook per number.
  yield* sql`CREATE UNIQUE INDEX webhooks_upstream_key ON webhooks (project_id, phone_number_id) WHERE kind = 'upstream'`
  yield* sql`CREATE INDEX webhooks_project_created_idx ON webhooks (project_id, created_at DESC, id DESC)`
  yield* sql`CREATE INDEX webhooks_scope_idx ON webhooks (project_id, phone_number_id, created_at, id) WHERE active`
  // No foreign key to webhooks: the log outlives a deleted webhook (it carries the URL it used).
  yield* sql`
    CREATE TABLE webhook_deliveries (
      id text COLLATE "C" PRIMARY KEY,
      project_id text COLLATE "C" NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      webhook_id text COLLATE "C" NOT NULL,
      webhook_url text NOT NULL,
      event text COLLATE "C" NOT NULL,
      status text NOT NULL,
      response_status integer,
      delivered_at timestamptz,
      failed_at timestamptz,
      last_attempt_at timestamptz,
      next_attempt_at timestamptz,
      attempt_count integer NOT NULL,
      max_attempts integer NOT NULL,
      retry_schedule text NOT NULL,
      error_message text,
      created_at timestamptz NOT NULL,
      msg_config_id text COLLATE "C",
      phone_number_id text COLLATE "C",
      conversation_phone_number text,
      idempotency_key text NOT NULL,
      payload_version text,
      batch_size integer,
      test boolean NOT NULL,
      source_key text COLLATE "C",
      body bytea NOT NULL
    )`
  // One delivery per webhook and source (domain event, buffer): a repeated dispatch adds nothing.
  yield* sql`
    CREATE UNIQUE INDEX webhook_deliveries_source_key ON webhook_deliveries (webhook_id, source_key)
    WHERE source_key IS NOT NULL`
  yield* sql`CREATE INDEX webhook_deliveries_project_created_idx ON webhook_deliveries (project_id, created_at DESC, id DESC)`
  yield* sql`CREATE INDEX webhook_deliveries_created_idx ON webhook_deliveries (created_at)`
  // The sweep looks for pending attempts whose job was lost.
  yield* sql`
    CREATE INDEX webhook_deliveries_stalled_idx ON webhook_deliveries (next_attempt_at, id)
    WHERE status = 'pending' AND NOT test`
  // Auto-pause counts a webhook's finished deliveries over a recent window.
  yield* sql`
    CREATE INDEX webhook_deliveries_finished_idx ON webhook_deliveries (webhook_id, (coalesce(delivered_at, failed_at)))
    WHERE status <> 'pending' AND NOT test`
  yield* sql`
    CREATE TABLE webhook_delivery_attempts (
      delivery_id text COLLATE "C" NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
      attempt integer NOT NULL,
      attempted_at timestamptz NOT NULL,
      response_status integer,
      duration_ms integer NOT NULL,
      error text,
      PRIMARY KEY (delivery_id, attempt)
    )`
  // Items are a jsonb array of JSON texts, so a batch carries each one with its keys in their order.
  yield* sql`
    CREATE TABLE webhook_buffers (
      id text COLLATE "C" PRIMARY KEY,
      project_id text COLLATE "C" NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      webhook_id text COLLATE "C" NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
      conversation_key text COLLATE "C" NOT NULL,
      event text NOT NULL,
      items jsonb NOT NULL,
      payload_version text NOT NULL,
      first_at timestamptz NOT NULL,
      due_at timestamptz NOT NULL,
      msg_config_id text COLLATE "C",
      phone_number_id text COLLATE "C",
      conversation_phone_number text,
      UNIQUE (webhook_id, conversation_key)
    )`
  yield* sql`CREATE INDEX webhook_buffers_due_idx ON webhook_buffers (due_at, id)`
})
