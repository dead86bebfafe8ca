/**
 * `MessageConfigsRepo` on PostgreSQL (migration 0004): connected numbers, their
 * credentials stored as given (`access_token` and `app_secret` encrypted by
 * core's `SecretsAtRest`, 0017) and handed out `Redacted`, and a NOTIFY per
 * committed change for the caches of every process.
 */
import {
  type ListWindow,
  type MessageConfigFilter,
  type MessageConfigRecord,
  MessageConfigKind,
  MessageConfigsRepo,
  type NetworkFacts
} from "@parley/core"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Option, Redacted, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { changeSignals, decodeFirst, decodeRows, IsoFromDate, jsonb, JsonObject, mapUnique, Nullable } from "./Rows.ts"
import { listWindow } from "./MessagingRows.ts"

const reveal = (value: Redacted.Redacted<string> | null): string | null => value === null ? null : Redacted.value(value)

/** A credential column: handed out `Redacted`, so it never reaches a log. */
const Secret = Schema.RedactedFromValue(Schema.String)

/** A row of `msg_configs`: the stored number, its credentials `Redacted`, times as ISO text. */
const ConfigRow = Schema.Struct({
  id: Schema.String,
  project_id: Schema.String,
  name: Schema.String,
  display_name: Schema.String,
  kind: MessageConfigKind,
  phone_number_id: Schema.String,
  business_account_id: Schema.String,
  display_phone_number: Schema.String,
  display_phone_number_normalized: Schema.String,
  customer_id: Schema.NullOr(Schema.String),
  inbound_processing_enabled: Schema.Boolean,
  access_token: Secret,
  webhook_verify_token: Nullable(Secret),
  app_secret: Nullable(Secret),
  webhook_destination_url: Nullable(Secret),
  facts: JsonObject<NetworkFacts>(),
  refreshed_at: Nullable(IsoFromDate),
  webhook_verified_at: Nullable(IsoFromDate),
  provisioned: Schema.Boolean,
  deleted_at: Nullable(IsoFromDate),
  created_at: IsoFromDate,
  updated_at: IsoFromDate
})
const toConfigs: (rows: ReadonlyArray<unknown>) => Effect.Effect<ReadonlyArray<MessageConfigRecord>> = decodeRows(
  "msg_configs",
  ConfigRow
)
const firstConfig: (rows: ReadonlyArray<unknown>) => Effect.Effect<Option.Option<MessageConfigRecord>> = decodeFirst(
  "msg_configs",
  ConfigRow
)

const configDuplicates = mapUnique({ msg_configs_live_phone_number_key: "phone_number_id" })

/** NOTIFYs of committed config changes, for the caches of every process sharing the database. */
const CONFIG_CHANNEL = "parley_msg_configs"

