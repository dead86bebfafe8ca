/**
 * Messaging: message configs (connected numbers), contacts, conversations,
 * messages with the status reports kept to deduplicate and replay them, the
 * media copies Parley keeps, the raw upstream webhooks it acknowledged, and
 * template status reports.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // Credentials are write-only columns: no read path renders them (see tenancy/MessageConfig.ts).
  yield* sql`
    CREATE TABLE msg_configs (
      id text COLLATE "C" PRIMARY KEY,
      project_id text COLLATE "C" NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      name text NOT NULL,
      display_name text NOT NULL,
      kind text NOT NULL,
      phone_number_id text COLLATE "C" NOT NULL,
      business_account_id text COLLATE "C" NOT NULL,
      display_phone_number text NOT NULL,
      display_phone_number_normalized text NOT NULL,
      customer_id text COLLATE "C",
      inbound_processing_enabled boolean NOT NULL,
      access_token text NOT NULL,
      webhook_verify_token text,
      app_secret text,
      webhook_destination_url text,
      facts jsonb NOT NULL,
      refreshed_at timestamptz,
      webhook_verified_at timestamptz,
      deleted_at timestamptz,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL
    )`
  // A number belongs to one live config across the host; disconnected ones keep their history.
  yield* sql`CREATE UNIQUE INDEX msg_configs_live_phone_number_key ON msg_configs (phone_number_id) WHERE deleted_at IS NULL`
  yield* sql`CREATE INDEX msg_configs_project_idx ON msg_configs (project_id, created_at DESC, id DESC) WHERE deleted_at IS NULL`
  yield* sql`CREATE INDEX msg_configs_account_idx ON msg_configs (business_account_id) WHERE deleted_at IS NULL`

  yield* sql`
    CREATE TABLE msg_contacts (
      id text COLLATE "C" PRIMARY KEY,
      project_id text COLLATE "C" NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      wa_id text COLLATE "C",
      business_scoped_user_id text COLLATE "C",
      parent_business_scoped_user_id text COLLATE "C",
      username text,
      profile_name text,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL
    )`
  yield* sql`CREATE UNIQUE INDEX msg_contacts_wa_id_key ON msg_contacts (project_id, wa_id) WHERE wa_id IS NOT NULL`
  yield* sql`
    CREATE UNIQUE INDEX msg_contacts_user_id_key ON msg_contacts (project_id, business_scoped_user_id)
    WHERE business_scoped_user_id IS NOT NULL`
  yield* sql`
    CREATE INDEX msg_contacts_parent_idx ON msg_contacts (project_id, parent_business_scoped_user_id)
    WHERE parent_business_scoped_user_id IS NOT NULL`
  yield* sql`CREATE INDEX msg_contacts_created_idx ON msg_contacts (project_id, created_at DESC, id DESC)`

  yield* sql`
    CREATE TABLE msg_conversations (
      id text COLLATE "C" PRIMARY KEY,
      project_id text COLLATE "C" NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      msg_config_id text COLLATE "C" NOT NULL REFERENCES msg_configs (id) ON DELETE CASCADE,
      phone_number_id text COLLATE "C" NOT NULL,
      contact_id text COLLATE "C" NOT NULL REFERENCES msg_contacts (id) ON DELETE CASCADE,
      phone_number text COLLATE "C",
      business_scoped_user_id text COLLATE "C",
      parent_business_scoped_user_id text COLLATE "C",
      username text,
      contact_name text,
      status text NOT NULL,
      end_reason text,
      ended_at timestamptz,
      last_active_at timestamptz NOT NULL,
      metadata jsonb,
      assigned_user_id text COLLATE "C",
      messages_count integer NOT NULL,
      last_message_id text,
      last_message_type text,
      last_message_timestamp text,
      last_message_text text,
      last_inbound_at timestamptz,
      last_outbound_at timestamptz,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL
    )`
  // One active conversation per (number, contact) (decisions 3.5).
  yield* sql`
    CREATE UNIQUE INDEX msg_conversations_active_key ON msg_conversations (msg_config_id, contact_id)
    WHERE status = 'active'`
  yield* sql`CREATE INDEX msg_conversations_project_idx ON msg_conversations (project_id, created_at DESC, id DESC)`
  yield* sql`CREATE INDEX msg_conversations_config_idx ON msg_conversations (msg_config_id, created_at DESC, id DESC)`
  yield* sql`CREATE INDEX msg_conversations_contact_idx ON msg_conversations (contact_id)`
  yield* sql`CREATE INDEX msg_conversations_idle_idx ON msg_conversations (last_active_at, id) WHERE status = 'active'`

  yield* sql`
    CREATE TABLE msg_messages (
      id text COLLATE "C" PRIMARY KEY,
      project_id text COLLATE "C" NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      msg_config_id text COLLATE "C" NOT NULL,
      phone_number_id text COLLATE "C" NOT NULL,
      conversation_id text COLLATE "C" NOT NULL REFERENCES msg_conversations (id) ON DELETE CASCADE,
      contact_id text COLLATE "C" NOT NULL,
      network_id text COLLATE "C",
      direction text NOT NULL,
      type text NOT NULL,
      timestamp text NOT NULL,
      fields jsonb NOT NULL,
      status text NOT NULL,
      processing_status text NOT NULL,
      origin text,
      has_media boolean NOT NULL,
      content text,
      transcript text,
      media jsonb,
      message_type_data jsonb,
      statuses jsonb NOT NULL,
      ext_data jsonb NOT NULL,
      contact_name text,
      phone_number text COLLATE "C",
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL
    )`
  // Duplicate deliveries of one network message meet here.
  yield* sql`
    CREATE UNIQUE INDEX msg_messages_network_id_key ON msg_messages (phone_number_id, network_id)
    WHERE network_id IS NOT NULL`
  yield* sql`CREATE INDEX msg_messages_project_idx ON msg_messages (project_id, created_at DESC, id DESC)`
  yield* sql`CREATE INDEX msg_messages_config_idx ON msg_messages (msg_config_id, created_at DESC, id DESC)`
  yield* sql`CREATE INDEX msg_messages_conversation_idx ON msg_messages (conversation_id, created_at DESC, id DESC)`

  // Every status report once per (number, id, status, timestamp); `seq` keeps arrival order for replays.
  yield* sql`
    CREATE TABLE msg_status_events (
      seq bigserial,
      phone_number_id text COLLATE "C" NOT NULL,
      network_id text COLLATE "C" NOT NULL,
      status text COLLATE "C" NOT NULL,
      timestamp text COLLATE "C" NOT NULL,
      raw jsonb NOT NULL,
      received_at timestamptz NOT NULL,
      PRIMARY KEY (phone_number_id, network_id, status, timestamp)
    )`
  yield* sql`CREATE INDEX msg_status_events_received_idx ON msg_status_events (received_at)`

  yield* sql`
    CREATE TABLE msg_media (
      id text COLLATE "C" PRIMARY KEY,
      project_id text COLLATE "C" NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      msg_config_id text COLLATE "C" NOT NULL,
      network_media_id text,
      filename text NOT NULL,
      content_type text NOT NULL,
      byte_size bigint NOT NULL,
      sha256 text NOT NULL,
      bytes bytea NOT NULL,
      created_at timestamptz NOT NULL
    )`

  // Raw upstream POSTs, acknowledged once stored; processed by the job queue.
  yield* sql`
    CREATE TABLE msg_upstream_inbox (
      id text COLLATE "C" PRIMARY KEY,
      msg_config_id text COLLATE "C",
      body bytea NOT NULL,
      signature text NOT NULL,
      received_at timestamptz NOT NULL,
      fanned_out_at timestamptz,
      processed_at timestamptz
    )`
  yield* sql`
    CREATE INDEX msg_upstream_inbox_pending_idx ON msg_upstream_inbox (received_at, id) WHERE processed_at IS NULL`
  yield* sql`
    CREATE INDEX msg_upstream_inbox_processed_idx ON msg_upstream_inbox (processed_at) WHERE processed_at IS NOT NULL`

  yield* sql`
    CREATE TABLE msg_template_status_events (
      id text COLLATE "C" PRIMARY KEY,
      business_account_id text COLLATE "C" NOT NULL,
      template_id text NOT NULL,
      template_name text NOT NULL,
      language text NOT NULL,
      event text NOT NULL,
      reason text,
      category text,
      received_at timestamptz NOT NULL
    )`
  yield* sql`
    CREATE INDEX msg_template_status_events_account_idx ON msg_template_status_events (business_account_id, received_at, id)`
})
