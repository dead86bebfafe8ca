/** `SetupLinksRepo` on PostgreSQL. */
import { type ListWindow, type SetupLinkRecord, SetupLinksRepo } from "@parley/core"
import { Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { iso, isoOrNull, jsonb, listNewestFirst, mapUnique } from "./Rows.ts"

interface SetupLinkRow {
  readonly id: string
  readonly project_id: string
  readonly customer_id: string
  readonly token_hash: string
  readonly status: SetupLinkRecord["status"]
  readonly msg_setup_status: SetupLinkRecord["msg_setup_status"]
  readonly error_code: SetupLinkRecord["error_code"]
  readonly expires_at: Date
  readonly success_redirect_url: string | null
  readonly failure_redirect_url: string | null
  readonly allowed_connection_types: SetupLinkRecord["allowed_connection_types"]
  readonly theme_config: SetupLinkRecord["theme_config"]
  readonly language: SetupLinkRecord["language"]
  readonly provision_phone_number: boolean
  readonly phone_number_country_isos: ReadonlyArray<string>
  readonly upstream_billing_mode: SetupLinkRecord["upstream_billing_mode"]
  readonly reconnect_phone_number: string | null
  readonly phone_number_id: string | null
  readonly used_at: Date | null
  readonly revoked_at: Date | null
  readonly created_at: Date
  readonly updated_at: Date
}

const toLink = (row: SetupLinkRow): SetupLinkRecord => ({
  id: row.id,
  project_id: row.project_id,
  customer_id: row.customer_id,
  token_hash: row.token_hash,
  status: row.status,
  msg_setup_status: row.msg_setup_status,
  error_code: row.error_code,
  expires_at: iso(row.expires_at),
  success_redirect_url: row.success_redirect_url,
  failure_redirect_url: row.failure_redirect_url,
  allowed_connection_types: row.allowed_connection_types,
  theme_config: row.theme_config,
  language: row.language,
  provision_phone_number: row.provision_phone_number,
  phone_number_country_isos: row.phone_number_country_isos,
  upstream_billing_mode: row.upstream_billing_mode,
  reconnect_phone_number: row.reconnect_phone_number,
  phone_number_id: row.phone_number_id,
  used_at: isoOrNull(row.used_at),
  revoked_at: isoOrNull(row.revoked_at),
  created_at: iso(row.created_at),
  updated_at: iso(row.updated_at)
})

const duplicates = mapUnique({ setup_links_one_active: "customer_id" })

export const layerSetupLinksRepo = Layer.effect(
  SetupLinksRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const one = (rows: ReadonlyArray<SetupLinkRow>) => Option.map(Option.fromNullishOr(rows[0]), toLink)

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
        return one(
          yield* sql<SetupLinkRow>`
            SELECT * FROM setup_links WHERE project_id = ${projectId} AND customer_id = ${customerId} AND id = ${id}`
        )
      }, Effect.orDie),
      findByTokenHash: Effect.fnUntraced(function*(tokenHash: string) {
        return one(yield* sql<SetupLinkRow>`SELECT * FROM setup_links WHERE token_hash = ${tokenHash}`)
      }, Effect.orDie),
      list: (projectId: string, customerId: string, window: ListWindow) =>
        Effect.orDie(listNewestFirst(
          sql,
          "setup_links",
          sql.and([sql`project_id = ${projectId}`, sql`customer_id = ${customerId}`]),
          window,
          toLink
        )),
      updateActive: Effect.fnUntraced(function*(l: SetupLinkRecord) {
        return one(
          yield* sql<SetupLinkRow>`
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
