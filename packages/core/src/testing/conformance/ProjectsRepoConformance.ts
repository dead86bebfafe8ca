/** The behaviour every `ProjectsRepo` adapter owes, written once and run against each adapter. */
import { assert, layer } from "@effect/vitest"
import { Effect, type Layer, Option } from "effect"
import { ProjectsRepo } from "../../projects/ProjectsRepo.ts"
import { Transactor } from "../../ports/Transactor.ts"
import { at, dies, givenProject, listenTo, makeKey, makeProject, uniqueId } from "./fixtures.ts"

export const projectsRepoConformance = <E>(name: string, storage: Layer.Layer<ProjectsRepo | Transactor, E>): void =>
  layer(storage, { excludeTestServices: true })(name, (it) => {
    it.effect("stores a project exactly as given", () =>
      Effect.gen(function*() {
        const repo = yield* ProjectsRepo
        const project = makeProject({ name: "Ünïcode & Co", created_at: at(1), updated_at: at(2) })
        yield* repo.insert(project)
        assert.deepStrictEqual(yield* repo.findById(project.id), Option.some(project))
        assert.isTrue(Option.isNone(yield* repo.findById("prj_missing")))
      }))

    it.effect("lists projects oldest first", () =>
      Effect.gen(function*() {
        const repo = yield* ProjectsRepo
        const newer = yield* givenProject({ created_at: at(20) })
        const older = yield* givenProject({ created_at: at(10) })
        const ids = (yield* repo.list).map((p) => p.id).filter((id) => id === newer.id || id === older.id)
        assert.deepStrictEqual(ids, [older.id, newer.id])
      }))

    it.effect("disables and re-enables a project", () =>
      Effect.gen(function*() {
        const repo = yield* ProjectsRepo
        const project = yield* givenProject()
        const disabled = yield* repo.setDisabled(project.id, true, at(5))
        assert.deepStrictEqual(disabled, Option.some({ ...project, disabled: true, updated_at: at(5) }))
        assert.deepStrictEqual(yield* repo.findById(project.id), disabled)
        const enabled = yield* repo.setDisabled(project.id, false, at(6))
        assert.deepStrictEqual(enabled, Option.some({ ...project, disabled: false, updated_at: at(6) }))
        assert.isTrue(Option.isNone(yield* repo.setDisabled("prj_missing", true, at(7))))
      }))

    it.effect("finds a live key by its hash, with its project", () =>
      Effect.gen(function*() {
        const repo = yield* ProjectsRepo
        const project = yield* givenProject()
        const key = makeKey(project.id, { created_at: at(3) })
        yield* repo.insertKey(key)
        assert.deepStrictEqual(yield* repo.findKeyByHash(key.key_hash), Option.some({ key, project }))
        assert.isTrue(Option.isNone(yield* repo.findKeyByHash("0".repeat(64))))
      }))

    it.effect("shows a disabled project behind its key, so the caller can refuse it", () =>
      Effect.gen(function*() {
        const repo = yield* ProjectsRepo
        const project = yield* givenProject()
        const key = makeKey(project.id)
        yield* repo.insertKey(key)
        yield* repo.setDisabled(project.id, true, at(9))
        const found = yield* repo.findKeyByHash(key.key_hash)
        assert.isTrue(Option.isSome(found) && found.value.project.disabled)
      }))

    it.effect("revokes a key once; a revoked key is no longer found by hash", () =>
      Effect.gen(function*() {
        const repo = yield* ProjectsRepo
        const project = yield* givenProject()
        const key = makeKey(project.id)
        yield* repo.insertKey(key)
        const revoked = yield* repo.revokeKey(project.id, key.id, at(4))
        assert.deepStrictEqual(revoked, Option.some({ ...key, revoked_at: at(4) }))
        assert.isTrue(Option.isNone(yield* repo.findKeyByHash(key.key_hash)))
        assert.isTrue(Option.isNone(yield* repo.revokeKey(project.id, key.id, at(5))), "already revoked")
        assert.isTrue(Option.isNone(yield* repo.revokeKey(project.id, "key_missing", at(5))))
      }))

    it.effect("signals key changes once a revoke or a disable is done", () =>
      Effect.gen(function*() {
        const repo = yield* ProjectsRepo
        const project = yield* givenProject()
        const key = makeKey(project.id)
        yield* repo.insertKey(key)
        const signals = yield* listenTo(repo.keyChanges)

        yield* repo.revokeKey(project.id, key.id, at(1))
        yield* signals.next
        yield* repo.setDisabled(project.id, true, at(2))
        yield* signals.next
        yield* signals.stop
      }))

    it.effect("keeps keys to their project", () =>
      Effect.gen(function*() {
        const repo = yield* ProjectsRepo
        const a = yield* givenProject()
        const b = yield* givenProject()
        const first = makeKey(a.id, { created_at: at(1) })
        const second = makeKey(a.id, { created_at: at(2) })
        yield* repo.insertKey(second)
        yield* repo.insertKey(first)
        yield* repo.revokeKey(a.id, second.id, at(3))
        assert.isTrue(Option.isNone(yield* repo.revokeKey(b.id, first.id, at(3))), "B cannot revoke A's key")
        assert.deepStrictEqual(yield* repo.listKeys(a.id), [first, { ...second, revoked_at: at(3) }])
        assert.deepStrictEqual(yield* repo.listKeys(b.id), [])
      }))

    it.effect("refuses a key for a missing project or with a hash already stored", () =>
      Effect.gen(function*() {
        const repo = yield* ProjectsRepo
        const project = yield* givenProject()
        const key = makeKey(project.id)
        yield* repo.insertKey(key)
        yield* dies(repo.insertKey(makeKey(project.id, { key_hash: key.key_hash })))
        yield* dies(repo.insertKey(makeKey("prj_missing")))
      }))

    it.effect("bootstrap lock: transactions that each create a project unless one exists, run at once, create one", () =>
      Effect.gen(function*() {
        const repo = yield* ProjectsRepo
        const tx = yield* Transactor
        const name = uniqueId("bootstrap")
        const named = Effect.map(repo.list, (projects) => projects.filter((p) => p.name === name))
        // What every starting host does: look, and create the project when none is there.
        const bootstrap = tx.withTransaction(Effect.gen(function*() {
          yield* repo.lockBootstrap
          if ((yield* named).length === 0) yield* repo.insert(makeProject({ name }))
        }))
        yield* Effect.all(Array.from({ length: 4 }, () => bootstrap), { concurrency: "unbounded", discard: true })
        assert.strictEqual((yield* named).length, 1)
      }))
  })
