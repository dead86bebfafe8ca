/**
 * The functions service (spec "Function", decisions 2.7, 3.3, 4.4): records
 * with optimistic locking, deploy requests (the deploy itself runs in
 * `FunctionsJobs`), deployments, secrets (encrypted at rest) and the
 * invocation log. Depends only on ports; running code is `FunctionInvoker`'s.
 */
import { Context, Effect, Layer, Option } from "effect"
import * as Crypto from "node:crypto"
import { JobQueue } from "../ports/JobQueue.ts"
import type { Duplicate } from "../ports/StorageError.ts"
import { Transactor } from "../ports/Transactor.ts"
import type { Principal } from "../projects/Projects.ts"
import {
  Conflict,
  type NotFound,
  notFound,
  staleLockVersion,
  type Unprocessable,
  unprocessable
} from "../shared/ApiError.ts"
import { Ids } from "../shared/Ids.ts"
import type { ListSlice, ListWindow } from "../shared/Pagination.ts"
import { slugCandidate, slugify } from "../shared/Slug.ts"
import { nowIso } from "../shared/Time.ts"
import { FunctionReferrers } from "./FunctionReferrers.ts"
import {
  type FunctionDeploymentRecord,
  FUNCTION_TYPE,
  type FunctionCreateInput,
  FunctionBounds,
  type FunctionRecord,
  type FunctionUpdateInput,
  type FunctionInvocationOutcome,
  type FunctionInvocationRecord,
  type FunctionSecret,
  type FunctionSecretInput
} from "./Function.ts"
import { FunctionKv } from "./FunctionKv.ts"
import { FunctionRuntime } from "./FunctionRuntime.ts"
import { FunctionInvocationsRepo, FunctionsRepo } from "./FunctionsRepo.ts"
import { InvocationTargets } from "./InvocationTargets.ts"
import { FunctionInvocationLog } from "./InvocationLog.ts"
import { requestDeploy } from "./FunctionsJobs.ts"
import {
  checkCode,
  checkDescription,
  checkFunctionType,
  checkName,
  checkSecretName,
  checkSecretValue,
  checkSlug,
  NOT_DEPLOYED_SECRETS_ERROR,
  resolveRuntimeConfig
} from "./Rules.ts"
import { FunctionSecretsCipher } from "../shared/SecretCipher.ts"
import { ProjectSecrets } from "../projects/ProjectSecrets.ts"

const slugTaken = () => unprocessable("Slug has already been taken", [{ path: "function.slug", message: "has already been taken" }])
const onDuplicate = (_: Duplicate) => Effect.fail(slugTaken())
const functionNotFound = (id: string) => notFound("Function", id)

/** Decisions 3.3: a deploy asked for while one runs. */
export const functionDeployInProgress = () =>
  new Conflict({ error: "A deployment of this function is already in progress", code: "deploy_in_progress" })

export const FUNCTION_DEPLOY_STARTED_MESSAGE = "Function deployment started"

const sha256 = (text: string) => Crypto.createHash("sha256").update(text, "utf8").digest("hex")


export interface FunctionInvocationPage {
  readonly function: FunctionRecord
  readonly invocations: ReadonlyArray<FunctionInvocationRecord>
  readonly total: number
}

