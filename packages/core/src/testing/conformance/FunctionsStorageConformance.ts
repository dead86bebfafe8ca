/**
 * The behaviour every adapter of the functions ports (`FunctionsRepo`,
 * `FunctionInvocationsRepo`) owes, written once and run against each adapter.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect, type Layer, Option } from "effect"
import type {
  FunctionDeploymentRecord,
  FunctionInvocationRecord,
  FunctionRecord,
  FunctionSecretRecord
} from "../../functions/Function.ts"
import { FunctionInvocationsRepo, FunctionsRepo } from "../../functions/FunctionsRepo.ts"
import { ProjectsRepo } from "../../projects/ProjectsRepo.ts"
import { Duplicate } from "../../ports/StorageError.ts"
import { Transactor } from "../../ports/Transactor.ts"
import { at, dies, givenProject, listenTo, uniqueId } from "./fixtures.ts"

export type FunctionsStoragePorts = Transactor | ProjectsRepo | FunctionsRepo | FunctionInvocationsRepo

export const makeFunction = (projectId: string, overrides: Partial<FunctionRecord> = {}): FunctionRecord => {
  const id = overrides.id ?? uniqueId("fn")
  return {
    id,
    project_id: projectId,
    name: `Function ${id}`,
    slug: `slug-${id.toLowerCase().replace(/[^a-z0-9-]/g, "-")}`,
    description: null,
    code: "async function handler() { return new Response('ok') }",
    function_type: "edge_worker",
    status: "draft",
    version: 0,
    last_deployed_at: null,
    last_deploy_error: null,
    runtime_config: { timeout: 30, memory: 128 },
    created_by_id: "key_1",
    public_endpoint: false,
    invoke_response_mode: "passthrough",
    lock_version: 0,
    deployed_deployment_id: null,
    created_at: at(0),
    updated_at: at(0),
    ...overrides
  }
}

export const makeDeployment = (
  fn: FunctionRecord,
  overrides: Partial<FunctionDeploymentRecord> = {}
): FunctionDeploymentRecord => ({
  id: uniqueId("dep"),
  function_id: fn.id,
  project_id: fn.project_id,
  version: fn.version + 1,
  status: "deploying",
  code_sha256: "0".repeat(64),
  code: fn.code,
  runtime_config: fn.runtime_config,
  started_at: at(1000),
  finished_at: null,
  error: null,
  ...overrides
})

export const makeInvocation = (
  projectId: string,
  functionId: string,
  overrides: Partial<FunctionInvocationRecord> = {}
): FunctionInvocationRecord => ({
  id: uniqueId("inv"),
  project_id: projectId,
  function_id: functionId,
  status_code: 200,
  duration_ms: 3,
  request_body: "{\"n\":1}",
  response_body: "ok",
  error_message: null,
  source: "api",
  console_logs: [{ level: "log", message: "hello", logged_at: at(0), stack: null }],
  created_at: at(0),
  ...overrides
})

const secret = (functionId: string, name: string, overrides: Partial<FunctionSecretRecord> = {}): FunctionSecretRecord => ({
  function_id: functionId,
  name,
  type: "text",
  ciphertext: `v1.cipher.${name}`,
  created_at: at(0),
  updated_at: at(0),
  ...overrides
})

const ids = (items: ReadonlyArray<{ readonly id: string }>) => items.map((i) => i.id)

export const functionsStorageConformance = <E>(name: string, storage: Layer.Layer<FunctionsStoragePorts, E>): void => {
  describe(name, () => {
    layer(storage, { excludeTestServices: true })("FunctionsRepo", (it) => {
      /** A project with one stored function. */
      const givenFunction = (overrides: Partial<FunctionRecord> = {}) =>
        Effect.gen(function*() {
          const project = yield* givenProject()
          const fn = makeFunction(project.id, overrides)
          yield* (yield* FunctionsRepo).insert(fn)
          return { project, fn }
        })

      it.effect("insert and findById round-trip, scoped by project; an unknown project is a defect", () =>
        Effect.gen(function*() {
          const repo = yield* FunctionsRepo
          const { fn, project } = yield* givenFunction({ description: "d", runtime_config: { timeout: 5, memory: 128 } })
          assert.deepStrictEqual(yield* repo.findById(project.id, fn.id), Option.some(fn))
          const other = yield* givenProject()
          assert.isTrue(Option.isNone(yield* repo.findById(other.id, fn.id)))
          yield* dies(repo.insert(makeFunction("prj_missing")))
        }))

      it.effect("slugs are unique per project (Duplicate), free across projects", () =>
        Effect.gen(function*() {
          const repo = yield* FunctionsRepo
          const { fn, project } = yield* givenFunction({ slug: "shared" })
          const clash = yield* Effect.flip(repo.insert(makeFunction(project.id, { slug: "shared" })))
          assert.deepStrictEqual(clash, new Duplicate({ field: "slug" }))
          assert.isTrue(yield* repo.slugTaken(project.id, "shared"))
          const other = yield* givenProject()
          yield* repo.insert(makeFunction(other.id, { slug: "shared" }))
          assert.isFalse(yield* repo.slugTaken(project.id, "free"))
          // An update onto a taken slug collides too.
          const second = makeFunction(project.id, { slug: "second" })
          yield* repo.insert(second)
          const onUpdate = yield* Effect.flip(repo.update({ ...second, slug: fn.slug, lock_version: 1 }, 0))
          assert.deepStrictEqual(onUpdate, new Duplicate({ field: "slug" }))
        }))

      it.effect("lists newest first by (created_at, id) in cursor and page mode", () =>
        Effect.gen(function*() {
          const repo = yield* FunctionsRepo
          const project = yield* givenProject()
          const stem = uniqueId("fn")
          const rows = [
            makeFunction(project.id, { id: `${stem}-a`, created_at: at(1000) }),
            makeFunction(project.id, { id: `${stem}-b`, created_at: at(2000) }),
            makeFunction(project.id, { id: `${stem}-c`, created_at: at(2000) }),
            makeFunction(project.id, { id: `${stem}-d`, created_at: at(3000) })
          ]
          yield* Effect.forEach(rows, repo.insert, { discard: true })
          const [a, b, c, d] = rows
          const first = yield* repo.list(project.id, { mode: "cursor", limit: 2 })
          assert.deepStrictEqual(ids(first.items), [d!.id, c!.id])
          assert.isTrue(first.hasMore)
          const second = yield* repo.list(project.id, {
            mode: "cursor",
            limit: 2,
            after: { sortKey: c!.created_at, id: c!.id }
          })
          assert.deepStrictEqual(ids(second.items), [b!.id, a!.id])
          assert.isFalse(second.hasMore)
          const back = yield* repo.list(project.id, { mode: "cursor", limit: 2, before: { sortKey: b!.created_at, id: b!.id } })
          assert.deepStrictEqual(ids(back.items), [d!.id, c!.id])
          const page = yield* repo.list(project.id, { mode: "page", page: 2, perPage: 3 })
          assert.deepStrictEqual(ids(page.items), [a!.id])
          assert.strictEqual(page.total, 4)
        }))

      it.effect("update is a compare-and-set on lock_version over the editable fields", () =>
        Effect.gen(function*() {
          const repo = yield* FunctionsRepo
          const { fn } = yield* givenFunction()
          const next: FunctionRecord = {
            ...fn,
            name: "Renamed",
            code: "export default { fetch() { return new Response('2') } }",
            public_endpoint: true,
            invoke_response_mode: "wrapped",
            runtime_config: { timeout: 9, memory: 128 },
            lock_version: 1,
            updated_at: at(5000),
            // Not editable through update: these stay as stored.
            status: "deployed",
            version: 7
          }
          const stored = yield* repo.update(next, 0)
          assert.isTrue(Option.isSome(stored))
          const value = Option.getOrThrow(stored)
          assert.strictEqual(value.name, "Renamed")
          assert.strictEqual(value.code, next.code)
          assert.strictEqual(value.lock_version, 1)
          assert.strictEqual(value.status, "draft")
          assert.strictEqual(value.version, 0)
          assert.deepStrictEqual(value.runtime_config, { timeout: 9, memory: 128 })
          assert.isTrue(Option.isNone(yield* repo.update({ ...next, lock_version: 2 }, 0)), "stale")
          assert.isTrue(Option.isNone(yield* repo.update({ ...next, project_id: "prj_other" }, 1)), "other project")
        }))

      it.effect("startDeploy moves to deploying once and records the deployment; a second start finds it busy", () =>
        Effect.gen(function*() {
          const repo = yield* FunctionsRepo
          const { fn, project } = yield* givenFunction()
          const deployment = makeDeployment(fn)
          const started = yield* repo.startDeploy(project.id, deployment)
          assert.strictEqual(Option.getOrThrow(started).status, "deploying")
          assert.strictEqual(Option.getOrThrow(started).lock_version, 1)
          assert.deepStrictEqual(yield* repo.findDeployment(fn.id, deployment.id), Option.some(deployment))
          assert.isTrue(Option.isNone(yield* repo.startDeploy(project.id, makeDeployment(fn))))
          assert.isTrue(Option.isNone(yield* repo.startDeploy(project.id, makeDeployment({ ...fn, id: "fn_missing" }))))
          const other = yield* givenProject()
          assert.isTrue(Option.isNone(yield* repo.startDeploy(other.id, makeDeployment(fn))))
          assert.isTrue((yield* repo.listDeploying).some((d) => d.id === deployment.id))
        }))

      it.effect("concurrent deploy starts: exactly one wins", () =>
        Effect.gen(function*() {
          const repo = yield* FunctionsRepo
          const tx = yield* Transactor
          const { fn, project } = yield* givenFunction()
          const results = yield* Effect.forEach(
            Array.from({ length: 5 }, () => makeDeployment(fn)),
            (d) => tx.withTransaction(repo.startDeploy(project.id, d)),
            { concurrency: "unbounded" }
          )
          assert.strictEqual(results.filter(Option.isSome).length, 1)
        }))

      it.effect("finishDeploy Deployed: version, serving deployment, older snapshots dropped; repeated: false", () =>
        Effect.gen(function*() {
          const repo = yield* FunctionsRepo
          const { fn, project } = yield* givenFunction()
          const one = makeDeployment(fn, { version: 1 })
          yield* repo.startDeploy(project.id, one)
          assert.isTrue(yield* repo.finishDeploy(fn.id, one.id, { _tag: "Deployed", at: at(2000) }))
          assert.isFalse(yield* repo.finishDeploy(fn.id, one.id, { _tag: "Deployed", at: at(2500) }))
          const afterOne = Option.getOrThrow(yield* repo.findById(project.id, fn.id))
          assert.strictEqual(afterOne.status, "deployed")
          assert.strictEqual(afterOne.version, 1)
          assert.strictEqual(afterOne.last_deployed_at, at(2000))
          assert.strictEqual(afterOne.deployed_deployment_id, one.id)
          assert.strictEqual(afterOne.lock_version, 2)
          assert.strictEqual(afterOne.updated_at, at(2000))

          const two = makeDeployment(afterOne, { version: 2, started_at: at(3000), code: "second" })
          yield* repo.startDeploy(project.id, two)
          assert.isTrue(yield* repo.finishDeploy(fn.id, two.id, { _tag: "Deployed", at: at(4000) }))
          const oldOne = Option.getOrThrow(yield* repo.findDeployment(fn.id, one.id))
          assert.strictEqual(oldOne.code, null, "a superseded snapshot is dropped")
          assert.strictEqual(oldOne.status, "deployed")
          const current = Option.getOrThrow(yield* repo.findDeployment(fn.id, two.id))
          assert.strictEqual(current.code, "second")
          assert.strictEqual(current.finished_at, at(4000))
          assert.isFalse((yield* repo.listDeploying).some((d) => d.function_id === fn.id))
        }))

      it.effect("finishDeploy Failed: error recorded, the serving version and its snapshot untouched", () =>
        Effect.gen(function*() {
          const repo = yield* FunctionsRepo
          const { fn, project } = yield* givenFunction()
          const good = makeDeployment(fn, { version: 1 })
          yield* repo.startDeploy(project.id, good)
          yield* repo.finishDeploy(fn.id, good.id, { _tag: "Deployed", at: at(2000) })
          const bad = makeDeployment({ ...fn, version: 1 }, { version: 2, started_at: at(3000) })
          yield* repo.startDeploy(project.id, bad)
          assert.isTrue(yield* repo.finishDeploy(fn.id, bad.id, { _tag: "Failed", at: at(4000), error: "SyntaxError: x" }))
          const stored = Option.getOrThrow(yield* repo.findById(project.id, fn.id))
          assert.strictEqual(stored.status, "error")
          assert.strictEqual(stored.last_deploy_error, "SyntaxError: x")
          assert.strictEqual(stored.version, 1)
          assert.strictEqual(stored.deployed_deployment_id, good.id)
          assert.strictEqual(stored.lock_version, 4)
          const failed = Option.getOrThrow(yield* repo.findDeployment(fn.id, bad.id))
          assert.deepStrictEqual(
            { status: failed.status, error: failed.error, code: failed.code, finished_at: failed.finished_at },
            { status: "failed", error: "SyntaxError: x", code: null, finished_at: at(4000) }
          )
          assert.strictEqual(Option.getOrThrow(yield* repo.findDeployment(fn.id, good.id)).code, fn.code)
          const listed = yield* repo.listDeployments(project.id, fn.id, { mode: "cursor", limit: 10 })
          assert.deepStrictEqual(ids(listed.items), [bad.id, good.id])
          const paged = yield* repo.listDeployments(project.id, fn.id, { mode: "page", page: 1, perPage: 1 })
          assert.deepStrictEqual(ids(paged.items), [bad.id])
          assert.strictEqual(paged.total, 2)
          const elsewhere = yield* givenProject()
          assert.deepStrictEqual((yield* repo.listDeployments(elsewhere.id, fn.id, { mode: "cursor", limit: 10 })).items, [])
        }))

      it.effect("signals once a write that changes an invocation target is done", () =>
        Effect.gen(function*() {
          const repo = yield* FunctionsRepo
          const { fn } = yield* givenFunction()
          const signals = yield* listenTo(repo.changes)
          yield* repo.update({ ...fn, name: "Renamed", lock_version: fn.lock_version + 1 }, fn.lock_version)
          yield* signals.next
          const deployment = makeDeployment(fn)
          yield* repo.startDeploy(fn.project_id, deployment)
          yield* signals.next
          yield* repo.finishDeploy(fn.id, deployment.id, { _tag: "Deployed", at: at(2000) })
          yield* signals.next
          yield* repo.putSecret(secret(fn.id, "TOKEN"))
          yield* signals.next
          yield* repo.deleteSecret(fn.id, "TOKEN")
          yield* signals.next
          yield* repo.delete(fn.project_id, fn.id)
          yield* signals.next
          yield* signals.stop
        }))

      it.effect("secrets: put overwrites (keeping created_at), list by name, delete; invocation target carries them", () =>
        Effect.gen(function*() {
          const repo = yield* FunctionsRepo
          const { fn, project } = yield* givenFunction()
          yield* repo.putSecret(secret(fn.id, "ZETA"))
          yield* repo.putSecret(secret(fn.id, "ALPHA", { type: "json" }))
          yield* repo.putSecret(secret(fn.id, "ZETA", { ciphertext: "v1.rotated", updated_at: at(9000), created_at: at(9000) }))
          const listed = yield* repo.listSecrets(fn.id)
          assert.deepStrictEqual(listed.map((s) => [s.name, s.type, s.ciphertext]), [
            ["ALPHA", "json", "v1.cipher.ALPHA"],
            ["ZETA", "text", "v1.rotated"]
          ])
          assert.strictEqual(listed[1]!.created_at, at(0))
          assert.strictEqual(listed[1]!.updated_at, at(9000))

          const target = Option.getOrThrow(yield* repo.findInvocationTarget(fn.id))
          assert.deepStrictEqual(target.function, fn)
          assert.deepStrictEqual(target.secrets, listed)
          assert.isFalse(target.projectDisabled)
          yield* (yield* ProjectsRepo).setDisabled(project.id, true, at(100))
          assert.isTrue(Option.getOrThrow(yield* repo.findInvocationTarget(fn.id)).projectDisabled)
          assert.isTrue(Option.isNone(yield* repo.findInvocationTarget("fn_missing")))

          assert.isTrue(yield* repo.deleteSecret(fn.id, "ZETA"))
          assert.isFalse(yield* repo.deleteSecret(fn.id, "ZETA"))
          assert.deepStrictEqual((yield* repo.listSecrets(fn.id)).map((s) => s.name), ["ALPHA"])
          yield* dies(repo.putSecret(secret("fn_missing", "X")))
        }))

      it.effect("delete takes deployments and secrets along, scoped by project", () =>
        Effect.gen(function*() {
          const repo = yield* FunctionsRepo
          const { fn, project } = yield* givenFunction()
          const deployment = makeDeployment(fn)
          yield* repo.startDeploy(project.id, deployment)
          yield* repo.putSecret(secret(fn.id, "KEY"))
          const other = yield* givenProject()
          assert.isFalse(yield* repo.delete(other.id, fn.id))
          assert.isTrue(yield* repo.delete(project.id, fn.id))
          assert.isFalse(yield* repo.delete(project.id, fn.id))
          assert.isTrue(Option.isNone(yield* repo.findDeployment(fn.id, deployment.id)))
          assert.deepStrictEqual(yield* repo.listSecrets(fn.id), [])
          assert.isFalse((yield* repo.listDeploying).some((d) => d.id === deployment.id))
        }))

      it.effect("a rolled-back transaction leaves no function, deployment or secret behind", () =>
        Effect.gen(function*() {
          const repo = yield* FunctionsRepo
          const tx = yield* Transactor
          const project = yield* givenProject()
          const fn = makeFunction(project.id)
          const failed = yield* tx.withTransaction(Effect.gen(function*() {
            yield* repo.insert(fn)
            yield* repo.startDeploy(project.id, makeDeployment(fn))
            return yield* Effect.fail("boom" as const)
          })).pipe(Effect.flip)
          assert.strictEqual(failed, "boom")
          assert.isTrue(Option.isNone(yield* repo.findById(project.id, fn.id)))
        }))

      it.effect("the host secret key: the first candidate wins", () =>
        Effect.gen(function*() {
          const repo = yield* FunctionsRepo
          const first = yield* repo.secretKey(`candidate-${crypto.randomUUID()}`)
          assert.strictEqual(yield* repo.secretKey(`candidate-${crypto.randomUUID()}`), first)
        }))
    })

    layer(storage, { excludeTestServices: true })("FunctionInvocationsRepo", (it) => {
      it.effect("lists newest first with the total, filters success and failed, limits", () =>
        Effect.gen(function*() {
          const repo = yield* FunctionInvocationsRepo
          const project = yield* givenProject()
          const functionId = uniqueId("fn")
          const stem = uniqueId("inv")
          const rows = [
            makeInvocation(project.id, functionId, { id: `${stem}-1`, created_at: at(1000) }),
            makeInvocation(project.id, functionId, { id: `${stem}-2`, created_at: at(2000), status_code: 500, error_message: "boom" }),
            makeInvocation(project.id, functionId, { id: `${stem}-3`, created_at: at(2000), status_code: 404 }),
            makeInvocation(project.id, functionId, { id: `${stem}-4`, created_at: at(3000), status_code: 302 }),
            makeInvocation(project.id, uniqueId("fn"), { created_at: at(4000) })
          ]
          yield* Effect.forEach(rows, repo.insert, { discard: true })
          const all = yield* repo.list(project.id, functionId, { limit: 2 })
          assert.deepStrictEqual(ids(all.items), [`${stem}-4`, `${stem}-3`])
          assert.strictEqual(all.total, 4)
          assert.deepStrictEqual(all.items[0], rows[3])
          const failed = yield* repo.list(project.id, functionId, { outcome: "failed", limit: 10 })
          assert.deepStrictEqual(ids(failed.items), [`${stem}-3`, `${stem}-2`])
          assert.strictEqual(failed.total, 2)
          const success = yield* repo.list(project.id, functionId, { outcome: "success", limit: 10 })
          assert.deepStrictEqual(ids(success.items), [`${stem}-4`, `${stem}-1`])
          const other = yield* givenProject()
          assert.strictEqual((yield* repo.list(other.id, functionId, { limit: 10 })).total, 0)
        }))

      it.effect("insertMany writes a batch in one go, as insert would each record", () =>
        Effect.gen(function*() {
          const repo = yield* FunctionInvocationsRepo
          const project = yield* givenProject()
          const functionId = uniqueId("fn")
          const batch = Array.from({ length: 30 }, (_, i) =>
            makeInvocation(project.id, functionId, {
              created_at: at(i),
              status_code: i % 3 === 0 ? 500 : 200,
              request_body: i % 2 === 0 ? null : `body ${i} ✓`,
              error_message: i % 3 === 0 ? "boom" : null,
              console_logs: i % 5 === 0 ? [] : [{ level: "warn", message: `m${i}`, logged_at: at(i), stack: "at x" }]
            }))
          yield* repo.insertMany(batch)
          yield* repo.insertMany([])
          // A batch whose optional columns are all null.
          const bare = makeInvocation(project.id, uniqueId("fn"), {
            request_body: null,
            response_body: null,
            error_message: null,
            console_logs: []
          })
          yield* repo.insertMany([bare])
          assert.deepStrictEqual((yield* repo.list(project.id, bare.function_id, { limit: 1 })).items, [bare])
          const page = yield* repo.list(project.id, functionId, { limit: 20 })
          assert.strictEqual(page.total, 30)
          assert.deepStrictEqual(page.items, [...batch].reverse().slice(0, 20))
          assert.strictEqual((yield* repo.list(project.id, functionId, { outcome: "failed", limit: 20 })).total, 10)
        }))

      it.effect("deleteCreatedBefore removes older records in batches", () =>
        Effect.gen(function*() {
          const repo = yield* FunctionInvocationsRepo
          const project = yield* givenProject()
          const functionId = uniqueId("fn")
          // Far in the past, so other tests' records (at(0) and later) are not touched.
          const old = Array.from({ length: 5 }, (_, i) =>
            makeInvocation(project.id, functionId, { created_at: new Date(Date.UTC(2001, 0, 1) + i).toISOString() }))
          const kept = makeInvocation(project.id, functionId, { created_at: new Date(Date.UTC(2001, 0, 2)).toISOString() })
          yield* Effect.forEach([...old, kept], repo.insert, { discard: true })
          const cutoff = new Date(Date.UTC(2001, 0, 1, 12)).toISOString()
          assert.strictEqual(yield* repo.deleteCreatedBefore(cutoff, 3), 3)
          assert.strictEqual(yield* repo.deleteCreatedBefore(cutoff, 3), 2)
          assert.strictEqual(yield* repo.deleteCreatedBefore(cutoff, 3), 0)
          assert.deepStrictEqual(ids((yield* repo.list(project.id, functionId, { limit: 10 })).items), [kept.id])
        }))
    })
  })
}
