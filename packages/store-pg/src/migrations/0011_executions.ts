/**
 * Workflow executions (the whole state of each run, replaced at every
 * checkpoint by compare-and-set on `state_version`), the immutable graph
 * revisions they walk, their step events, and the inbound inputs waiting to
 * be routed (debounce buffers and messages queued for a running execution).
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // `wait_due_at` repeats `wait->>'due_at'` as a column: a text-to-timestamptz cast cannot be indexed.
  yield* sql`
    CREATE TABLE workflow_executions (
      id text COLLATE "C" PRIMARY KEY,
      project_id text COLLATE "C" NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      workflow_id text COLLATE "C" NOT NULL,
      workflow_name text NOT NULL,
      revision_id text COLLATE "C" NOT NULL,
      tracking_id text COLLATE "C" NOT NULL,
      status text NOT NULL,
      waiting_reason text,
      trigger_type text NOT NULL,
      observer boolean NOT NULL,
      parent_execution_id text COLLATE "C",
      call_depth integer NOT NULL,
      msg_conversation_id text COLLATE "C",
      msg_config_id text COLLATE "C",
      contact_id text COLLATE "C",
      started_at timestamptz NOT NULL,
      last_event_at timestamptz NOT NULL,
      ended_at timestamptz,
      current_node text,
      execution_context jsonb NOT NULL,
      error_details jsonb,
      resumable_execution_id text COLLATE "C",
      wait jsonb,
      wait_due_at timestamptz,
      pending jsonb,
      handoff jsonb,
      requested_status text,
      step_seq integer NOT NULL,
      state_version integer NOT NULL,
      lease_owner text,
      lease_until timestamptz,
      dedupe_key text COLLATE "C",
      CONSTRAINT workflow_executions_workflow_fkey FOREIGN KEY (project_id, workflow_id)
        REFERENCES workflows (project_id, id) ON DELETE CASCADE
    )`
  // One execution per start (trigger + message or event): a repeated delivery inserts nothing.
  yield* sql`
    CREATE UNIQUE INDEX workflow_executions_dedupe_key ON workflow_executions (dedupe_key) WHERE dedupe_key IS NOT NULL`
  // A workflow's executions newest first; also the cascade from workflows, listLive and deleteByWorkflow.
  yield* sql`
    CREATE INDEX workflow_executions_workflow_idx
    ON workflow_executions (project_id, workflow_id, started_at DESC, id DESC)`
  yield* sql`
    CREATE INDEX workflow_executions_conversation_idx ON workflow_executions (msg_conversation_id, started_at DESC, id DESC)
    WHERE msg_conversation_id IS NOT NULL`
  yield* sql`CREATE INDEX workflow_executions_tracking_idx ON workflow_executions (project_id, tracking_id)`
  // The routing owner of a (number, contact) pair (decisions 10.1): looked up for every inbound batch.
  yield* sql`
    CREATE INDEX workflow_executions_routed_idx ON workflow_executions (msg_config_id, contact_id, started_at DESC, id DESC)
    WHERE NOT observer AND status IN ('running', 'waiting', 'handoff')`
  // Recovery: running executions whose host went quiet, and waits whose timer is due.
  yield* sql`
    CREATE INDEX workflow_executions_quiet_idx ON workflow_executions (last_event_at, lease_until)
    WHERE status = 'running'`
  yield* sql`
    CREATE INDEX workflow_executions_due_idx ON workflow_executions (wait_due_at)
    WHERE wait_due_at IS NOT NULL AND status IN ('running', 'waiting', 'handoff')`
  // Ids are content hashes: put-if-absent.
  yield* sql`
    CREATE TABLE workflow_revisions (
      id text COLLATE "C" PRIMARY KEY,
      project_id text COLLATE "C" NOT NULL,
      workflow_id text COLLATE "C" NOT NULL,
      definition jsonb NOT NULL,
      created_at timestamptz NOT NULL,
      CONSTRAINT workflow_revisions_workflow_fkey FOREIGN KEY (project_id, workflow_id)
        REFERENCES workflows (project_id, id) ON DELETE CASCADE
    )`
  yield* sql`CREATE INDEX workflow_revisions_workflow_idx ON workflow_revisions (project_id, workflow_id)`
  yield* sql`
    CREATE TABLE workflow_step_events (
      id text COLLATE "C" PRIMARY KEY,
      project_id text COLLATE "C" NOT NULL,
      execution_id text COLLATE "C" NOT NULL REFERENCES workflow_executions (id) ON DELETE CASCADE,
      seq integer NOT NULL,
      event_type text COLLATE "C" NOT NULL,
      direction text,
      edge_label text,
      created_at timestamptz NOT NULL,
      payload jsonb NOT NULL,
      step jsonb
    )`
  yield* sql`
    CREATE INDEX workflow_step_events_execution_idx
    ON workflow_step_events (execution_id, created_at DESC, seq DESC, id DESC)`
  // Retention (90 days) prunes by age.
  yield* sql`CREATE INDEX workflow_step_events_created_idx ON workflow_step_events (created_at)`
  // A taken input stays (state 'taken', value dropped): the message id is remembered as seen.
  yield* sql`
    CREATE TABLE workflow_execution_inputs (
      id text COLLATE "C" PRIMARY KEY,
      project_id text COLLATE "C" NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      msg_config_id text COLLATE "C" NOT NULL,
      contact_id text COLLATE "C" NOT NULL,
      conversation_id text COLLATE "C" NOT NULL,
      network_id text,
      value jsonb NOT NULL,
      received_at timestamptz NOT NULL,
      state text NOT NULL
    )`
  // Not partial: the state is a parameter of the lookup, which a generic plan could not match to a predicate.
  yield* sql`
    CREATE INDEX workflow_execution_inputs_pair_idx
    ON workflow_execution_inputs (msg_config_id, contact_id, state, received_at, id)`
  yield* sql`
    CREATE INDEX workflow_execution_inputs_stale_idx ON workflow_execution_inputs (received_at, id)
    WHERE state = 'buffered'`
  yield* sql`CREATE INDEX workflow_execution_inputs_project_idx ON workflow_execution_inputs (project_id)`
})