export class Functions extends Context.Service<Functions, {
  /** Newest first. */
  readonly list: (principal: Principal, window: ListWindow) => Effect.Effect<ListSlice<FunctionRecord>>
  /** A `draft` function, version 0, slug generated from the name unless given. */
  readonly create: (principal: Principal, input: FunctionCreateInput) => Effect.Effect<FunctionRecord, Unprocessable>
  readonly get: (principal: Principal, id: string) => Effect.Effect<FunctionRecord, NotFound>
  /** Partial; a given `lock_version` other than the stored one answers 409. Never changes `status`. */
  readonly update: (
    principal: Principal,
    id: string,
    input: FunctionUpdateInput
  ) => Effect.Effect<FunctionRecord, NotFound | Unprocessable | Conflict>
  /** 422 while a workflow references it; its secrets, deployments and `env.KV` go, its invocations stay. */
  readonly delete: (principal: Principal, id: string) => Effect.Effect<void, NotFound | Unprocessable>
  /** Moves it to `deploying` and queues the deploy of its current code; 409 while a deploy runs. */
  readonly deploy: (principal: Principal, id: string) => Effect.Effect<FunctionRecord, NotFound | Conflict>
  readonly listDeployments: (
    principal: Principal,
    id: string,
    window: ListWindow
  ) => Effect.Effect<ListSlice<FunctionDeploymentRecord>, NotFound>
  /** Names and types only. */
  readonly listSecrets: (principal: Principal, id: string) => Effect.Effect<ReadonlyArray<FunctionSecret>, NotFound>
  /** Creates or overwrites; 422 before the first successful deploy. */
  readonly saveSecret: (principal: Principal, id: string, input: FunctionSecretInput) => Effect.Effect<void, NotFound | Unprocessable>
  readonly deleteSecret: (principal: Principal, id: string, name: string) => Effect.Effect<void, NotFound | Unprocessable>
  /** Newest first; `limit` 1-20 (default 10). */
  readonly listInvocations: (
    principal: Principal,
    id: string,
    options: { readonly outcome?: FunctionInvocationOutcome | undefined; readonly limit?: string | undefined }
  ) => Effect.Effect<FunctionInvocationPage, NotFound | Unprocessable>
}>()("@parley/core/functions/Functions") {
  static readonly layer = Layer.effect(
    Functions,
    Effect.gen(function*() {
      const repo = yield* FunctionsRepo
      const targets = yield* InvocationTargets
      const projectSecrets = yield* ProjectSecrets
      const invocations = yield* FunctionInvocationsRepo
      const log = yield* FunctionInvocationLog
      const referrers = yield* FunctionReferrers
      const kv = yield* FunctionKv
      const jobs = yield* JobQueue
      const tx = yield* Transactor
      const ids = yield* Ids
      const cipher = yield* FunctionSecretsCipher
      // The host's runtime, when this process runs one: a deleted function is unloaded from it at once.
      const runtime = yield* Effect.serviceOption(FunctionRuntime)

      const find = (projectId: string, id: string) =>
        repo.findById(projectId, id).pipe(
          Effect.flatMap(Option.match({ onNone: () => Effect.fail(functionNotFound(id)), onSome: Effect.succeed }))
        )

      const freeSlug = Effect.fnUntraced(function*(projectId: string, name: string) {
        const base = slugify(name, "function")
        for (let attempt = 1;; attempt++) {
          const candidate = slugCandidate(base, attempt)
          if (!(yield* repo.slugTaken(projectId, candidate))) return candidate
        }
      })

      const create = Effect.fn("Functions.create")(function*(principal: Principal, input: FunctionCreateInput) {
        const projectId = principal.project.id
        const name = yield* checkName(input.name, "function")
        yield* checkCode(input.code, "function")
        if (input.slug !== undefined) yield* checkSlug(input.slug, "function")
        yield* checkDescription(input.description, "function")
        yield* checkFunctionType(input.function_type, "function")
        const runtimeConfig = yield* resolveRuntimeConfig(input.runtime_config, undefined, "function")
        const now = yield* nowIso
        const record: FunctionRecord = {
          id: yield* ids.uuid,
          project_id: projectId,
          name,
          slug: input.slug ?? (yield* freeSlug(projectId, name)),
          description: input.description ?? null,
          code: input.code,
          function_type: FUNCTION_TYPE,
          status: "draft",
          version: 0,
          last_deployed_at: null,
          last_deploy_error: null,
          runtime_config: runtimeConfig,
          created_by_id: principal.apiKey.id,
          public_endpoint: input.public_endpoint ?? false,
          invoke_response_mode: input.invoke_response_mode ?? "passthrough",
          lock_version: 0,
          deployed_deployment_id: null,
          created_at: now,
          updated_at: now
        }
        yield* repo.insert(record).pipe(Effect.catchTag("Duplicate", onDuplicate))
        return record
      })

      const update = Effect.fn("Functions.update")(function*(principal: Principal, id: string, input: FunctionUpdateInput) {
        const current = yield* find(principal.project.id, id)
        if (input.lock_version !== undefined && input.lock_version !== null && input.lock_version !== current.lock_version) {
          return yield* staleLockVersion()
        }
        const name = input.name !== undefined ? yield* checkName(input.name, "function") : current.name
        if (input.code !== undefined) yield* checkCode(input.code, "function")
        if (input.slug !== undefined) yield* checkSlug(input.slug, "function")
        yield* checkDescription(input.description, "function")
        yield* checkFunctionType(input.function_type, "function")
        const next: FunctionRecord = {
          ...current,
          name,
          slug: input.slug ?? current.slug,
          description: input.description !== undefined ? input.description : current.description,
          code: input.code ?? current.code,
          runtime_config: yield* resolveRuntimeConfig(input.runtime_config, current.runtime_config, "function"),
          public_endpoint: input.public_endpoint ?? current.public_endpoint,
          invoke_response_mode: input.invoke_response_mode ?? current.invoke_response_mode,
          lock_version: current.lock_version + 1,
          updated_at: yield* nowIso
        }
        // Compare-and-set on lock_version: a write (or a deploy finishing) in between makes this one stale.
        const stored = yield* repo.update(next, current.lock_version).pipe(Effect.catchTag("Duplicate", onDuplicate))
        yield* targets.forget
        return yield* Option.match(stored, { onNone: () => Effect.fail(staleLockVersion()), onSome: Effect.succeed })
      })

      const remove = Effect.fn("Functions.delete")(function*(principal: Principal, id: string) {
        const projectId = principal.project.id
        yield* tx.withTransaction(Effect.gen(function*() {
          yield* find(projectId, id)
          const referrer = yield* referrers.first(projectId, id)
          if (Option.isSome(referrer)) {
            return yield* unprocessable(`Function is used by workflow ${referrer.value.name}`)
          }
          yield* repo.delete(projectId, id)
        }))
        yield* targets.forget
        yield* kv.clear(id).pipe(
          Effect.catchCause((cause) => Effect.logWarning("Could not clear a deleted function's KV", cause))
        )
        if (Option.isSome(runtime)) yield* runtime.value.unload(id)
      })

      const deploy = Effect.fn("Functions.deploy")(function*(principal: Principal, id: string) {
        const projectId = principal.project.id
        const { deployment, started } = yield* tx.withTransaction(Effect.gen(function*() {
          const current = yield* find(projectId, id)
          if (current.status === "deploying") return yield* functionDeployInProgress()
          const deployment: FunctionDeploymentRecord = {
            id: yield* ids.uuid,
            function_id: id,
            project_id: projectId,
            version: current.version + 1,
            status: "deploying",
            code_sha256: sha256(current.code),
            code: current.code,
            runtime_config: current.runtime_config,
            started_at: yield* nowIso,
            finished_at: null,
            error: null
          }
          const started = yield* repo.startDeploy(projectId, deployment)
          // Absent now: deleted in between; otherwise another request won the race.
          if (Option.isNone(started)) {
            return yield* Effect.flatMap(find(projectId, id), () => Effect.fail(functionDeployInProgress()))
          }
          return { deployment, started: started.value }
        }))
        yield* targets.forget
        // Queued once committed, so the worker finds the deployment. A host dying in between leaves it
        // `deploying` until the maintenance job (at every host start) asks for it again.
        yield* requestDeploy(jobs, id, deployment.id)
        return started
      })

      const listDeployments = Effect.fn("Functions.listDeployments")(
        function*(principal: Principal, id: string, window: ListWindow) {
          yield* find(principal.project.id, id)
          return yield* repo.listDeployments(principal.project.id, id, window)
        }
      )

      const listSecrets = Effect.fn("Functions.listSecrets")(function*(principal: Principal, id: string) {
        yield* find(principal.project.id, id)
        const secrets = yield* repo.listSecrets(id)
        const own = new Set(secrets.map((s) => s.name))
        // Project secrets reach the function's env too, unless one of its own has the name (decisions 10.5.4).
        const inherited = (yield* projectSecrets.list(principal.project.id).pipe(Effect.orDie)).filter((p) => !own.has(p.name))
        return [
          ...secrets.map((s): FunctionSecret => ({ name: s.name, type: s.type })),
          ...inherited.map((p): FunctionSecret => ({ name: p.name, type: "inherited" }))
        ]
      })

      const requireDeployed = (fn: FunctionRecord) =>
        fn.version === 0 ? Effect.fail(unprocessable(NOT_DEPLOYED_SECRETS_ERROR)) : Effect.void

      const saveSecret = Effect.fn("Functions.saveSecret")(function*(principal: Principal, id: string, input: FunctionSecretInput) {
        const fn = yield* find(principal.project.id, id)
        yield* requireDeployed(fn)
        yield* checkSecretName(input.name)
        const { plaintext, type } = yield* checkSecretValue(input.value)
        const encrypted = (yield* cipher.cipher).encrypt(id, input.name, plaintext)
        const now = yield* nowIso
        yield* repo.putSecret({ function_id: id, name: input.name, type, ciphertext: encrypted, created_at: now, updated_at: now })
        yield* targets.forget
      })

      const deleteSecret = Effect.fn("Functions.deleteSecret")(function*(principal: Principal, id: string, name: string) {
        const fn = yield* find(principal.project.id, id)
        yield* requireDeployed(fn)
        if (!(yield* repo.deleteSecret(id, name))) return yield* notFound("Secret", name)
        yield* targets.forget
      })

      const listInvocations = Effect.fn("Functions.listInvocations")(function*(
        principal: Principal,
        id: string,
        options: { readonly outcome?: FunctionInvocationOutcome | undefined; readonly limit?: string | undefined }
      ) {
        const fn = yield* find(principal.project.id, id)
        const { invocationListDefault, invocationListMax } = FunctionBounds
        const raw = options.limit?.trim()
        const limit = raw === undefined ? invocationListDefault : /^\d+$/.test(raw) ? Number(raw) : Number.NaN
        if (!Number.isSafeInteger(limit) || limit < 1 || limit > invocationListMax) {
          return yield* unprocessable(`limit must be between 1 and ${invocationListMax}`, [
            { path: "limit", message: "out of range" }
          ])
        }
        // What this host ran is listed at once; other hosts' records follow within their next batch.
        yield* log.flush
        const page = yield* invocations.list(principal.project.id, id, { outcome: options.outcome, limit })
        return { function: fn, invocations: page.items, total: page.total }
      })

      return Functions.of({
        list: (principal, window) => repo.list(principal.project.id, window),
        create,
        get: (principal, id) => find(principal.project.id, id),
        update,
        delete: remove,
        deploy,
        listDeployments,
        listSecrets,
        saveSecret,
        deleteSecret,
        listInvocations
      })
    })
  )
}
