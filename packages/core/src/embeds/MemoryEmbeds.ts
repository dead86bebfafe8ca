/**
 * What the memory adapters of the embed repos share (`InboxEmbedsRepo`, `WorkflowEmbedsRepo`): one table keyed by
 * id, unique token hashes, newest-first lists, updates of the editable fields only, `touch` that never moves back.
 */
import { Effect, Option } from "effect"
import type { Project } from "../projects/Project.ts"
import { compareKeys, instant, json, nullableTimestamp, sliceWindow, timestamp, violation } from "../ports/MemoryRows.ts"
import { MemoryStore, memoryTable } from "../ports/MemoryStore.ts"
import type { ListWindow } from "../shared/Pagination.ts"
import type { EmbedAccessFields } from "./EmbedAccess.ts"

export interface StoredEmbed extends EmbedAccessFields {
  readonly token_hash: string
  readonly created_at: string
  readonly updated_at: string
}

const Projects = memoryTable<Project>("projects")

export const memoryEmbeds = <R extends StoredEmbed, F>(options: {
  readonly table: string
  /** Whether a record passes a list's filter. */
  readonly matches: (filter: F) => (record: R) => boolean
  /** `current` with the fields an update may change taken from `next`. */
  readonly edited: (current: R, next: R) => R
}) =>
  Effect.gen(function*() {
    const store = yield* MemoryStore
    const Embeds = memoryTable<R>(options.table)
    const stored = (e: R): R =>
      json({
        ...e,
        expires_at: nullableTimestamp(e.expires_at),
        last_used_at: nullableTimestamp(e.last_used_at),
        created_at: timestamp(e.created_at),
        updated_at: timestamp(e.updated_at)
      })
    const newestFirst = (rows: ReadonlyArray<R>) =>
      [...rows].sort((a, b) => compareKeys({ sortKey: b.created_at, id: b.id }, { sortKey: a.created_at, id: a.id }))
    return {
      insert: (embed: R) =>
        store.run((db) => {
          if (db.get(Projects, embed.project_id) === undefined) violation(`no project ${embed.project_id}`)
          if (db.get(Embeds, embed.id) !== undefined) violation(`duplicate ${options.table} id ${embed.id}`)
          if (db.all(Embeds).some((e) => e.token_hash === embed.token_hash)) violation(`duplicate ${options.table} token`)
          db.put(Embeds, embed.id, stored(embed))
        }),
      findById: (projectId: string, id: string) =>
        store.run((db) => Option.filter(Option.fromNullishOr(db.get(Embeds, id)), (e) => e.project_id === projectId)),
      findByTokenHash: (tokenHash: string) =>
        store.run((db) => Option.fromNullishOr(db.all(Embeds).find((e) => e.token_hash === tokenHash))),
      list: (projectId: string, filter: F, window: ListWindow) =>
        store.run((db) =>
          sliceWindow(newestFirst(db.all(Embeds).filter((e) => e.project_id === projectId).filter(options.matches(filter))), window)
        ),
      update: (embed: R) =>
        store.run((db) => {
          const current = db.get(Embeds, embed.id)
          if (current === undefined || current.project_id !== embed.project_id) return Option.none<R>()
          const updated = stored(options.edited(current, embed))
          db.put(Embeds, embed.id, updated)
          return Option.some(updated)
        }),
      touch: (id: string, at: string) =>
        store.run((db) => {
          const current = db.get(Embeds, id)
          if (current === undefined) return
          if (current.last_used_at !== null && instant(current.last_used_at) >= instant(at)) return
          db.put(Embeds, id, stored({ ...current, last_used_at: at }))
        })
    }
  })
