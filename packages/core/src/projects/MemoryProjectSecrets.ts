/** `ProjectSecretsRepo` in memory, with the keys the Postgres schema enforces. */
import { Effect, Layer, PubSub, Stream } from "effect"
import { ProjectSecretsRepo } from "./ProjectSecretsRepo.ts"
import type { Project } from "./Project.ts"
import type { ProjectSecretRecord } from "./ProjectSecret.ts"
import { byteOrder, timestamp, violation } from "../ports/MemoryRows.ts"
import { MemoryStore, memoryTable } from "../ports/MemoryStore.ts"

const Secrets = memoryTable<ProjectSecretRecord>("project_secrets")
const Projects = memoryTable<Project>("projects")

const keyOf = (projectId: string, name: string) => `${projectId}\u0000${name}`

export const layerMemoryProjectSecretsRepo = Layer.effect(
  ProjectSecretsRepo,
  Effect.gen(function*() {
    const store = yield* MemoryStore
    const changes = yield* PubSub.unbounded<void>()
    const signal = <A>(result: A) => Effect.as(PubSub.publish(changes, undefined), result)
    return ProjectSecretsRepo.of({
      put: Effect.fn("ProjectSecretsRepo.put")((secret: ProjectSecretRecord) =>
        store.run((db) => {
          if (db.get(Projects, secret.project_id) === undefined) violation(`no project ${secret.project_id}`)
          const key = keyOf(secret.project_id, secret.name)
          const current = db.get(Secrets, key)
          const row: ProjectSecretRecord = {
            ...secret,
            created_at: timestamp(current?.created_at ?? secret.created_at),
            updated_at: timestamp(secret.updated_at)
          }
          db.put(Secrets, key, row)
          return row
        }).pipe(Effect.flatMap(signal))
      ),
      list: Effect.fn("ProjectSecretsRepo.list")((projectId: string) =>
        store.run((db) => db.all(Secrets).filter((s) => s.project_id === projectId).sort((a, b) => byteOrder(a.name, b.name)))
      ),
      delete: Effect.fn("ProjectSecretsRepo.delete")((projectId: string, name: string) =>
        store.run((db) => db.remove(Secrets, keyOf(projectId, name))).pipe(Effect.flatMap(signal))
      ),
      changes: Stream.fromPubSub(changes)
    })
  })
)
