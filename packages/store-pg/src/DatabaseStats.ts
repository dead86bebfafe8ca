/**
 * `DatabaseStats` on PostgreSQL: this database's client connections from `pg_stat_activity`, by client and state.
 * Clients are told apart by `application_name`: the job queue's pool (`parley-jobs`), the host's statements and
 * transactions (`@effect/sql-pg`'s default name, or `parley`), anything else `other`, so the label stays bounded.
 */
import { CONNECTION_STATES, type ConnectionState, DatabaseStats } from "@parley/core"
import { Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { decodeRows } from "./Rows.ts"

const ConnectionRow = Schema.Struct({ application: Schema.String, state: Schema.String, count: Schema.Int })
const toRows = decodeRows(ConnectionRow)

const stateOf = (state: string): ConnectionState =>
  (CONNECTION_STATES as ReadonlyArray<string>).includes(state) ? state as ConnectionState : "other"

export const layerDatabaseStats = Layer.effect(
  DatabaseStats,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const connections = Effect.flatMap(
      sql`
        SELECT CASE
            WHEN application_name = 'parley-jobs' THEN 'parley-jobs'
            WHEN application_name IN ('parley', '@effect/sql-pg') THEN 'parley'
            ELSE 'other' END AS application,
          COALESCE(state, 'other') AS state, count(*)::int AS count
        FROM pg_stat_activity
        WHERE datname = current_database() AND backend_type = 'client backend'
        GROUP BY 1, 2`,
      toRows
    ).pipe(
      Effect.map((rows) => {
        // States outside the list fold into `other`, which may then appear twice for a client: add those up.
        const merged = new Map<string, { application: string; state: ConnectionState; count: number }>()
        for (const row of rows) {
          const state = stateOf(row.state)
          const key = `${row.application}\u0000${state}`
          const found = merged.get(key)
          merged.set(key, { application: row.application, state, count: (found?.count ?? 0) + row.count })
        }
        return [...merged.values()]
      }),
      Effect.orDie
    )
    return DatabaseStats.of({ connections })
  })
)
