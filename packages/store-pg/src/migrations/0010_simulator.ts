/**
 * The network simulator's own state (`SimulatorStore`), so the simulated
 * network outlives the host: its objects (numbers, contacts and their
 * windows, templates, media, ...) as JSON by kind and key, and the outboxes
 * of what it accepted for contacts, in order. `json`, not `jsonb`: the values
 * are only ever read back whole, and `json` keeps any text a sender put in an
 * envelope (jsonb refuses `\u0000`).
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE sim_objects (
      kind text COLLATE "C" NOT NULL,
      key text COLLATE "C" NOT NULL,
      seq bigint GENERATED ALWAYS AS IDENTITY,
      value json NOT NULL,
      bytes bytea,
      PRIMARY KEY (kind, key)
    )`
  yield* sql`
    CREATE TABLE sim_outbox (
      seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      id text COLLATE "C" NOT NULL UNIQUE,
      phone_number_id text COLLATE "C" NOT NULL,
      record json NOT NULL,
      raw bytea NOT NULL
    )`
})
