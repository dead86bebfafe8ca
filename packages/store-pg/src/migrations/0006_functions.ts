/**
 * Functions with their deployments (each with the code snapshot it
 * deployed), secrets (ciphertext only), the invocation log (kept when its
 * function goes), the `env.KV` store, and the host keys that secrets are
 * encrypted with when no `PARLEY_SECRET_KEY` is set.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE functions (
      id text COLLATE "C" PRIMARY KEY,
      project_id text COLLATE "C" NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      name text NOT NULL,
      slug text NOT NULL,
      description text,
      code text NOT NULL,
      function_type text NOT NULL,
      status text NOT NULL,
      version integer NOT NULL,
      last_deployed_at timestamptz,
      last_deploy_error text,
      runtime_config jsonb NOT NULL,
      created_by_id text NOT NULL,
      public_endpoint boolean NOT NULL,
      invoke_response_mode text NOT NULL,
      lock_version integer NOT NULL,
      deployed_deployment_id text COLLATE "C",
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL
    )`
  yield* sql`CREATE UNIQUE INDEX functions_project_slug_key ON functions (project_id, slug)`
  yield* sql`CREATE INDEX functions_project_created_idx ON functions (project_id, created_at DESC, id DESC)`
  yield* sql`
    CREATE TABLE function_deployments (
      id text COLLATE "C" PRIMARY KEY,
      function_id text COLLATE "C" NOT NULL REFERENCES functions (id) ON DELETE CASCADE,
      project_id text COLLATE "C" NOT NULL,
      version integer NOT NULL,
      status text NOT NULL,
      code_sha256 text NOT NULL,
      code text,
      runtime_config jsonb NOT NULL,
      started_at timestamptz NOT NULL,
      finished_at timestamptz,
      error text
    )`
  yield* sql`CREATE INDEX function_deployments_function_idx ON function_deployments (function_id, started_at DESC, id DESC)`
  yield* sql`
    CREATE INDEX function_deployments_deploying_idx ON function_deployments (started_at, id)
    WHERE status = 'deploying'`
  yield* sql`
    CREATE TABLE function_secrets (
      function_id text COLLATE "C" NOT NULL REFERENCES functions (id) ON DELETE CASCADE,
      name text COLLATE "C" NOT NULL,
      type text NOT NULL,
      ciphertext text NOT NULL,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL,
      PRIMARY KEY (function_id, name)
    )`
  // No reference to functions: the log outlives its function (decisions 2.7), not its project.
  yield* sql`
    CREATE TABLE function_invocations (
      id text COLLATE "C" PRIMARY KEY,
      project_id text COLLATE "C" NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      function_id text COLLATE "C" NOT NULL,
      status_code integer NOT NULL,
      duration_ms integer NOT NULL,
      request_body text,
      response_body text,
      error_message text,
      source text NOT NULL,
      console_logs jsonb NOT NULL,
      created_at timestamptz NOT NULL
    )`
  yield* sql`
    CREATE INDEX function_invocations_function_idx
    ON function_invocations (project_id, function_id, created_at DESC, id DESC)`
  yield* sql`CREATE INDEX function_invocations_created_idx ON function_invocations (created_at)`
  // env.KV: one namespace per function id, no reference (the runtime names the namespace).
  yield* sql`
    CREATE TABLE function_kv (
      function_id text COLLATE "C" NOT NULL,
      key text COLLATE "C" NOT NULL,
      value text NOT NULL,
      expires_at timestamptz,
      PRIMARY KEY (function_id, key)
    )`
  yield* sql`CREATE INDEX function_kv_expires_idx ON function_kv (expires_at) WHERE expires_at IS NOT NULL`
  yield* sql`
    CREATE TABLE host_keys (
      name text COLLATE "C" PRIMARY KEY,
      key text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
})
