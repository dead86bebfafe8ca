/** `ProjectsRepo` in memory (unit tests and demos): projects and their API keys in the `MemoryStore`. */
import { Effect, Layer, Option, PubSub, Stream } from "effect"
import { Duplicate } from "../ports/StorageError.ts"
import type { CursorKey, ListSlice, ListWindow } from "../shared/Pagination.ts"
import { MemoryStore, memoryTable } from "../ports/MemoryStore.ts"
import { compareKeys, instant, json, nullableTimestamp, sliceWindow, timestamp, violation } from "../ports/MemoryRows.ts"
import { ProjectsRepo } from "./ProjectsRepo.ts"
import type { ApiKey, Project } from "./Project.ts"

export const ProjectRows = memoryTable<Project>("projects")
const ApiKeys = memoryTable<ApiKey>("api_keys")

const keyOf = (row: { readonly created_at: string; readonly id: string }): CursorKey => ({
  sortKey: row.created_at,
  id: row.id
})

const oldestFirst = <A extends { readonly created_at: string; readonly id: string }>(rows: ReadonlyArray<A>) =>
  [...rows].sort((a, b) => compareKeys(keyOf(a), keyOf(b)))


const storedProject = (p: Project): Project => ({
  ...p,
  created_at: timestamp(p.created_at),
  updated_at: timestamp(p.updated_at)
})

const storedKey = (k: ApiKey): ApiKey => ({
  ...k,
  created_at: timestamp(k.created_at),
  revoked_at: nullableTimestamp(k.revoked_at)
})

export const layerMemoryProjectsRepo = Layer.effect(
  ProjectsRepo,
  Effect.gen(function*() {
    const store = yield* MemoryStore
    const changes = yield* PubSub.unbounded<void>()
    const signal = <A>(result: Option.Option<A>): Effect.Effect<Option.Option<A>> =>
      Option.isSome(result) ? Effect.as(PubSub.publish(changes, undefined), result) : Effect.succeed(result)

    return ProjectsRepo.of({
      insert: Effect.fn("ProjectsRepo.insert")((project: Project) =>
        store.run((db) => {
          if (db.get(ProjectRows, project.id) !== undefined) violation(`duplicate project id ${project.id}`)
          db.put(ProjectRows, project.id, storedProject(project))
        })
      ),
      findById: Effect.fn("ProjectsRepo.findById")((id: string) =>
        store.run((db) => Option.fromNullishOr(db.get(ProjectRows, id)))
      ),
      list: store.run((db) => oldestFirst(db.all(ProjectRows))).pipe(Effect.withSpan("ProjectsRepo.list")),
      setDisabled: Effect.fn("ProjectsRepo.setDisabled")((id: string, disabled: boolean, at: string) =>
        store.run((db): Option.Option<Project> => {
          const project = db.get(ProjectRows, id)
          if (project === undefined) return Option.none()
          const updated = storedProject({ ...project, disabled, updated_at: at })
          db.put(ProjectRows, id, updated)
          return Option.some(updated)
        }).pipe(Effect.flatMap(signal))
      ),
      insertKey: Effect.fn("ProjectsRepo.insertKey")((key: ApiKey) =>
        store.run((db) => {
          if (db.get(ProjectRows, key.project_id) === undefined) violation(`no project ${key.project_id}`)
          if (db.get(ApiKeys, key.id) !== undefined) violation(`duplicate api key id ${key.id}`)
          if (db.all(ApiKeys).some((k) => k.key_hash === key.key_hash)) violation("duplicate api key hash")
          db.put(ApiKeys, key.id, storedKey(key))
        })
      ),
      findKeyByHash: Effect.fn("ProjectsRepo.findKeyByHash")((hash: string) =>
        store.run((db) => {
          const key = db.all(ApiKeys).find((k) => k.key_hash === hash && k.revoked_at === null)
          const project = key === undefined ? undefined : db.get(ProjectRows, key.project_id)
          return key === undefined || project === undefined ? Option.none() : Option.some({ key, project })
        })
      ),
      listKeys: Effect.fn("ProjectsRepo.listKeys")((projectId: string) =>
        store.run((db) => oldestFirst(db.all(ApiKeys).filter((k) => k.project_id === projectId)))
      ),
      revokeKey: Effect.fn("ProjectsRepo.revokeKey")((projectId: string, keyId: string, at: string) =>
        store.run((db): Option.Option<ApiKey> => {
          const key = db.get(ApiKeys, keyId)
          if (key === undefined || key.project_id !== projectId || key.revoked_at !== null) return Option.none()
          const revoked = storedKey({ ...key, revoked_at: at })
          db.put(ApiKeys, keyId, revoked)
          return Option.some(revoked)
        }).pipe(Effect.flatMap(signal))
      ),
      keyChanges: Stream.fromPubSub(changes),
      // Memory transactions already run one at a time.
      lockBootstrap: Effect.void
    })
  })
)

