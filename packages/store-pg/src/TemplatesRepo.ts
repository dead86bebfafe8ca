/** `TemplatesRepo` on PostgreSQL (migration 0012): the template mirror. */
import { type ListWindow, type TemplateFilter, type TemplateRecord, TemplatesRepo } from "@parley/core"
import { Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { iso, jsonb, listNewestFirst } from "./Rows.ts"

interface TemplateRow {
  readonly id: string
  readonly project_id: string
  readonly business_account_id: string
  readonly upstream_template_id: string
  readonly name: string
  readonly language: string
  readonly status: string
  readonly category: string
  readonly sub_category: string | null
  readonly parameter_format: string
  readonly components: ReadonlyArray<Record<string, unknown>>
  readonly created_at: Date
  readonly updated_at: Date
}

const toTemplate = (row: TemplateRow): TemplateRecord => ({
  id: row.id,
  project_id: row.project_id,
  business_account_id: row.business_account_id,
  upstream_template_id: row.upstream_template_id,
  name: row.name,
  language: row.language,
  status: row.status,
  category: row.category,
  sub_category: row.sub_category,
  parameter_format: row.parameter_format,
  components: row.components,
  created_at: iso(row.created_at),
  updated_at: iso(row.updated_at)
})

export const layerTemplatesRepo = Layer.effect(
  TemplatesRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    // A template never moves between projects: the id is derived from the project (`templateId`).
    const upsertRow = (t: TemplateRecord) =>
      sql<TemplateRow>`
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
        const rows = yield* upsertRow(t)
        if (rows[0] === undefined) return yield* Effect.die(new Error(`template ${t.id} belongs to another project`))
        return toTemplate(rows[0])
      }, Effect.orDie),
      findById: Effect.fnUntraced(function*(projectId: string, id: string) {
        const rows = yield* sql<TemplateRow>`SELECT * FROM msg_templates WHERE project_id = ${projectId} AND id = ${id}`
        return Option.map(Option.fromNullishOr(rows[0]), toTemplate)
      }, Effect.orDie),
      list: (projectId: string, filter: TemplateFilter, window: ListWindow) =>
        Effect.orDie(listNewestFirst(sql, "msg_templates", where(projectId, filter), window, toTemplate)),
      remove: Effect.fnUntraced(function*(projectId: string, id: string) {
        const rows = yield* sql`DELETE FROM msg_templates WHERE project_id = ${projectId} AND id = ${id} RETURNING id`
        return rows.length > 0
      }, Effect.orDie)
    })
  })
)
