/**
 * The searchable log (`LogSearch`, decisions 4.7): one row per API request, upstream webhook event, workflow step
 * event and webhook delivery attempt. Words are searched with PostgreSQL's full-text search over `search_text`
 * (already the entry's lowercased words: the `simple` configuration only splits them), the window and the keyset
 * pages walk (project_id, occurred_at, id), and retention deletes by `occurred_at`. Every API request writes a row,
 * so the table carries only the indexes searches and retention use: no primary key (ids are UUIDv7, unique by
 * construction, and nothing looks an entry up by id alone) and a BRIN index for retention (rows arrive in about
 * time order; a few pages per range instead of a B-tree entry per row). No foreign key to projects: a batch of
 * entries must never fail because one project went away meanwhile; retention removes what is left.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE log_entries (
      id text COLLATE "C" NOT NULL,
      project_id text COLLATE "C" NOT NULL,
      source text NOT NULL,
      occurred_at timestamptz NOT NULL,
      ingested_at timestamptz NOT NULL,
      level text NOT NULL,
      problem boolean NOT NULL,
      message text NOT NULL,
      status text,
      resource_type text,
      resource_id text COLLATE "C",
      http_method text,
      endpoint text,
      api_key_id text COLLATE "C",
      api_key_name text,
      response_status integer,
      response_time_ms integer,
      event_type text,
      field text,
      event text,
      message_type text,
      phone_number_id text COLLATE "C",
      display_phone_number text,
      flow_name text,
      flow_id text COLLATE "C",
      flow_execution_id text COLLATE "C",
      flow_event_id text COLLATE "C",
      step_identifier text,
      step_type text,
      webhook_id text COLLATE "C",
      webhook_url text,
      error_class text,
      error_message text,
      attributes jsonb NOT NULL,
      payload jsonb,
      search_text text NOT NULL,
      search tsvector GENERATED ALWAYS AS (to_tsvector('simple', search_text)) STORED
    )`
  // Pages walk (occurred_at, id) newest first; the id is left out of the index (a smaller entry for every request
  // written): entries of one instant are few, sorted after the index scan.
  yield* sql`CREATE INDEX log_entries_project_time ON log_entries (project_id, occurred_at DESC)`
  yield* sql`CREATE INDEX log_entries_search ON log_entries USING gin (search)`
  // Retention deletes the oldest entries of every project.
  yield* sql`CREATE INDEX log_entries_occurred_at ON log_entries USING brin (occurred_at)`
})
