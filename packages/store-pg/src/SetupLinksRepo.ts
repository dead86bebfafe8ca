/** `SetupLinksRepo` on PostgreSQL. */
import {
  BILLING_MODES,
  CONNECTION_TYPES,
  type ListWindow,
  MsgSetupStatus,
  SETUP_ERROR_CODES,
  SETUP_LINK_LANGUAGES,
  SetupLink,
  type SetupLinkRecord,
  SetupLinksRepo,
  SetupLinkStatus
} from "@parley/core"
import { Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { decodeFirst, decodeRows, IsoFromDate, jsonb, listNewestFirst, mapUnique, Nullable } from "./Rows.ts"

/** A row of `setup_links`: the stored link, times as ISO text. */
const SetupLinkRow = Schema.Struct({
  id: Schema.String,
  project_id: Schema.String,
  customer_id: Schema.String,
  token_hash: Schema.String,
  status: SetupLinkStatus,
  msg_setup_status: MsgSetupStatus,
  error_code: Schema.NullOr(Schema.Literals(SETUP_ERROR_CODES)),
  expires_at: IsoFromDate,
  success_redirect_url: Schema.NullOr(Schema.String),
  failure_redirect_url: Schema.NullOr(Schema.String),
  allowed_connection_types: Schema.Array(Schema.Literals(CONNECTION_TYPES)),
  theme_config: SetupLink.fields.theme_config,
  language: Schema.NullOr(Schema.Literals(SETUP_LINK_LANGUAGES)),
  provision_phone_number: Schema.Boolean,
  phone_number_country_isos: Schema.Array(Schema.String),
  upstream_billing_mode: Schema.Literals(BILLING_MODES),
  reconnect_phone_number: Schema.NullOr(Schema.String),
  phone_number_id: Schema.NullOr(Schema.String),
  used_at: Nullable(IsoFromDate),
  revoked_at: Nullable(IsoFromDate),
  created_at: IsoFromDate,
  updated_at: IsoFromDate
})
const toLinks: (rows: ReadonlyArray<unknown>) => Effect.Effect<ReadonlyArray<SetupLinkRecord>> = decodeRows(
  "setup_links",
  SetupLinkRow
)
const one = decodeFirst("setup_links", SetupLinkRow)

const duplicates = mapUnique({ setup_links_one_active: "customer_id" })

export const layerSetupLinksRepo = Layer.effect(
  SetupLinksRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    return SetupLinksRepo.of({
      insert: Effect.fnUntraced(function*(l: SetupLinkRecord) {
        yield* sql`
          INSERT INTO setup_links (id, project_id, customer_id, token_hash, status, msg_setup_status, error_code, expires_at,
            success_redirect_url, failure_redirect_url, allowed_connection_types, theme_config, language,
            provision_phone_number, phone_number_country_isos, upstream_billing_mode, reconnect_phone_number,
            phone_number_id, used_at, revoked_at, created_at, updated_at)
          VALUES (${l.id}, ${l.project_id}, ${l.customer_id}, ${l.token_hash}, ${l.status}, ${l.msg_setup_status},
            ${l.error_code}, ${l.expires_at}, ${l.success_redirect_url}, ${l.failure_redirect_url},
            ${jsonb(l.allowed_connection_types)}::jsonb, ${jsonb(l.theme_config)}::jsonb, ${l.language},
            ${l.provision_phone_number}, ${jsonb(l.phone_number_country_isos)}::jsonb, ${l.upstream_billing_mode},
            ${l.reconnect_phone_number}, ${l.phone_number_id}, ${l.used_at}, ${l.revoked_at}, ${l.created_at}, ${l.updated_at})`
      }, Effect.catchTag("SqlError", duplicates)),
      findById: Effect.fnUntraced(function*(projectId: string, customerId: string, id: string) {
        return yield* one(
          yield* sql`
            SELECT * FROM setup_links WHERE project_id = ${projectId} AND customer_id = ${customerId} AND id = ${id}`
        )
      }, Effect.orDie),
      findByTokenHash: Effect.fnUntraced(function*(tokenHash: string) {
        return yield* one(yield* sql`SELECT * FROM setup_links WHERE token_hash = ${tokenHash}`)
      }, Effect.orDie),
      list: (projectId: string, customerId: string, window: ListWindow) =>
        Effect.orDie(listNewestFirst(
          sql,
          "setup_links",
          sql.and([sql`project_id = ${projectId}`, sql`customer_id = ${customerId}`]),
          window,
          toLinks
        )),
      updateActive: Effect.fnUntraced(function*(l: SetupLinkRecord) {
        return yield* one(
          yield* sql`
            UPDATE setup_links SET status = ${l.status}, msg_setup_status = ${l.msg_setup_status}, error_code = ${l.error_code},
              expires_at = ${l.expires_at}, success_redirect_url = ${l.success_redirect_url},
              failure_redirect_url = ${l.failure_redirect_url},
              allowed_connection_types = ${jsonb(l.allowed_connection_types)}::jsonb,
              theme_config = ${jsonb(l.theme_config)}::jsonb, language = ${l.language},
              provision_phone_number = ${l.provision_phone_number},
              phone_number_country_isos = ${jsonb(l.phone_number_country_isos)}::jsonb,
              upstream_billing_mode = ${l.upstream_billing_mode}, reconnect_phone_number = ${l.reconnect_phone_number},
              phone_number_id = ${l.phone_number_id}, used_at = ${l.used_at}, revoked_at = ${l.revoked_at},
              updated_at = ${l.updated_at}
            WHERE project_id = ${l.project_id} AND id = ${l.id} AND status = 'active'
            RETURNING *`
        )
      }, Effect.orDie),
      endActive: Effect.fnUntraced(function*(projectId: string, customerId: string, now: string) {
        const rows = yield* sql`
          UPDATE setup_links SET
            status = CASE WHEN expires_at <= ${now}::timestamptz THEN 'expired' ELSE 'revoked' END,
            revoked_at = CASE WHEN expires_at <= ${now}::timestamptz THEN NULL ELSE ${now}::timestamptz END,
            updated_at = ${now}
          WHERE project_id = ${projectId} AND customer_id = ${customerId} AND status = 'active'
          RETURNING id`
        return rows.length
      }, Effect.orDie)
    })
  })
)
