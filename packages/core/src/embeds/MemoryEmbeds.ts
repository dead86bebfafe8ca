/**
 * The memory adapter of every embed kind's repository (`EmbedsRepo`), with the keys the Postgres schema enforces:
 * one table keyed by id, unique token hashes, newest-first lists, updates of the editable fields only, `touch` that
 * never moves back.
 */
import { Effect, Option } from "effect"
import type { Project } from "../projects/Project.ts"
import { compareKeys, instant, json, nullableTimestamp, sliceWindow, timestamp, violation } from "../ports/MemoryRows.ts"
import { MemoryStore, memoryTable } from "../ports/MemoryStore.ts"
import type { ListWindow } from "../shared/Pagination.ts"
import type { EmbedRecordOf } from "./Embed.ts"
import { type EmbedsRepo, type EmbedTable, filterEntries, updatedColumns } from "./EmbedsRepo.ts"

const Projects = memoryTable<Project>("projects")

export const memoryEmbeds = <R extends EmbedRecordOf<string>, F extends object>(kind: EmbedTable<R>) =>
  Effect.gen(function*() {
    const store = yield* MemoryStore
    const Embeds = memoryTable<R>(kind.table)
    const editable = updatedColumns(kind)
    const stored = (e: R): R =>
      json({
        ...e,
        expires_at: nullableTimestamp(e.expires_at),
        last_used_at: nullableTimestamp(e.last_used_at),
        created_at: timestamp(e.created_at),
        updated_at: timestamp(e.updated_at)
      })
    const matches = (filter: F) => {
      const wanted = filterEntries(filter)
      return (e: R) => wanted.every(([column, value]) => e[column as keyof R] === value)
    }
    const newestFirst = (rows: ReadonlyArray<R>) =>
      [...rows].sort((a, b) => compareKeys({ sortKey: b.created_at, id: b.id }, { sortKey: a.created_at, id: a.id }))
    const repo: EmbedsRepo<R, F> = {
      insert: (embed) =>
        store.run((db) => {
          if (db.get(Projects, embed.project_id) === undefined) violation(`no project ${embed.project_id}`)
          if (db.get(Embeds, embed.id) !== undefined) violation(`duplicate ${kind.table} id ${embed.id}`)
          if (db.all(Embeds).some((e) => e.token_hash === embed.token_hash)) violation(`duplicate ${kind.table} token`)
          db.put(Embeds, embed.id, stored(embed))
        }),
      findById: (projectId, id) =>
        store.run((db) => Option.filter(Option.fromNullishOr(db.get(Embeds, id)), (e) => e.project_id === projectId)),
      findByTokenHash: (tokenHash) =>
        store.run((db) => Option.fromNullishOr(db.all(Embeds).find((e) => e.token_hash === tokenHash))),
      list: (projectId, filter, window: ListWindow) =>
        store.run((db) =>
          sliceWindow(newestFirst(db.all(Embeds).filter((e) => e.project_id === projectId).filter(matches(filter))), window)
        ),
      update: (embed) =>
        store.run((db) => {
          const current = db.get(Embeds, embed.id)
          if (current === undefined || current.project_id !== embed.project_id) return Option.none<R>()
          const updated = stored({ ...current, ...Object.fromEntries(editable.map((column) => [column, embed[column]])) })
          db.put(Embeds, embed.id, updated)
          return Option.some(updated)
        }),
      touch: (id, at) =>
        store.run((db) => {
          const current = db.get(Embeds, id)
          if (current === undefined) return
          if (current.last_used_at !== null && instant(current.last_used_at) >= instant(at)) return
          db.put(Embeds, id, stored({ ...current, last_used_at: at }))
        })
    }
    return repo
  })
