/** `TemplatesRepo` on PostgreSQL (migration 0012): the template mirror. */
import { type ListWindow, type TemplateFilter, type TemplateRecord, TemplatesRepo } from "@parley/core"
import { Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { decodeFirst, decodeRows, IsoFromDate, jsonb, listNewestFirst } from "./Rows.ts"

/** A row of `msg_templates`: the mirrored template, times as ISO text. */
const TemplateRow = Schema.Struct({
  id: Schema.String,
  project_id: Schema.String,
  business_account_id: Schema.String,
  upstream_template_id: Schema.String,
  name: Schema.String,
  language: Schema.String,
  status: Schema.String,
  category: Schema.String,
  sub_category: Schema.NullOr(Schema.String),
  parameter_format: Schema.String,
  components: Schema.Array(Schema.Record(Schema.String, Schema.Unknown)),
  created_at: IsoFromDate,
  updated_at: IsoFromDate
})
const toTemplates: (rows: ReadonlyArray<unknown>) => Effect.Effect<ReadonlyArray<TemplateRecord>> = decodeRows(
  "msg_templates",
  TemplateRow
)
const firstTemplate = decodeFirst("msg_templates", TemplateRow)

export const layerTemplatesRepo = Layer.effect(
  TemplatesRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    // A template never moves between projects: the id is derived from the project (`templateId`).
    const upsertRow = (t: TemplateRecord) =>
      sql`
        INSERT INTO msg_templates (id, project_id, business_account_id, upstream_template_id, name, language, status,
          category, sub_category, parameter_format, components, created_at, updated_at)
        VALUES (${t.id}, ${t.project_id}, ${t.business_account_id}, ${t.upstream_template_id}, ${t.name}, ${t.language},
          ${t.status}, ${t.category}, ${t.sub_category}, ${t.parameter_format}, ${jsonb(t.components)}::jsonb,
          ${t.created_at}, ${t.updated_at})
        ON CONFLICT (id) DO UPDATE SET
          business_account_id = EXCLUDED.business_account_id, upstream_template_id = EXCLUDED.upstream_template_id,
          name = EXCLUDED.name, language = EXCLUDED.language, status = EXCLUDED.status, category = EXCLUDED.category,
          sub_category = EXCLUDED.sub_category, parameter_format = EXCLUDED.parameter_format,
          components = EXCLUDED.components, updated_at = EXCLUDED.updated_at
        WHERE msg_templates.project_id = EXCLUDED.project_id
        RETURNING *`

    const where = (projectId: string, filter: TemplateFilter) =>
      sql.and([
        sql`project_id = ${projectId}`,
        ...(filter.business_account_id !== undefined ? [sql`business_account_id = ${filter.business_account_id}`] : []),
        ...(filter.name !== undefined ? [sql`name = ${filter.name}`] : []),
        ...(filter.language !== undefined ? [sql`language = ${filter.language}`] : []),
        ...(filter.status !== undefined ? [sql`status = ${filter.status}`] : []),
        ...(filter.category !== undefined ? [sql`category = ${filter.category}`] : [])
      ])

    return TemplatesRepo.of({
      replaceAccount: Effect.fnUntraced(function*(projectId: string, businessAccountId: string, templates: ReadonlyArray<TemplateRecord>) {
        yield* sql.withTransaction(Effect.gen(function*() {
          const keep = templates.map((t) => t.id)
          yield* sql`
            DELETE FROM msg_templates WHERE project_id = ${projectId} AND business_account_id = ${businessAccountId}
            ${keep.length > 0 ? sql`AND id NOT IN ${sql.in(keep)}` : sql``}`
          for (const t of templates) yield* upsertRow(t)
        }))
      }, Effect.orDie),
      upsert: Effect.fnUntraced(function*(t: TemplateRecord) {
        const stored = yield* firstTemplate(yield* upsertRow(t))
        if (Option.isNone(stored)) return yield* Effect.die(new Error(`template ${t.id} belongs to another project`))
        return stored.value
      }, Effect.orDie),
      findById: Effect.fnUntraced(function*(projectId: string, id: string) {
        return yield* firstTemplate(yield* sql`SELECT * FROM msg_templates WHERE project_id = ${projectId} AND id = ${id}`)
      }, Effect.orDie),
      list: (projectId: string, filter: TemplateFilter, window: ListWindow) =>
        Effect.orDie(listNewestFirst(sql, "msg_templates", where(projectId, filter), window, toTemplates)),
      remove: Effect.fnUntraced(function*(projectId: string, id: string) {
        const rows = yield* sql`DELETE FROM msg_templates WHERE project_id = ${projectId} AND id = ${id} RETURNING id`
        return rows.length > 0
      }, Effect.orDie)
    })
  })
)
