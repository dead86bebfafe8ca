/** `TemplatesRepo` in memory, with the keys the Postgres schema enforces. */
import { Effect, Layer, Option } from "effect"
import type { TemplateFilter, TemplateRecord } from "./Template.ts"
import { TemplatesRepo } from "./TemplatesRepo.ts"
import type { Project } from "../../projects/Project.ts"
import type { ListWindow } from "../../shared/Pagination.ts"
import { MemoryStore, memoryTable, type MemoryTables } from "../../ports/MemoryStore.ts"
import { compareKeys, json, sliceWindow, timestamp, violation } from "../../ports/MemoryRows.ts"

const Templates = memoryTable<TemplateRecord>("msg_templates")
const Projects = memoryTable<Project>("projects")

const stored = (t: TemplateRecord): TemplateRecord => ({
  ...t,
  components: json(t.components),
  created_at: timestamp(t.created_at),
  updated_at: timestamp(t.updated_at)
})

const newestFirst = (rows: ReadonlyArray<TemplateRecord>) =>
  [...rows].sort((a, b) => compareKeys({ sortKey: b.created_at, id: b.id }, { sortKey: a.created_at, id: a.id }))

const matches = (filter: TemplateFilter) => (t: TemplateRecord) =>
  (filter.business_account_id === undefined || t.business_account_id === filter.business_account_id) &&
  (filter.name === undefined || t.name === filter.name) &&
  (filter.language === undefined || t.language === filter.language) &&
  (filter.status === undefined || t.status === filter.status) &&
  (filter.category === undefined || t.category === filter.category)

const put = (db: MemoryTables, template: TemplateRecord): TemplateRecord => {
  if (db.get(Projects, template.project_id) === undefined) violation(`no project ${template.project_id}`)
  const current = db.get(Templates, template.id)
  if (current !== undefined && current.project_id !== template.project_id) violation(`template ${template.id} of another project`)
  const row = stored({ ...template, created_at: current?.created_at ?? template.created_at })
  db.put(Templates, template.id, row)
  return row
}

export const layerMemoryTemplatesRepo = Layer.effect(
  TemplatesRepo,
  Effect.gen(function*() {
    const store = yield* MemoryStore
    return TemplatesRepo.of({
      replaceAccount: Effect.fn("TemplatesRepo.replaceAccount")(
        (projectId: string, businessAccountId: string, templates: ReadonlyArray<TemplateRecord>) =>
          store.run((db) => {
            const keep = new Set(templates.map((t) => t.id))
            for (const t of db.all(Templates)) {
              if (t.project_id === projectId && t.business_account_id === businessAccountId && !keep.has(t.id)) db.remove(Templates, t.id)
            }
            for (const t of templates) put(db, t)
          })
      ),
      upsert: Effect.fn("TemplatesRepo.upsert")((template: TemplateRecord) => store.run((db) => put(db, template))),
      findById: Effect.fn("TemplatesRepo.findById")((projectId: string, id: string) =>
        store.run((db) => Option.filter(Option.fromNullishOr(db.get(Templates, id)), (t) => t.project_id === projectId))
      ),
      list: Effect.fn("TemplatesRepo.list")((projectId: string, filter: TemplateFilter, window: ListWindow) =>
        store.run((db) => sliceWindow(newestFirst(db.all(Templates).filter((t) => t.project_id === projectId).filter(matches(filter))), window))
      ),
      remove: Effect.fn("TemplatesRepo.remove")((projectId: string, id: string) =>
        store.run((db) => {
          const current = db.get(Templates, id)
          return current !== undefined && current.project_id === projectId && db.remove(Templates, id)
        })
      )
    })
  })
)
