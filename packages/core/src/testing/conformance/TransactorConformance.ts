/**
 * What `Transactor.withTransaction` owes, whichever store is behind it: all
 * or nothing, also on interruption; a nested transaction is a savepoint.
 */
import { assert, layer } from "@effect/vitest"
import { Deferred, Effect, Fiber, type Layer, Option } from "effect"
import { ProjectsRepo } from "../../projects/ProjectsRepo.ts"
import { Duplicate } from "../../ports/StorageError.ts"
import { Transactor } from "../../ports/Transactor.ts"
import { WorkflowsRepo } from "../../workflows/WorkflowsRepo.ts"
import { at, makeProject, makeWorkflow } from "./fixtures.ts"

class Boom {
  readonly _tag = "Boom"
}

export const transactorConformance = <E>(
  name: string,
  storage: Layer.Layer<Transactor | ProjectsRepo | WorkflowsRepo, E>
): void =>
  layer(storage, { excludeTestServices: true })(name, (it) => {
    const exists = (id: string) => ProjectsRepo.use((repo) => Effect.map(repo.findById(id), Option.isSome))

    it.effect("commits everything a successful transaction wrote", () =>
      Effect.gen(function*() {
        const { withTransaction } = yield* Transactor
        const projects = yield* ProjectsRepo
        const workflows = yield* WorkflowsRepo
        const project = makeProject()
        const workflow = makeWorkflow(project.id)
        const result = yield* withTransaction(Effect.gen(function*() {
          yield* projects.insert(project)
          yield* workflows.insert(workflow)
          return "done"
        }))
        assert.strictEqual(result, "done")
        assert.isTrue(yield* exists(project.id))
        assert.isTrue(Option.isSome(yield* workflows.findById(project.id, workflow.id)))
      }))

    it.effect("leaves nothing behind when the transaction fails", () =>
      Effect.gen(function*() {
        const { withTransaction } = yield* Transactor
        const projects = yield* ProjectsRepo
        const workflows = yield* WorkflowsRepo
        const project = makeProject()
        const error = yield* Effect.flip(withTransaction(Effect.gen(function*() {
          yield* projects.insert(project)
          yield* workflows.insert(makeWorkflow(project.id, { name: "Same" }))
          // The second insert collides: the first must go too.
          yield* workflows.insert(makeWorkflow(project.id, { name: "SAME" }))
        })))
        assert.deepStrictEqual(error, new Duplicate({ field: "name" }))
        assert.isFalse(yield* exists(project.id))
      }))

    it.effect("leaves nothing behind when the transaction dies", () =>
      Effect.gen(function*() {
        const { withTransaction } = yield* Transactor
        const projects = yield* ProjectsRepo
        const project = makeProject()
        yield* Effect.exit(withTransaction(Effect.andThen(projects.insert(project), Effect.die("crash"))))
        assert.isFalse(yield* exists(project.id))
      }))

    it.effect("leaves nothing behind when the transaction is interrupted", () =>
      Effect.gen(function*() {
        const { withTransaction } = yield* Transactor
        const projects = yield* ProjectsRepo
        const project = makeProject()
        const written = yield* Deferred.make<void>()
        const fiber = yield* Effect.forkChild(withTransaction(Effect.gen(function*() {
          yield* projects.insert(project)
          yield* Deferred.succeed(written, undefined)
          return yield* Effect.never
        })))
        yield* Deferred.await(written)
        yield* Fiber.interrupt(fiber)
        assert.isFalse(yield* exists(project.id))
      }))

    it.effect("undoes only a failed nested transaction when the outer one recovers", () =>
      Effect.gen(function*() {
        const { withTransaction } = yield* Transactor
        const projects = yield* ProjectsRepo
        const outer = makeProject()
        const inner = makeProject()
        yield* withTransaction(Effect.gen(function*() {
          yield* projects.insert(outer)
          yield* withTransaction(Effect.andThen(projects.insert(inner), Effect.fail(new Boom()))).pipe(
            Effect.catchTag("Boom", () => Effect.void)
          )
        }))
        assert.isTrue(yield* exists(outer.id))
        assert.isFalse(yield* exists(inner.id))
      }))

    it.effect("rolls back a nested transaction's writes with the outer one", () =>
      Effect.gen(function*() {
        const { withTransaction } = yield* Transactor
        const projects = yield* ProjectsRepo
        const inner = makeProject()
        yield* Effect.flip(withTransaction(Effect.gen(function*() {
          yield* withTransaction(projects.insert(inner))
          return yield* Effect.fail(new Boom())
        })))
        assert.isFalse(yield* exists(inner.id))
      }))

    it.effect("keeps concurrent nested transactions of one transaction apart: a failed one undoes only its own", () =>
      Effect.gen(function*() {
        const { withTransaction } = yield* Transactor
        const projects = yield* ProjectsRepo
        const kept = makeProject()
        const undone = makeProject()
        yield* withTransaction(Effect.all([
          withTransaction(Effect.gen(function*() {
            yield* projects.insert(undone)
            for (let i = 0; i < 5; i++) yield* Effect.yieldNow
            return yield* Effect.fail(new Boom())
          })).pipe(Effect.catchTag("Boom", () => Effect.void)),
          withTransaction(projects.insert(kept))
        ], { concurrency: "unbounded", discard: true }))
        assert.isTrue(yield* exists(kept.id))
        assert.isFalse(yield* exists(undone.id))
      }))

    it.effect("does not let a failing transaction undo another's later write to the same row", () =>
      Effect.gen(function*() {
        const { withTransaction } = yield* Transactor
        const projects = yield* ProjectsRepo
        const project = makeProject()
        yield* projects.insert(project)
        const written = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        const failing = yield* Effect.forkChild(withTransaction(Effect.gen(function*() {
          yield* projects.setDisabled(project.id, true, at(1))
          yield* Deferred.succeed(written, undefined)
          yield* Deferred.await(release)
          return yield* Effect.fail(new Boom())
        })))
        yield* Deferred.await(written)
        // Waits for the first transaction (Postgres: on the row lock), then writes.
        const second = yield* Effect.forkChild(withTransaction(projects.setDisabled(project.id, false, at(2))))
        yield* Effect.sleep("50 millis")
        yield* Deferred.succeed(release, undefined)
        yield* Fiber.await(failing)
        yield* Fiber.join(second)
        assert.deepStrictEqual(yield* projects.findById(project.id), Option.some({ ...project, updated_at: at(2) }))
      }))

    it.effect("runs concurrent transactions without losing either's writes", () =>
      Effect.gen(function*() {
        const { withTransaction } = yield* Transactor
        const projects = yield* ProjectsRepo
        const batch = Array.from({ length: 10 }, () => makeProject())
        yield* Effect.forEach(batch, (project, i) =>
          withTransaction(Effect.andThen(projects.insert(project), i % 2 === 0 ? Effect.void : Effect.fail(new Boom()))).pipe(
            Effect.ignore
          ), { concurrency: "unbounded" })
        const stored = yield* Effect.forEach(batch, (p) => exists(p.id))
        assert.deepStrictEqual(stored, batch.map((_, i) => i % 2 === 0))
      }))
  })