export const layerMessageConfigsRepo = Layer.effect(
  MessageConfigsRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const pg = yield* PgClient.PgClient
    // After the write: inside a transaction the NOTIFY is delivered at its commit, outside it after the write's.
    const signal = <A>(result: Option.Option<A>): Effect.Effect<Option.Option<A>, SqlError> =>
      Option.isSome(result) ? Effect.as(sql`SELECT pg_notify(${CONFIG_CHANNEL}, '')`, result) : Effect.succeed(result)
    return MessageConfigsRepo.of({
      insert: Effect.fnUntraced(function*(c: MessageConfigRecord) {
        yield* sql`
          INSERT INTO msg_configs (id, project_id, name, display_name, kind, phone_number_id, business_account_id,
            display_phone_number, display_phone_number_normalized, customer_id, inbound_processing_enabled, access_token,
            webhook_verify_token, app_secret, webhook_destination_url, facts, refreshed_at, webhook_verified_at,
            provisioned, deleted_at, created_at, updated_at)
          VALUES (${c.id}, ${c.project_id}, ${c.name}, ${c.display_name}, ${c.kind}, ${c.phone_number_id},
            ${c.business_account_id}, ${c.display_phone_number}, ${c.display_phone_number_normalized}, ${c.customer_id},
            ${c.inbound_processing_enabled}, ${Redacted.value(c.access_token)}, ${reveal(c.webhook_verify_token)},
            ${reveal(c.app_secret)}, ${reveal(c.webhook_destination_url)}, ${jsonb(c.facts)}, ${c.refreshed_at},
            ${c.webhook_verified_at}, ${c.provisioned}, ${c.deleted_at}, ${c.created_at}, ${c.updated_at})`
        yield* signal(Option.some(c))
      }, Effect.catchTag("SqlError", configDuplicates)),

      findById: Effect.fnUntraced(function*(projectId: string, id: string) {
        const rows = yield* sql`
          SELECT * FROM msg_configs WHERE project_id = ${projectId} AND id = ${id} AND deleted_at IS NULL`
        return yield* firstConfig(rows)
      }, Effect.orDie),

      findLiveById: Effect.fnUntraced(function*(id: string) {
        const rows = yield* sql`SELECT * FROM msg_configs WHERE id = ${id} AND deleted_at IS NULL`
        return yield* firstConfig(rows)
      }, Effect.orDie),

      findByPhoneNumberId: Effect.fnUntraced(function*(phoneNumberId: string) {
        const rows = yield* sql`
          SELECT * FROM msg_configs WHERE phone_number_id = ${phoneNumberId} AND deleted_at IS NULL`
        return yield* firstConfig(rows)
      }, Effect.orDie),

      listByBusinessAccount: Effect.fnUntraced(function*(businessAccountId: string) {
        const rows = yield* sql`
          SELECT * FROM msg_configs WHERE business_account_id = ${businessAccountId} AND deleted_at IS NULL
          ORDER BY created_at, id`
        return yield* toConfigs(rows)
      }, Effect.orDie),

      list: Effect.fnUntraced(
        function*(projectId: string, filter: MessageConfigFilter, window: ListWindow) {
          const where = sql.and([
            sql`project_id = ${projectId}`,
            sql`deleted_at IS NULL`,
            ...(filter.customer_id !== undefined ? [sql`customer_id = ${filter.customer_id}`] : []),
            ...(filter.kind !== undefined ? [sql`kind = ${filter.kind}`] : [])
          ])
          return yield* listWindow(sql, "msg_configs", where, window, toConfigs, Number.MAX_SAFE_INTEGER)
        },
        Effect.orDie
      ),

      update: Effect.fnUntraced(function*(c: MessageConfigRecord) {
        const rows = yield* sql`
          UPDATE msg_configs SET
            name = ${c.name}, display_name = ${c.display_name}, kind = ${c.kind}, phone_number_id = ${c.phone_number_id},
            business_account_id = ${c.business_account_id}, display_phone_number = ${c.display_phone_number},
            display_phone_number_normalized = ${c.display_phone_number_normalized}, customer_id = ${c.customer_id},
            inbound_processing_enabled = ${c.inbound_processing_enabled}, access_token = ${Redacted.value(c.access_token)},
            webhook_verify_token = ${reveal(c.webhook_verify_token)}, app_secret = ${reveal(c.app_secret)},
            webhook_destination_url = ${reveal(c.webhook_destination_url)}, facts = ${jsonb(c.facts)},
            refreshed_at = ${c.refreshed_at}, webhook_verified_at = ${c.webhook_verified_at}, updated_at = ${c.updated_at}
          WHERE project_id = ${c.project_id} AND id = ${c.id} AND deleted_at IS NULL
          RETURNING *`
        return yield* signal(yield* firstConfig(rows))
      }, Effect.catchTag("SqlError", configDuplicates)),

      listIdleProvisioned: Effect.fnUntraced(function*(before: string, limit: number) {
        const rows = yield* sql`
          SELECT * FROM msg_configs c
          WHERE c.provisioned AND c.deleted_at IS NULL AND c.kind = 'production' AND c.created_at < ${before}
            AND NOT EXISTS (SELECT 1 FROM msg_messages m WHERE m.msg_config_id = c.id AND m.created_at >= ${before})
          ORDER BY c.created_at, c.id
          LIMIT ${limit}`
        return yield* toConfigs(rows)
      }, Effect.orDie),

      markDeleted: Effect.fnUntraced(function*(projectId: string, id: string, at: string) {
        const rows = yield* sql`
          UPDATE msg_configs SET deleted_at = ${at}, updated_at = ${at}
          WHERE project_id = ${projectId} AND id = ${id} AND deleted_at IS NULL
          RETURNING *`
        return yield* signal(yield* firstConfig(rows))
      }, Effect.orDie),

      changes: changeSignals(pg, CONFIG_CHANNEL)
    })
  })
)
