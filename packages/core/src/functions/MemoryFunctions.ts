/**
 * Memory implementations of the functions ports (`FunctionsRepo`,
 * `FunctionInvocationsRepo`) over the shared `MemoryStore`, keeping the rules
 * of the Postgres schema (a function belongs to a project; its deployments
 * and secrets go with it; invocations outlive it; the unique slug per
 * project; timestamps and JSON as the database gives them back). The
 * functions storage conformance suite holds both adapters to the same
 * behaviour.
 */
import { Effect, Layer, Option, PubSub, Stream } from "effect"
import type {
  FunctionDeploymentRecord,
  FunctionRecord,
  FunctionInvocationRecord,
  FunctionSecretRecord
} from "./Function.ts"
import { type FunctionDeployOutcome, FunctionInvocationsRepo, FunctionsRepo } from "./FunctionsRepo.ts"
import { Duplicate } from "../ports/StorageError.ts"
import type { Project } from "../projects/Project.ts"
import type { CursorKey, ListSlice, ListWindow } from "../shared/Pagination.ts"
import { layerMemoryFunctionKv } from "./MemoryFunctionRuntime.ts"
import { MemoryStore, memoryTable, type MemoryTables } from "../ports/MemoryStore.ts"
import { byteOrder, compareKeys, instant, json, nullableTimestamp, timestamp, violation } from "../ports/MemoryRows.ts"

const Projects = memoryTable<Project>("projects")
const Functions = memoryTable<FunctionRecord>("functions")
const Deployments = memoryTable<FunctionDeploymentRecord>("function_deployments")
const Secrets = memoryTable<FunctionSecretRecord>("function_secrets")
const Invocations = memoryTable<FunctionInvocationRecord>("function_invocations")
const HostKeys = memoryTable<{ readonly name: string; readonly key: string }>("host_keys")

const secretKey = (functionId: string, name: string) => `${functionId}\u0000${name}`

const storedFunction = (f: FunctionRecord): FunctionRecord => ({
  ...f,
  runtime_config: json(f.runtime_config),
  last_deployed_at: nullableTimestamp(f.last_deployed_at),
  created_at: timestamp(f.created_at),
  updated_at: timestamp(f.updated_at)
})

const storedDeployment = (d: FunctionDeploymentRecord): FunctionDeploymentRecord => ({
  ...d,
  runtime_config: json(d.runtime_config),
  started_at: timestamp(d.started_at),
  finished_at: nullableTimestamp(d.finished_at)
})

const storedSecret = (s: FunctionSecretRecord): FunctionSecretRecord => ({
  ...s,
  created_at: timestamp(s.created_at),
  updated_at: timestamp(s.updated_at)
})

const storedInvocation = (i: FunctionInvocationRecord): FunctionInvocationRecord => ({
  ...i,
  console_logs: json(i.console_logs),
  created_at: timestamp(i.created_at)
})

/** Newest-first rows through a window (see `ListWindow`). */
const slice = <A>(newestFirst: ReadonlyArray<A>, keyOf: (a: A) => CursorKey, window: ListWindow): ListSlice<A> => {
  if (window.mode === "page") {
    const start = (window.page - 1) * window.perPage
    const items = newestFirst.slice(start, start + window.perPage)
    return { items, hasMore: start + items.length < newestFirst.length, total: newestFirst.length }
  }
  const { after, before, limit } = window
  const inRange = newestFirst.filter((row) =>
    (after === undefined || compareKeys(keyOf(row), after) < 0) &&
    (before === undefined || compareKeys(keyOf(row), before) > 0)
  )
  const travel = before !== undefined ? [...inRange].reverse() : inRange
  const page = travel.slice(0, limit)
  return { items: before !== undefined ? page.reverse() : page, hasMore: travel.length > limit, total: 0 }
}

const functionKey = (f: FunctionRecord): CursorKey => ({ sortKey: f.created_at, id: f.id })
const deploymentKey = (d: FunctionDeploymentRecord): CursorKey => ({ sortKey: d.started_at, id: d.id })
const invocationKey = (i: FunctionInvocationRecord): CursorKey => ({ sortKey: i.created_at, id: i.id })
const newestFirst = <A>(rows: ReadonlyArray<A>, keyOf: (a: A) => CursorKey) =>
  [...rows].sort((a, b) => compareKeys(keyOf(b), keyOf(a)))

const inProject = (db: MemoryTables, projectId: string, id: string) => {
  const fn = db.get(Functions, id)
  return fn !== undefined && fn.project_id === projectId ? fn : undefined
}

