/**
 * Project events and their definitions, the per-project plan settings that
 * gate them with the monthly emission counts, and the generic outbox of
 * domain events (`domain_events`).
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // One row per project whose plan was set; projects without one get the host's defaults.
  yield* sql`
    CREATE TABLE project_plans (
      project_id text COLLATE "C" PRIMARY KEY REFERENCES projects (id) ON DELETE CASCADE,
      events_enabled boolean NOT NULL,
      event_monthly_allowance bigint NOT NULL,
      event_metered_overage boolean NOT NULL,
      event_retention_days integer NOT NULL,
      updated_at timestamptz NOT NULL
    )`
  // Counted inside each emission's transaction (UPDATE ... RETURNING), so concurrent emissions see distinct counts.
  yield* sql`
    CREATE TABLE event_usage (
      project_id text COLLATE "C" NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      period text COLLATE "C" NOT NULL,
      count bigint NOT NULL,
      PRIMARY KEY (project_id, period)
    )`
  yield* sql`
    CREATE TABLE event_definitions (
      id text COLLATE "C" PRIMARY KEY,
      project_id text COLLATE "C" NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      name text COLLATE "C" NOT NULL,
      description text,
      property_schema jsonb NOT NULL,
      source text NOT NULL,
      archived_at timestamptz,
      last_seen_at timestamptz,
      deletion_requested_at timestamptz,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL
    )`
  yield* sql`CREATE UNIQUE INDEX event_definitions_project_name_key ON event_definitions (project_id, name)`
  yield* sql`
    CREATE INDEX event_definitions_pending_idx ON event_definitions (deletion_requested_at, id)
    WHERE deletion_requested_at IS NOT NULL`
  // Linked to definitions by name (a definition is renamed only while no event has its name).
  yield* sql`
    CREATE TABLE events (
      id text COLLATE "C" PRIMARY KEY,
      project_id text COLLATE "C" NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      name text COLLATE "C" NOT NULL,
      occurred_at timestamptz NOT NULL,
      conversation_id text COLLATE "C",
      properties jsonb NOT NULL,
      created_at timestamptz NOT NULL
    )`
  yield* sql`CREATE INDEX events_project_occurred_idx ON events (project_id, occurred_at DESC, id DESC)`
  yield* sql`CREATE INDEX events_project_name_idx ON events (project_id, name, occurred_at DESC, id DESC)`
  yield* sql`
    CREATE INDEX events_project_conversation_idx ON events (project_id, conversation_id, occurred_at DESC, id DESC)
    WHERE conversation_id IS NOT NULL`
  yield* sql`
    CREATE TABLE domain_events (
      id text COLLATE "C" PRIMARY KEY,
      project_id text COLLATE "C" REFERENCES projects (id) ON DELETE CASCADE,
      type text COLLATE "C" NOT NULL,
      payload jsonb NOT NULL,
      created_at timestamptz NOT NULL
    )`
  yield* sql`CREATE INDEX domain_events_type_idx ON domain_events (type, created_at, id)`
  yield* sql`CREATE INDEX domain_events_created_idx ON domain_events (created_at, id)`
})
