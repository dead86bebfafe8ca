/**
 * The database's connections as the database counts them, for `/metrics` at scrape time: how many of this database's
 * connections each client (`application_name`: the host's pool, the job queue's) holds, by state. The memory adapter
 * has no database and answers none.
 */
import { Context, Effect, Layer } from "effect"

/** The states PostgreSQL reports (`pg_stat_activity.state`), `other` for anything else. */
export const CONNECTION_STATES = ["active", "idle", "idle in transaction", "idle in transaction (aborted)", "fastpath function call", "disabled", "other"] as const
export type ConnectionState = (typeof CONNECTION_STATES)[number]

export interface ConnectionCount {
  /** The client's `application_name` (`parley`, `parley-jobs`, an embedder's own), `other` when it set none. */
  readonly application: string
  readonly state: ConnectionState
  readonly count: number
}

export class DatabaseStats extends Context.Service<DatabaseStats, {
  readonly connections: Effect.Effect<ReadonlyArray<ConnectionCount>>
}>()("@parley/core/ports/DatabaseStats") {}

export const layerMemoryDatabaseStats: Layer.Layer<DatabaseStats> = Layer.succeed(DatabaseStats, DatabaseStats.of({ connections: Effect.succeed([]) }))
