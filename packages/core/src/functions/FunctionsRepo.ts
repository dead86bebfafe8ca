/**
 * Storage of functions, their deployments and secrets (`FunctionsRepo`), of
 * their invocation log (`FunctionInvocationsRepo`), always scoped by project
 * except where an invoke has to find a function by id alone. The memory
 * adapters are in `@parley/core/testing`, the Postgres ones in
 * `@parley/store-pg`; `functionsStorageConformance` holds both.
 */
import { Context, Effect, Layer, type Option, type Stream } from "effect"
import { FunctionSecretsCipher, SecretKeyStore } from "../shared/SecretCipher.ts"
import type { Duplicate } from "../ports/StorageError.ts"
import type { ListSlice, ListWindow } from "../shared/Pagination.ts"
import type {
  FunctionDeploymentRecord,
  FunctionRecord,
  FunctionInvocationOutcome,
  FunctionInvocationRecord,
  FunctionSecretRecord
} from "./Function.ts"

/** What an invoke needs, read in one go: the function, its secrets, whether its project is disabled. */
export interface FunctionInvocationTarget {
  readonly function: FunctionRecord
  readonly secrets: ReadonlyArray<FunctionSecretRecord>
  readonly projectDisabled: boolean
}

/** How a deploy ended, written to the function and its deployment together. */
export type FunctionDeployOutcome =
  | { readonly _tag: "Deployed"; readonly at: string }
  | { readonly _tag: "Failed"; readonly at: string; readonly error: string }

export class FunctionsRepo extends Context.Service<FunctionsRepo, {
  /** Fails with Duplicate("slug") when the project has a function with the slug. */
  readonly insert: (fn: FunctionRecord) => Effect.Effect<void, Duplicate>
  readonly findById: (projectId: string, id: string) => Effect.Effect<Option.Option<FunctionRecord>>
  /** By id alone, for invokes (which name no project). */
  readonly findInvocationTarget: (id: string) => Effect.Effect<Option.Option<FunctionInvocationTarget>>
  /** Newest first by (created_at, id). */
  readonly list: (projectId: string, window: ListWindow) => Effect.Effect<ListSlice<FunctionRecord>>
  /**
   * Replaces the editable fields (name, slug, description, code,
   * runtime_config, public_endpoint, invoke_response_mode, lock_version,
   * updated_at) when the stored `lock_version` still equals
   * `expectedLockVersion`; None when it moved or the function vanished.
   */
  readonly update: (
    fn: FunctionRecord,
    expectedLockVersion: number
  ) => Effect.Effect<Option.Option<FunctionRecord>, Duplicate>
  /** Removes the function with its deployments and secrets (not its invocations); false when absent. */
  readonly delete: (projectId: string, id: string) => Effect.Effect<boolean>
  readonly slugTaken: (projectId: string, slug: string) => Effect.Effect<boolean>

  /**
   * Atomically: unless the function is `deploying`, sets it `deploying`
   * (lock_version + 1, updated_at) and inserts the deployment. None when the
   * function is absent or already deploying (nothing written then).
   */
  readonly startDeploy: (
    projectId: string,
    deployment: FunctionDeploymentRecord
  ) => Effect.Effect<Option.Option<FunctionRecord>>
  /**
   * Ends a deployment still `deploying`: `Deployed` makes the function
   * `deployed` at the deployment's version (last_deployed_at, no
   * last_deploy_error, this deployment serving; older deployments drop their
   * code); `Failed` makes it `error` with last_deploy_error (the serving
   * version is untouched; the failed deployment drops its code). lock_version
   * + 1 either way. False when the deployment is no longer in progress or
   * gone (a retried job), writing nothing.
   */
  readonly finishDeploy: (
    functionId: string,
    deploymentId: string,
    outcome: FunctionDeployOutcome
  ) => Effect.Effect<boolean>
  /** A deployment of the function, with its code snapshot. */
  readonly findDeployment: (functionId: string, deploymentId: string) => Effect.Effect<Option.Option<FunctionDeploymentRecord>>
  /** Newest first by (started_at, id). */
  readonly listDeployments: (
    projectId: string,
    functionId: string,
    window: ListWindow
  ) => Effect.Effect<ListSlice<FunctionDeploymentRecord>>
  /** Every deployment in progress, across projects, oldest first. */
  readonly listDeploying: Effect.Effect<ReadonlyArray<FunctionDeploymentRecord>>

  /** Ordered by name (byte order). */
  readonly listSecrets: (functionId: string) => Effect.Effect<ReadonlyArray<FunctionSecretRecord>>
  /** Creates or overwrites (keeping created_at). */
  readonly putSecret: (secret: FunctionSecretRecord) => Effect.Effect<void>
  /** False when the function had no such secret. */
  readonly deleteSecret: (functionId: string, name: string) => Effect.Effect<boolean>
  /**
   * A signal once a write that changes an invocation target is done (update, delete, a deploy's start or end, a
   * secret put or deleted), by any process sharing the store: for caches of `findInvocationTarget`.
   */
  readonly changes: Stream.Stream<void>

  /**
   * The host key secrets are encrypted with when none is configured: the
   * first `candidate` ever offered is stored and answered to every later
   * call, from any host sharing the store.
   */
  readonly secretKey: (candidate: string) => Effect.Effect<string>
}>()("@parley/core/functions/FunctionsRepo") {}

export class FunctionInvocationsRepo extends Context.Service<FunctionInvocationsRepo, {
  readonly insert: (invocation: FunctionInvocationRecord) => Effect.Effect<void>
  /** Several records in one statement (the invocation log's batches). */
  readonly insertMany: (invocations: ReadonlyArray<FunctionInvocationRecord>) => Effect.Effect<void>
  /**
   * Newest first by (created_at, id), at most `limit`, with the number of all
   * matching records. `failed` means `status_code` >= 400.
   */
  readonly list: (
    projectId: string,
    functionId: string,
    options: { readonly outcome?: FunctionInvocationOutcome | undefined; readonly limit: number }
  ) => Effect.Effect<{ readonly items: ReadonlyArray<FunctionInvocationRecord>; readonly total: number }>
  /** Removes up to `limit` records created strictly before `before`; answers how many went. */
  readonly deleteCreatedBefore: (before: string, limit: number) => Effect.Effect<number>
}>()("@parley/core/functions/FunctionInvocationsRepo") {}

/** The generated host key lives in the functions store (`secretKey`), which has kept it since functions had the only secrets. */
export const layerSecretKeyStore = Layer.effect(
  SecretKeyStore,
  Effect.map(Effect.service(FunctionsRepo), (repo) => SecretKeyStore.of({ secretKey: repo.secretKey }))
)

/** The host's cipher of every secret at rest, its generated key kept in the functions store. */
export const layerHostCipher = FunctionSecretsCipher.layer.pipe(Layer.provide(layerSecretKeyStore))