export const layerMemoryFunctionsRepo = Layer.effect(
  FunctionsRepo,
  Effect.gen(function*() {
    const store = yield* MemoryStore
    // Every write that can change an invocation target says so (extra signals only drop a cache).
    const changes = yield* PubSub.unbounded<void>()
    const signal = PubSub.publish(changes, undefined)
    const signalled = <A, E, R>(write: Effect.Effect<A, E, R>) => Effect.tap(write, () => signal)

    const slugCollides = (db: MemoryTables, fn: FunctionRecord) =>
      db.all(Functions).some((other) => other.project_id === fn.project_id && other.id !== fn.id && other.slug === fn.slug)

    return FunctionsRepo.of({
      insert: Effect.fn("FunctionsRepo.insert")(function*(fn: FunctionRecord) {
        const duplicate = yield* store.run((db) => {
          if (db.get(Projects, fn.project_id) === undefined) violation(`no project ${fn.project_id}`)
          if (db.get(Functions, fn.id) !== undefined) violation(`duplicate function id ${fn.id}`)
          if (slugCollides(db, fn)) return true
          db.put(Functions, fn.id, storedFunction(fn))
          return false
        })
        if (duplicate) return yield* new Duplicate({ field: "slug" })
      }),

      findById: Effect.fn("FunctionsRepo.findById")((projectId: string, id: string) =>
        store.run((db) => Option.fromUndefinedOr(inProject(db, projectId, id)))
      ),

      findInvocationTarget: Effect.fn("FunctionsRepo.findInvocationTarget")((id: string) =>
        store.run((db) => {
          const fn = db.get(Functions, id)
          if (fn === undefined) return Option.none()
          const secrets = db.all(Secrets).filter((s) => s.function_id === id).sort((a, b) => byteOrder(a.name, b.name))
          const project = db.get(Projects, fn.project_id)
          return Option.some({ function: fn, secrets, projectDisabled: project?.disabled === true })
        })
      ),

      list: Effect.fn("FunctionsRepo.list")((projectId: string, window: ListWindow) =>
        store.run((db) =>
          slice(newestFirst(db.all(Functions).filter((f) => f.project_id === projectId), functionKey), functionKey, window)
        )
      ),

      update: Effect.fn("FunctionsRepo.update")(function*(fn: FunctionRecord, expectedLockVersion: number) {
        const result = yield* store.run((db): Option.Option<FunctionRecord> | "duplicate" => {
          const current = inProject(db, fn.project_id, fn.id)
          if (current === undefined || current.lock_version !== expectedLockVersion) return Option.none()
          if (slugCollides(db, fn)) return "duplicate"
          const updated = storedFunction({
            ...current,
            name: fn.name,
            slug: fn.slug,
            description: fn.description,
            code: fn.code,
            runtime_config: fn.runtime_config,
            public_endpoint: fn.public_endpoint,
            invoke_response_mode: fn.invoke_response_mode,
            lock_version: fn.lock_version,
            updated_at: fn.updated_at
          })
          db.put(Functions, fn.id, updated)
          return Option.some(updated)
        })
        if (result === "duplicate") return yield* new Duplicate({ field: "slug" })
        yield* signal
        return result
      }),

      delete: Effect.fn("FunctionsRepo.delete")((projectId: string, id: string) =>
        signalled(store.run((db) => {
          if (inProject(db, projectId, id) === undefined) return false
          for (const d of db.all(Deployments)) if (d.function_id === id) db.remove(Deployments, d.id)
          for (const s of db.all(Secrets)) if (s.function_id === id) db.remove(Secrets, secretKey(id, s.name))
          return db.remove(Functions, id)
        }))
      ),

      slugTaken: Effect.fn("FunctionsRepo.slugTaken")((projectId: string, slug: string) =>
        store.run((db) => db.all(Functions).some((f) => f.project_id === projectId && f.slug === slug))
      ),

      startDeploy: Effect.fn("FunctionsRepo.startDeploy")((projectId: string, deployment: FunctionDeploymentRecord) =>
        signalled(store.run((db): Option.Option<FunctionRecord> => {
          const current = inProject(db, projectId, deployment.function_id)
          if (current === undefined || current.status === "deploying") return Option.none()
          if (db.get(Deployments, deployment.id) !== undefined) violation(`duplicate deployment id ${deployment.id}`)
          const updated = storedFunction({
            ...current,
            status: "deploying",
            lock_version: current.lock_version + 1,
            updated_at: deployment.started_at
          })
          db.put(Functions, current.id, updated)
          db.put(Deployments, deployment.id, storedDeployment({ ...deployment, project_id: current.project_id }))
          return Option.some(updated)
        }))
      ),

      finishDeploy: Effect.fn("FunctionsRepo.finishDeploy")(
        (functionId: string, deploymentId: string, outcome: FunctionDeployOutcome) =>
          signalled(store.run((db) => {
            const deployment = db.get(Deployments, deploymentId)
            const fn = db.get(Functions, functionId)
            if (deployment === undefined || deployment.function_id !== functionId || deployment.status !== "deploying") {
              return false
            }
            if (fn === undefined) return false
            if (outcome._tag === "Deployed") {
              db.put(Deployments, deploymentId, storedDeployment({ ...deployment, status: "deployed", finished_at: outcome.at }))
              for (const other of db.all(Deployments)) {
                if (other.function_id === functionId && other.id !== deploymentId && other.status !== "deploying" && other.code !== null) {
                  db.put(Deployments, other.id, { ...other, code: null })
                }
              }
              db.put(Functions, functionId, storedFunction({
                ...fn,
                status: "deployed",
                version: deployment.version,
                last_deployed_at: outcome.at,
                last_deploy_error: null,
                deployed_deployment_id: deploymentId,
                lock_version: fn.lock_version + 1,
                updated_at: outcome.at
              }))
            } else {
              db.put(Deployments, deploymentId, storedDeployment({
                ...deployment,
                status: "failed",
                finished_at: outcome.at,
                error: outcome.error,
                code: null
              }))
              db.put(Functions, functionId, storedFunction({
                ...fn,
                status: "error",
                last_deploy_error: outcome.error,
                lock_version: fn.lock_version + 1,
                updated_at: outcome.at
              }))
            }
            return true
          }))
      ),

      findDeployment: Effect.fn("FunctionsRepo.findDeployment")((functionId: string, deploymentId: string) =>
        store.run((db) => Option.filter(Option.fromUndefinedOr(db.get(Deployments, deploymentId)), (d) => d.function_id === functionId))
      ),

      listDeployments: Effect.fn("FunctionsRepo.listDeployments")(
        (projectId: string, functionId: string, window: ListWindow) =>
          store.run((db) => {
            const rows = db.all(Deployments).filter((d) => d.project_id === projectId && d.function_id === functionId)
            return slice(newestFirst(rows, deploymentKey), deploymentKey, window)
          })
      ),

      listDeploying: store.run((db) =>
        [...db.all(Deployments).filter((d) => d.status === "deploying")].sort((a, b) => compareKeys(deploymentKey(a), deploymentKey(b)))
      ).pipe(Effect.withSpan("FunctionsRepo.listDeploying")),

      listSecrets: Effect.fn("FunctionsRepo.listSecrets")((functionId: string) =>
        store.run((db) => db.all(Secrets).filter((s) => s.function_id === functionId).sort((a, b) => byteOrder(a.name, b.name)))
      ),

      putSecret: Effect.fn("FunctionsRepo.putSecret")((secret: FunctionSecretRecord) =>
        signalled(store.run((db) => {
          if (db.get(Functions, secret.function_id) === undefined) violation(`no function ${secret.function_id}`)
          const key = secretKey(secret.function_id, secret.name)
          const current = db.get(Secrets, key)
          db.put(Secrets, key, storedSecret(current === undefined ? secret : { ...secret, created_at: current.created_at }))
        }))
      ),

      deleteSecret: Effect.fn("FunctionsRepo.deleteSecret")((functionId: string, name: string) =>
        signalled(store.run((db) => db.remove(Secrets, secretKey(functionId, name))))
      ),
      changes: Stream.fromPubSub(changes),

      secretKey: Effect.fn("FunctionsRepo.secretKey")((candidate: string) =>
        store.run((db) => {
          const current = db.get(HostKeys, "function_secrets")
          if (current !== undefined) return current.key
          db.put(HostKeys, "function_secrets", { name: "function_secrets", key: candidate })
          return candidate
        })
      )
    })
  })
)

