/** The behaviour every `ProjectSecretsRepo` adapter owes, written once. */
import { assert, layer } from "@effect/vitest"
import { Effect, type Layer } from "effect"
import type { ProjectsRepo } from "../../projects/ProjectsRepo.ts"
import { ProjectSecretsRepo } from "../../projects/ProjectSecretsRepo.ts"
import { at, givenProject, listenTo } from "./fixtures.ts"

export const projectSecretsRepoConformance = <E>(name: string, storage: Layer.Layer<ProjectSecretsRepo | ProjectsRepo, E>): void =>
  layer(storage, { excludeTestServices: true })(name, (it) => {
    it.effect("puts, replaces, lists by name and deletes, only within the project", () =>
      Effect.gen(function*() {
        const repo = yield* ProjectSecretsRepo
        const a = yield* givenProject()
        const b = yield* givenProject()
        const first = { project_id: a.id, name: "TOKEN", ciphertext: "c1", created_at: at(0), updated_at: at(0) }
        assert.deepStrictEqual(yield* repo.put(first), first)
        yield* repo.put({ project_id: a.id, name: "API_KEY", ciphertext: "c2", created_at: at(1), updated_at: at(1) })
        yield* repo.put({ project_id: b.id, name: "TOKEN", ciphertext: "other", created_at: at(1), updated_at: at(1) })
        const replaced = yield* repo.put({ ...first, ciphertext: "c3", created_at: at(5), updated_at: at(5) })
        assert.deepStrictEqual(replaced, { ...first, ciphertext: "c3", updated_at: at(5) })
        const listed = yield* repo.list(a.id)
        assert.deepStrictEqual(listed.map((s) => [s.name, s.ciphertext]), [["API_KEY", "c2"], ["TOKEN", "c3"]])
        assert.isFalse(yield* repo.delete(a.id, "MISSING"))
        assert.isTrue(yield* repo.delete(a.id, "TOKEN"))
        assert.deepStrictEqual((yield* repo.list(a.id)).map((s) => s.name), ["API_KEY"])
        assert.deepStrictEqual((yield* repo.list(b.id)).map((s) => s.ciphertext), ["other"])
      }))

    it.effect("signals changes once a put or a delete is done", () =>
      Effect.gen(function*() {
        const repo = yield* ProjectSecretsRepo
        const project = yield* givenProject()
        const signals = yield* listenTo(repo.changes)
        yield* repo.put({ project_id: project.id, name: "TOKEN", ciphertext: "c1", created_at: at(0), updated_at: at(0) })
        yield* signals.next
        assert.isTrue(yield* repo.delete(project.id, "TOKEN"))
        yield* signals.next
        yield* signals.stop
      }))
  })
