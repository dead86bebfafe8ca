import { assert, describe, it, layer } from "@effect/vitest"
import { PgClient } from "@effect/sql-pg"
import { ConfigProvider, Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { DatabaseUrl, layer as layerDatabase } from "../src/Database.ts"
import { emptyDatabase, freshDatabase, layerTestDatabase } from "./pg.ts"

const migrated = SqlClient.SqlClient.use((sql) =>
  sql<{ readonly name: string }>`SELECT name FROM parley_migrations ORDER BY migration_id`
).pipe(Effect.map((rows) => rows.map((r) => r.name)))

const withEnv = (env: Record<string, string>) => ConfigProvider.layer(ConfigProvider.fromEnvRecord(env))

layer(layerTestDatabase, { excludeTestServices: true })("layerTestDatabase", (it) => {
  it.effect("gives a migrated database of its own", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const tables = yield* sql<{ readonly table_name: string }>`
        SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name`
      // The time spans readied at start (`readyCurrentSpans`) are named by date: left out.
      assert.deepStrictEqual(tables.map((t) => t.table_name).filter((name) => !/_p\d{8}$/.test(name)), [
        "api_keys",
        "contact_erasures",
        "customers",
        "domain_events",
        "event_definitions",
        "event_usage",
        "events",
        "function_deployments",
        "function_invocations",
        "function_kv",
        "function_secrets",
        "functions",
        "guardrail_contact_zones",
        "guardrail_marketing_sends",
        "guardrail_opt_outs",
        "guardrail_settings",
        "host_keys",
        "inbox_embeds",
        "log_entries",
        "log_entries_default",
        "msg_broadcast_counts",
        "msg_broadcast_recipients",
        "msg_broadcasts",
        "msg_configs",
        "msg_contacts",
        "msg_conversations",
        "msg_display_name_requests",
        "msg_media",
        "msg_media_uploads",
        "msg_messages",
        "msg_number_health",
        "msg_status_events",
        "msg_template_status_events",
        "msg_templates",
        "msg_upstream_inbox",
        "parley_migrations",
        "project_plans",
        "project_secrets",
        "projects",
        "provider_models",
        "rate_limits",
        "setup_links",
        "sim_objects",
        "sim_outbox",
        "triggers",
        "voice_agents",
        "webhook_buffers",
        "webhook_deliveries",
        "webhook_delivery_attempts",
        "webhooks",
        "workflow_embeds",
        "workflow_execution_inputs",
        "workflow_executions",
        "workflow_references",
        "workflow_revisions",
        "workflow_rollouts",
        "workflow_saves",
        "workflow_step_events",
        "workflow_step_events_default",
        "workflows"
      ])
      const url = yield* DatabaseUrl
      const [db] = yield* sql<{ readonly name: string }>`SELECT current_database() AS name`
      assert.isTrue(db.name.startsWith("parley_test_"))
      assert.strictEqual(new URL(Redacted.value(url)).pathname, `/${db.name}`)
    }))
})

describe("freshDatabase", () => {
  it.live("drops the database when the scope closes", () =>
    Effect.gen(function*() {
      const url = yield* Effect.scoped(freshDatabase)
      const name = new URL(url).pathname.slice(1)
      const admin = new URL(url)
      admin.pathname = "/postgres"
      const rows = yield* SqlClient.SqlClient.use((sql) =>
        sql`SELECT 1 FROM pg_database WHERE datname = ${name}`
      ).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(admin.toString()) })))
      assert.strictEqual(rows.length, 0)
    }))
})

describe("Database.layer", () => {
  it.live("uses DATABASE_URL when set, and migrates it", () =>
    Effect.gen(function*() {
      const url = yield* emptyDatabase
      const { names, used } = yield* Effect.gen(function*() {
        return { names: yield* migrated, used: Redacted.value(yield* DatabaseUrl) }
      }).pipe(Effect.provide(layerDatabase.pipe(Layer.provide(withEnv({ DATABASE_URL: url })))))
      assert.strictEqual(used, url)
      assert.deepStrictEqual(names, ["projects", "workflows", "events", "messaging", "webhooks", "functions", "customers", "media_uploads", "hot_updates", "simulator", "executions", "templates", "project_secrets", "execution_checkpoint", "provider_models", "agent_journal", "secrets_at_rest", "rate_limits", "setup_links", "number_operations", "broadcasts", "inbox_embeds", "log_entries", "contact_erasure", "hot_foreign_keys", "log_search_words", "webhook_headers_sealed", "inbound_senders", "rate_limit_leases", "broadcast_counters", "executions_live_index", "workflow_embeds", "guardrails", "broadcast_held", "workflow_lifecycle", "time_partitions", "broadcast_report_cost", "conversation_idle_sweep", "broadcast_response_guard", "step_events_unchecked", "workflow_references"])
    }))

  it.live("otherwise runs an embedded server in PARLEY_DATA_DIR", () =>
    Effect.gen(function*() {
      const dataDir = yield* Effect.acquireRelease(
        Effect.sync(() => Fs.mkdtempSync(Path.join(Os.tmpdir(), "parley-data-"))),
        (dir) => Effect.sync(() => Fs.rmSync(dir, { recursive: true, force: true }))
      )
      const { names, used } = yield* Effect.gen(function*() {
        return { names: yield* migrated, used: new URL(Redacted.value(yield* DatabaseUrl)) }
      }).pipe(Effect.provide(layerDatabase.pipe(Layer.provide(withEnv({ PARLEY_DATA_DIR: dataDir })))))
      assert.deepStrictEqual(names, ["projects", "workflows", "events", "messaging", "webhooks", "functions", "customers", "media_uploads", "hot_updates", "simulator", "executions", "templates", "project_secrets", "execution_checkpoint", "provider_models", "agent_journal", "secrets_at_rest", "rate_limits", "setup_links", "number_operations", "broadcasts", "inbox_embeds", "log_entries", "contact_erasure", "hot_foreign_keys", "log_search_words", "webhook_headers_sealed", "inbound_senders", "rate_limit_leases", "broadcast_counters", "executions_live_index", "workflow_embeds", "guardrails", "broadcast_held", "workflow_lifecycle", "time_partitions", "broadcast_report_cost", "conversation_idle_sweep", "broadcast_response_guard", "step_events_unchecked", "workflow_references"])
      const stored = JSON.parse(Fs.readFileSync(Path.join(dataDir, "postgres.json"), "utf8")) as { port: number }
      // Through the socket in the data directory (a short temporary path has room for one), else over TCP.
      assert.strictEqual(Number(used.searchParams.get("port") ?? used.port), stored.port)
      assert.strictEqual(used.searchParams.get("host"), Path.join(dataDir, "pg"))
      assert.isTrue(Fs.existsSync(Path.join(dataDir, "pg", "PG_VERSION")))
      assert.isFalse(Fs.existsSync(Path.join(dataDir, "pg", "postmaster.pid")), "stopped with the layer")
    }))
})