export const layerMemoryFunctionInvocationsRepo = Layer.effect(
  FunctionInvocationsRepo,
  Effect.gen(function*() {
    const store = yield* MemoryStore
    const put = (db: MemoryTables, invocation: FunctionInvocationRecord) => {
      if (db.get(Projects, invocation.project_id) === undefined) violation(`no project ${invocation.project_id}`)
      if (db.get(Invocations, invocation.id) !== undefined) violation(`duplicate invocation id ${invocation.id}`)
      db.put(Invocations, invocation.id, storedInvocation(invocation))
    }
    return FunctionInvocationsRepo.of({
      insert: Effect.fn("FunctionInvocationsRepo.insert")((invocation: FunctionInvocationRecord) =>
        store.run((db) => put(db, invocation))
      ),
      insertMany: Effect.fn("FunctionInvocationsRepo.insertMany")((invocations: ReadonlyArray<FunctionInvocationRecord>) =>
        store.run((db) => {
          for (const invocation of invocations) put(db, invocation)
        })
      ),
      list: Effect.fn("FunctionInvocationsRepo.list")((projectId, functionId, options) =>
        store.run((db) => {
          const rows = db.all(Invocations).filter((i) =>
            i.project_id === projectId && i.function_id === functionId &&
            (options.outcome === undefined || (options.outcome === "failed") === (i.status_code >= 400))
          )
          return { items: newestFirst(rows, invocationKey).slice(0, options.limit), total: rows.length }
        })
      ),
      deleteCreatedBefore: Effect.fn("FunctionInvocationsRepo.deleteCreatedBefore")((before: string, limit: number) =>
        store.run((db) => {
          let removed = 0
          for (const row of db.all(Invocations)) {
            if (removed >= limit) break
            if (instant(row.created_at) < instant(before)) {
              db.remove(Invocations, row.id)
              removed++
            }
          }
          return removed
        })
      )
    })
  })
)

/** The functions ports and `FunctionKv` in memory, over the `MemoryStore` (which the caller provides). */
export const layerMemoryFunctionsStorage = Layer.mergeAll(
  layerMemoryFunctionsRepo,
  layerMemoryFunctionInvocationsRepo,
  layerMemoryFunctionKv
)
