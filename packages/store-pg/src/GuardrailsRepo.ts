/** `GuardrailsRepo` on PostgreSQL (migration 0033). */
import {
  FrequencyCaps,
  type GuardrailSettingsRecord,
  GuardrailsRepo,
  type ListWindow,
  OPT_OUT_SOURCES,
  type OptOutFilter,
  type OptOutRecord,
  QuietHoursWindow,
  type RecipientFacts
} from "@parley/core"
import { Effect, Layer, Option, Schema, SchemaTransformation } from "effect"
import { SqlClient } from "effect/sql"
import { PgClient } from "@effect/sql-pg"
import { changeSignals, decodeRows, IsoFromDate, jsonb, listNewestFirst, Nullable } from "./Rows.ts"

/** Settings changes, NOTIFY'd with the write (delivered at its commit) to every host's settings cache. */
const CHANGES_CHANNEL = "parley_guardrail_settings"

const OptOutRow = Schema.Struct({
  id: Schema.String,
  project_id: Schema.String,
  msg_config_id: Schema.NullOr(Schema.String),
  recipient: Schema.String,
  source: Schema.Literals(OPT_OUT_SOURCES),
  keyword: Schema.NullOr(Schema.String),
  created_at: IsoFromDate
})
const toOptOuts = decodeRows(OptOutRow)
const firstOptOut = (rows: ReadonlyArray<unknown>) =>
  Effect.map(toOptOuts(rows), (found): Option.Option<OptOutRecord> => Option.fromNullishOr(found[0]))

const Keywords = Nullable(Schema.Array(Schema.String))
const SettingsRow = Schema.Struct({
  project_id: Schema.String,
  msg_config_id: Schema.NullOr(Schema.String),
  settings: Schema.Struct({
    opt_out_keywords: Keywords,
    opt_in_keywords: Keywords,
    opt_out_confirmation: Schema.NullOr(Schema.String),
    opt_in_confirmation: Schema.NullOr(Schema.String),
    quiet_hours: Nullable(QuietHoursWindow),
    frequency_caps: Nullable(FrequencyCaps)
  }),
  updated_at: IsoFromDate
})
const toSettingsRecord = (r: { readonly project_id: string; readonly msg_config_id: string | null; readonly settings: typeof SettingsRow.Type["settings"]; readonly updated_at: string }): GuardrailSettingsRecord => ({
  ...r.settings,
  project_id: r.project_id,
  msg_config_id: r.msg_config_id,
  updated_at: r.updated_at
})
const toSettings = (rows: ReadonlyArray<unknown>) => Effect.map(decodeRows(SettingsRow)(rows), (found) => found.map(toSettingsRecord))

/** A timestamptz inside JSON (`2026-03-04T05:06:07.089+00:00`) as the ISO text records carry. */
const IsoFromJson = Schema.String.pipe(
  Schema.decodeTo(Schema.String, SchemaTransformation.transform({ decode: (s: string) => new Date(s).toISOString(), encode: (s: string) => s }))
)
const FactsRow = Schema.Struct({
  recipient: Schema.String,
  opt_out: Nullable(Schema.Struct({ ...OptOutRow.fields, created_at: IsoFromJson })),
  zone: Schema.NullOr(Schema.String)
})

const Count = Schema.Struct({ n: Schema.Int })
const toCount = (rows: ReadonlyArray<unknown>) => Effect.map(decodeRows(Count)(rows), (found) => found[0]?.n ?? 0)

