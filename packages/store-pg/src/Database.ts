/**
 * Where the PostgreSQL database comes from (`DATABASE_URL`, or an embedded
 * server under `PARLEY_DATA_DIR`), the client over it, and the migrations
 * every client sees applied.
 */
import { PgClient } from "@effect/sql-pg"
import { Config, Context, Effect, Layer, Option, Redacted } from "effect"
import { Migrator } from "effect/sql"
import { resolve } from "node:path"
import * as EmbeddedPostgres from "./EmbeddedPostgres.ts"
import { readyCurrentSpans } from "./TimePartitions.ts"
import migration0001 from "./migrations/0001_projects.ts"
import migration0002 from "./migrations/0002_workflows.ts"
import migration0003 from "./migrations/0003_events.ts"
import migration0004 from "./migrations/0004_messaging.ts"
import migration0005 from "./migrations/0005_webhooks.ts"
import migration0006 from "./migrations/0006_functions.ts"
import migration0007 from "./migrations/0007_customers.ts"
import migration0008 from "./migrations/0008_media_uploads.ts"
import migration0009 from "./migrations/0009_hot_updates.ts"
import migration0010 from "./migrations/0010_simulator.ts"
import migration0011 from "./migrations/0011_executions.ts"
import migration0012 from "./migrations/0012_templates.ts"
import migration0013 from "./migrations/0013_project_secrets.ts"
import migration0014 from "./migrations/0014_execution_checkpoint.ts"
import migration0015 from "./migrations/0015_provider_models.ts"
import migration0016 from "./migrations/0016_agent_journal.ts"
import migration0017 from "./migrations/0017_secrets_at_rest.ts"
import migration0018 from "./migrations/0018_rate_limits.ts"
import migration0019 from "./migrations/0019_setup_links.ts"
import migration0020 from "./migrations/0020_number_operations.ts"
import migration0021 from "./migrations/0021_broadcasts.ts"
import migration0022 from "./migrations/0022_inbox_embeds.ts"
import migration0023 from "./migrations/0023_log_entries.ts"
import migration0024 from "./migrations/0024_contact_erasure.ts"
import migration0025 from "./migrations/0025_hot_foreign_keys.ts"
import migration0026 from "./migrations/0026_log_search_words.ts"
import migration0027 from "./migrations/0027_webhook_headers_sealed.ts"
import migration0028 from "./migrations/0028_inbound_senders.ts"
import migration0029 from "./migrations/0029_rate_limit_leases.ts"
import migration0030 from "./migrations/0030_broadcast_counters.ts"
import migration0031 from "./migrations/0031_executions_live_index.ts"
import migration0032 from "./migrations/0032_workflow_embeds.ts"
import migration0033 from "./migrations/0033_guardrails.ts"
import migration0034 from "./migrations/0034_broadcast_held.ts"
import migration0035 from "./migrations/0035_workflow_lifecycle.ts"
import migration0036 from "./migrations/0036_time_partitions.ts"
import migration0038 from "./migrations/0038_broadcast_report_cost.ts"
import migration0039 from "./migrations/0039_conversation_idle_sweep.ts"
import migration0040 from "./migrations/0040_broadcast_response_guard.ts"
import migration0041 from "./migrations/0041_step_events_unchecked.ts"
import migration0042 from "./migrations/0042_workflow_references.ts"

/** Connection string of the database Parley stores in. */
export class DatabaseUrl extends Context.Service<DatabaseUrl, Redacted.Redacted<string>>()(
  "@parley/store-pg/DatabaseUrl"
) {
  static readonly layer = (url: string | Redacted.Redacted<string>) =>
    Layer.succeed(DatabaseUrl, typeof url === "string" ? Redacted.make(url) : url)

  /** An embedded server with its cluster in `<dataDir>/pg`, running while the layer lives. */
  static readonly layerEmbedded = (options: EmbeddedPostgres.EmbeddedPostgresOptions) =>
    Layer.effect(DatabaseUrl, Effect.map(EmbeddedPostgres.start(options), (server) => server.url))

  /** `DATABASE_URL` when set, otherwise an embedded server in `PARLEY_DATA_DIR` (default `./.parley`). */
  static readonly layerConfig = Layer.unwrap(Effect.gen(function*() {
    const url = yield* Config.option(Config.Redacted("DATABASE_URL"))
    if (Option.isSome(url) && Redacted.value(url.value) !== "") return DatabaseUrl.layer(url.value)
    const dataDir = yield* Config.String("PARLEY_DATA_DIR").pipe(Config.withDefault("./.parley"))
    return DatabaseUrl.layerEmbedded({ dataDir })
  }))

  /**
   * Like `layerConfig`, but an embedded server already run by another process
   * (a running host) is joined instead of refused, and a data directory that
   * holds no database is refused instead of created: for short-lived tools
   * (the CLI), which must find the host's data, never start an empty copy.
   */
  static readonly layerConfigShared = Layer.unwrap(Effect.gen(function*() {
    const url = yield* Config.option(Config.Redacted("DATABASE_URL"))
    if (Option.isSome(url) && Redacted.value(url.value) !== "") return DatabaseUrl.layer(url.value)
    const dataDir = yield* Config.String("PARLEY_DATA_DIR").pipe(Config.withDefault("./.parley"))
    if (!EmbeddedPostgres.exists({ dataDir })) {
      return yield* new EmbeddedPostgres.EmbeddedPostgresError({
        message: `No Parley database in ${resolve(dataDir)}: run this where the host runs, or set PARLEY_DATA_DIR or DATABASE_URL`
      })
    }
    const shared = yield* EmbeddedPostgres.running({ dataDir })
    return shared !== undefined ? DatabaseUrl.layer(shared) : DatabaseUrl.layerEmbedded({ dataDir })
  }))
}

