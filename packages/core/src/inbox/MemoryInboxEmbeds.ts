/** `InboxEmbedsRepo` in memory, with the keys the Postgres schema enforces. */
import { Effect, Layer, Option } from "effect"
import type { InboxEmbedFilter, InboxEmbedRecord } from "./InboxEmbed.ts"
import { InboxEmbedsRepo } from "./InboxEmbedsRepo.ts"
import type { Project } from "../projects/Project.ts"
import type { ListWindow } from "../shared/Pagination.ts"
import { MemoryStore, memoryTable } from "../ports/MemoryStore.ts"
import { compareKeys, instant, json, nullableTimestamp, sliceWindow, timestamp, violation } from "../ports/MemoryRows.ts"

const Embeds = memoryTable<InboxEmbedRecord>("inbox_embeds")
const Projects = memoryTable<Project>("projects")

const stored = (e: InboxEmbedRecord): InboxEmbedRecord =>
  json({
    ...e,
    expires_at: nullableTimestamp(e.expires_at),
    last_used_at: nullableTimestamp(e.last_used_at),
    created_at: timestamp(e.created_at),
    updated_at: timestamp(e.updated_at)
  })

const newestFirst = (rows: ReadonlyArray<InboxEmbedRecord>) =>
  [...rows].sort((a, b) => compareKeys({ sortKey: b.created_at, id: b.id }, { sortKey: a.created_at, id: a.id }))

const matches = (filter: InboxEmbedFilter) => (e: InboxEmbedRecord) =>
  (filter.status === undefined || e.status === filter.status) &&
  (filter.scope_type === undefined || e.scope_type === filter.scope_type) &&
  (filter.scope_id === undefined || e.scope_id === filter.scope_id) &&
  (filter.assigned_user_id === undefined || e.assigned_user_id === filter.assigned_user_id)

export const layerMemoryInboxEmbedsRepo = Layer.effect(
  InboxEmbedsRepo,
  Effect.gen(function*() {
    const store = yield* MemoryStore
    return InboxEmbedsRepo.of({
      insert: Effect.fn("InboxEmbedsRepo.insert")((embed: InboxEmbedRecord) =>
        store.run((db) => {
          if (db.get(Projects, embed.project_id) === undefined) violation(`no project ${embed.project_id}`)
          if (db.get(Embeds, embed.id) !== undefined) violation(`duplicate inbox embed id ${embed.id}`)
          if (db.all(Embeds).some((e) => e.token_hash === embed.token_hash)) violation("duplicate inbox embed token")
          db.put(Embeds, embed.id, stored(embed))
        })
      ),
      findById: Effect.fn("InboxEmbedsRepo.findById")((projectId: string, id: string) =>
        store.run((db) => Option.filter(Option.fromNullishOr(db.get(Embeds, id)), (e) => e.project_id === projectId))
      ),
      findByTokenHash: Effect.fn("InboxEmbedsRepo.findByTokenHash")((tokenHash: string) =>
        store.run((db) => Option.fromNullishOr(db.all(Embeds).find((e) => e.token_hash === tokenHash)))
      ),
      list: Effect.fn("InboxEmbedsRepo.list")((projectId: string, filter: InboxEmbedFilter, window: ListWindow) =>
        store.run((db) =>
          sliceWindow(newestFirst(db.all(Embeds).filter((e) => e.project_id === projectId).filter(matches(filter))), window)
        )
      ),
      update: Effect.fn("InboxEmbedsRepo.update")((embed: InboxEmbedRecord) =>
        store.run((db) => {
          const current = db.get(Embeds, embed.id)
          if (current === undefined || current.project_id !== embed.project_id) return Option.none<InboxEmbedRecord>()
          const updated = stored({
            ...current,
            name: embed.name,
            assigned_user_id: embed.assigned_user_id,
            assigned_user_name: embed.assigned_user_name,
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
      touch: Effect.fn("InboxEmbedsRepo.touch")((id: string, at: string) =>
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