export const layerGuardrailsRepo = Layer.effect(
  GuardrailsRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const pg = yield* PgClient.PgClient
    const scope = (msgConfigId: string | null) => msgConfigId ?? ""

    return GuardrailsRepo.of({
      recipientsFacts: Effect.fnUntraced(function*(projectId: string, msgConfigId: string, recipients: ReadonlyArray<string>) {
        // One round trip for a send or a broadcast's batch: each recipient's opt-out (the number's first, else the
        // project's) and its zone; only the recipients that have either come back.
        const rows = yield* sql`
          SELECT r.recipient, o.opt_out, z.time_zone AS zone
          FROM (SELECT DISTINCT unnest(${recipients}::text[]) AS recipient) r
          LEFT JOIN LATERAL (
            SELECT row_to_json(o) AS opt_out FROM guardrail_opt_outs o
            WHERE o.project_id = ${projectId} AND o.recipient = r.recipient AND coalesce(o.msg_config_id, '') IN ('', ${msgConfigId})
            ORDER BY o.msg_config_id NULLS LAST LIMIT 1
          ) o ON true
          LEFT JOIN guardrail_contact_zones z ON z.project_id = ${projectId} AND z.recipient = r.recipient
          WHERE o.opt_out IS NOT NULL OR z.time_zone IS NOT NULL`
        const facts = new Map<string, RecipientFacts>()
        for (const f of yield* decodeRows(FactsRow)(rows)) {
          facts.set(f.recipient, { optOut: Option.fromNullishOr(f.opt_out), zone: Option.fromNullishOr(f.zone) })
        }
        return facts as ReadonlyMap<string, RecipientFacts>
      }, Effect.orDie),
      insertOptOut: Effect.fnUntraced(function*(o: OptOutRecord) {
        return yield* firstOptOut(yield* sql`
          INSERT INTO guardrail_opt_outs (id, project_id, msg_config_id, recipient, source, keyword, created_at)
          VALUES (${o.id}, ${o.project_id}, ${o.msg_config_id}, ${o.recipient}, ${o.source}, ${o.keyword}, ${o.created_at})
          ON CONFLICT (project_id, recipient, (coalesce(msg_config_id, ''))) DO NOTHING RETURNING *`)
      }, Effect.orDie),
      findOptOut: Effect.fnUntraced(function*(projectId: string, id: string) {
        return yield* firstOptOut(yield* sql`SELECT * FROM guardrail_opt_outs WHERE project_id = ${projectId} AND id = ${id}`)
      }, Effect.orDie),
      listOptOuts: (projectId: string, filter: OptOutFilter, window: ListWindow) => {
        const where = sql.and([
          sql`project_id = ${projectId}`,
          ...(filter.msg_config_id !== undefined ? [sql`msg_config_id = ${filter.msg_config_id}`] : []),
          ...(filter.recipient !== undefined ? [sql`recipient = ${filter.recipient}`] : [])
        ])
        return Effect.orDie(listNewestFirst(sql, "guardrail_opt_outs", where, window, toOptOuts))
      },
      deleteOptOut: Effect.fnUntraced(function*(projectId: string, id: string) {
        return yield* firstOptOut(yield* sql`DELETE FROM guardrail_opt_outs WHERE project_id = ${projectId} AND id = ${id} RETURNING *`)
      }, Effect.orDie),
      deleteOptOutOf: Effect.fnUntraced(function*(projectId: string, msgConfigId: string | null, recipient: string) {
        return yield* firstOptOut(yield* sql`
          DELETE FROM guardrail_opt_outs
          WHERE project_id = ${projectId} AND recipient = ${recipient} AND coalesce(msg_config_id, '') = ${scope(msgConfigId)}
          RETURNING *`)
      }, Effect.orDie),
      findSettings: Effect.fnUntraced(function*(projectId: string, msgConfigId: string | null) {
        const found = yield* toSettings(yield* sql`
          SELECT * FROM guardrail_settings WHERE project_id = ${projectId} AND coalesce(msg_config_id, '') = ${scope(msgConfigId)}`)
        return Option.fromNullishOr(found[0])
      }, Effect.orDie),
      listSettings: Effect.fnUntraced(function*(projectId: string) {
        return yield* toSettings(yield* sql`
          SELECT * FROM guardrail_settings WHERE project_id = ${projectId} ORDER BY msg_config_id NULLS FIRST`)
      }, Effect.orDie),
      putSettings: Effect.fnUntraced(function*(s: GuardrailSettingsRecord) {
        const settings = {
          opt_out_keywords: s.opt_out_keywords,
          opt_in_keywords: s.opt_in_keywords,
          opt_out_confirmation: s.opt_out_confirmation,
          opt_in_confirmation: s.opt_in_confirmation,
          quiet_hours: s.quiet_hours,
          frequency_caps: s.frequency_caps
        }
        yield* sql`
          INSERT INTO guardrail_settings (project_id, msg_config_id, settings, updated_at)
          VALUES (${s.project_id}, ${s.msg_config_id}, ${jsonb(settings)}::jsonb, ${s.updated_at})
          ON CONFLICT (project_id, (coalesce(msg_config_id, '')))
          DO UPDATE SET settings = EXCLUDED.settings, updated_at = EXCLUDED.updated_at`
        yield* sql`SELECT pg_notify(${CHANGES_CHANNEL}, '')`
      }, Effect.orDie),
      changes: changeSignals(pg, CHANGES_CHANNEL),
      putZone: Effect.fnUntraced(function*(z) {
        yield* sql`
          INSERT INTO guardrail_contact_zones (project_id, recipient, time_zone, updated_at)
          VALUES (${z.project_id}, ${z.recipient}, ${z.time_zone}, ${z.updated_at})
          ON CONFLICT (project_id, recipient) DO UPDATE SET time_zone = EXCLUDED.time_zone, updated_at = EXCLUDED.updated_at`
      }, Effect.orDie),
      deleteZone: Effect.fnUntraced(function*(projectId: string, recipient: string) {
        const rows = yield* sql`
          DELETE FROM guardrail_contact_zones WHERE project_id = ${projectId} AND recipient = ${recipient} RETURNING recipient`
        return rows.length > 0
      }, Effect.orDie),
      recordMarketing: Effect.fnUntraced(function*(m, prunedBefore: string) {
        yield* sql`
          DELETE FROM guardrail_marketing_sends
          WHERE project_id = ${m.project_id} AND recipient = ${m.recipient} AND sent_at < ${prunedBefore}::timestamptz`
        yield* sql`
          INSERT INTO guardrail_marketing_sends (project_id, msg_config_id, recipient, key, sent_at)
          VALUES (${m.project_id}, ${m.msg_config_id}, ${m.recipient}, ${m.key}, ${m.sent_at})
          ON CONFLICT DO NOTHING`
      }, Effect.orDie),
      countMarketing: Effect.fnUntraced(function*(projectId: string, msgConfigId: string | null, recipient: string, since: string) {
        return yield* toCount(yield* sql`
          SELECT count(*)::int AS n FROM guardrail_marketing_sends
          WHERE project_id = ${projectId} AND recipient = ${recipient} AND sent_at >= ${since}::timestamptz
            ${msgConfigId === null ? sql`` : sql`AND msg_config_id = ${msgConfigId}`}`)
      }, Effect.orDie),
      eraseRecipient: Effect.fnUntraced(function*(projectId: string, recipient: string) {
        const optOuts = yield* sql`DELETE FROM guardrail_opt_outs WHERE project_id = ${projectId} AND recipient = ${recipient} RETURNING id`
        const sends = yield* sql`
          DELETE FROM guardrail_marketing_sends WHERE project_id = ${projectId} AND recipient = ${recipient} RETURNING key`
        const zones = yield* sql`
          DELETE FROM guardrail_contact_zones WHERE project_id = ${projectId} AND recipient = ${recipient} RETURNING recipient`
        return optOuts.length + sends.length + zones.length
      }, Effect.orDie)
    })
  })
)
