/** `WorkflowEmbedsRepo` in memory, with the keys the Postgres schema enforces. */
import { Effect, Layer, Option } from "effect"
import type { Project } from "../projects/Project.ts"
import { compareKeys, instant, json, nullableTimestamp, sliceWindow, timestamp, violation } from "../ports/MemoryRows.ts"
import { MemoryStore, memoryTable } from "../ports/MemoryStore.ts"
import type { ListWindow } from "../shared/Pagination.ts"
import type { WorkflowEmbedFilter, WorkflowEmbedRecord } from "./WorkflowEmbed.ts"
import { WorkflowEmbedsRepo } from "./WorkflowEmbedsRepo.ts"

const Embeds = memoryTable<WorkflowEmbedRecord>("workflow_embeds")
const Projects = memoryTable<Project>("projects")

const stored = (e: WorkflowEmbedRecord): WorkflowEmbedRecord =>
  json({
    ...e,
    expires_at: nullableTimestamp(e.expires_at),
    last_used_at: nullableTimestamp(e.last_used_at),
    created_at: timestamp(e.created_at),
    updated_at: timestamp(e.updated_at)
  })

const newestFirst = (rows: ReadonlyArray<WorkflowEmbedRecord>) =>
  [...rows].sort((a, b) => compareKeys({ sortKey: b.created_at, id: b.id }, { sortKey: a.created_at, id: a.id }))

const matches = (filter: WorkflowEmbedFilter) => (e: WorkflowEmbedRecord) =>
  (filter.status === undefined || e.status === filter.status) &&
  (filter.scope_type === undefined || e.scope_type === filter.scope_type) &&
  (filter.scope_id === undefined || e.scope_id === filter.scope_id)

export const layerMemoryWorkflowEmbedsRepo = Layer.effect(
  WorkflowEmbedsRepo,
  Effect.gen(function*() {
    const store = yield* MemoryStore
    return WorkflowEmbedsRepo.of({
      insert: Effect.fn("WorkflowEmbedsRepo.insert")((embed: WorkflowEmbedRecord) =>
        store.run((db) => {
          if (db.get(Projects, embed.project_id) === undefined) violation(`no project ${embed.project_id}`)
          if (db.get(Embeds, embed.id) !== undefined) violation(`duplicate workflow embed id ${embed.id}`)
          if (db.all(Embeds).some((e) => e.token_hash === embed.token_hash)) violation("duplicate workflow embed token")
          db.put(Embeds, embed.id, stored(embed))
        })
      ),
      findById: Effect.fn("WorkflowEmbedsRepo.findById")((projectId: string, id: string) =>
        store.run((db) => Option.filter(Option.fromNullishOr(db.get(Embeds, id)), (e) => e.project_id === projectId))
      ),
      findByTokenHash: Effect.fn("WorkflowEmbedsRepo.findByTokenHash")((tokenHash: string) =>
        store.run((db) => Option.fromNullishOr(db.all(Embeds).find((e) => e.token_hash === tokenHash)))
      ),
      list: Effect.fn("WorkflowEmbedsRepo.list")((projectId: string, filter: WorkflowEmbedFilter, window: ListWindow) =>
        store.run((db) =>
          sliceWindow(newestFirst(db.all(Embeds).filter((e) => e.project_id === projectId).filter(matches(filter))), window)
        )
      ),
      update: Effect.fn("WorkflowEmbedsRepo.update")((embed: WorkflowEmbedRecord) =>
        store.run((db) => {
          const current = db.get(Embeds, embed.id)
          if (current === undefined || current.project_id !== embed.project_id) return Option.none<WorkflowEmbedRecord>()
          const updated = stored({
            ...current,
            name: embed.name,
            access: embed.access,
            status: embed.status,
            allowed_origins: embed.allowed_origins,
            default_mode: embed.default_mode,
            language: embed.language,
            expires_at: embed.expires_at,
            updated_at: embed.updated_at
          })
          db.put(Embeds, embed.id, updated)
          return Option.some(updated)
        })
      ),
      touch: Effect.fn("WorkflowEmbedsRepo.touch")((id: string, at: string) =>
        store.run((db) => {
          const current = db.get(Embeds, id)
          if (current === undefined) return
          if (current.last_used_at !== null && instant(current.last_used_at) >= instant(at)) return
          db.put(Embeds, id, stored({ ...current, last_used_at: at }))
        })
      )
    })
  })
)