/** Numbered migrations; files are never edited once landed, only added. */
export const migrations = Migrator.fromRecord({
  "0001_projects": migration0001,
  "0002_workflows": migration0002,
  "0003_events": migration0003,
  "0004_messaging": migration0004,
  "0005_webhooks": migration0005,
  "0006_functions": migration0006,
  "0007_customers": migration0007,
  "0008_media_uploads": migration0008,
  "0009_hot_updates": migration0009,
  "0010_simulator": migration0010,
  "0011_executions": migration0011,
  "0012_templates": migration0012,
  "0013_project_secrets": migration0013,
  "0014_execution_checkpoint": migration0014,
  "0015_provider_models": migration0015,
  "0016_agent_journal": migration0016,
  "0017_secrets_at_rest": migration0017,
  "0018_rate_limits": migration0018,
  "0019_setup_links": migration0019,
  "0020_number_operations": migration0020,
  "0021_broadcasts": migration0021,
  "0022_inbox_embeds": migration0022,
  "0023_log_entries": migration0023,
  "0024_contact_erasure": migration0024,
  "0025_hot_foreign_keys": migration0025,
  "0026_log_search_words": migration0026,
  "0027_webhook_headers_sealed": migration0027,
  "0028_inbound_senders": migration0028,
  "0029_rate_limit_leases": migration0029,
  "0030_broadcast_counters": migration0030,
  "0031_executions_live_index": migration0031,
  "0032_workflow_embeds": migration0032,
  "0033_guardrails": migration0033,
  "0034_broadcast_held": migration0034,
  "0035_workflow_lifecycle": migration0035,
  "0036_time_partitions": migration0036,
  "0038_broadcast_report_cost": migration0038,
  "0039_conversation_idle_sweep": migration0039,
  "0040_broadcast_response_guard": migration0040,
  "0041_step_events_unchecked": migration0041,
  "0042_workflow_references": migration0042
})

/** Applies pending migrations (safe to run from several processes at once). */
export const migrate = Migrator.make({})({ loader: migrations, table: "parley_migrations" })

/**
 * Connections of the PgClient pool (opened lazily), for statements outside transactions. The driver's default of 10
 * made concurrent requests and workers queue for a connection (16 made proxied sends slower in paired runs). With the
 * transactions' pool (`TRANSACTION_CONNECTIONS`) and the job queue's, a busy host opens up to 56 of the server's 100.
 */
export const MAX_CONNECTIONS = 24

/** PgClient + SqlClient over `url`, with migrations applied and the current time spans readied. */
export const layerFromUrl = (url: string | Redacted.Redacted<string>) => {
  const redacted = typeof url === "string" ? Redacted.make(url) : url
  return Layer.effectDiscard(Effect.andThen(migrate, readyCurrentSpans)).pipe(
    Layer.provideMerge(PgClient.layer({ url: redacted, maxConnections: MAX_CONNECTIONS })),
    Layer.provideMerge(DatabaseUrl.layer(redacted))
  )
}

/** PgClient + SqlClient over the configured database (see `DatabaseUrl.layerConfig`), migrated. */
export const layer = Layer.unwrap(DatabaseUrl.useSync(layerFromUrl)).pipe(
  Layer.provideMerge(DatabaseUrl.layerConfig)
)

/** `layer`, joining an embedded server a running host already started (see `DatabaseUrl.layerConfigShared`). */
export const layerShared = Layer.unwrap(DatabaseUrl.useSync(layerFromUrl)).pipe(
  Layer.provideMerge(DatabaseUrl.layerConfigShared)
)
