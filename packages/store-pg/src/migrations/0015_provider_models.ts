/** Provider models (decisions 2.18): declared by operators, global; the endpoint's key stays in the environment. */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE provider_models (
      id text COLLATE "C" PRIMARY KEY,
      name text COLLATE "C" NOT NULL UNIQUE,
      provider text COLLATE "C" NOT NULL,
      reasoning_model boolean NOT NULL,
      thinking_mode text NOT NULL,
      supports_custom_sampling boolean NOT NULL,
      supported_reasoning_efforts jsonb NOT NULL,
      default_reasoning_effort text,
      supported_prompt_cache_ttls jsonb NOT NULL,
      default_prompt_cache_ttl text,
      api_surface text NOT NULL,
      base_url text NOT NULL,
      upstream_model text NOT NULL,
      api_key_env text,
      created_at timestamptz NOT NULL
    )`
})
