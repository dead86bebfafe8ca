/** Storage of project secrets (values encrypted by the caller), scoped by project. */
import { Context, type Effect, type Stream } from "effect"
import type { ProjectSecretRecord } from "./ProjectSecret.ts"

export class ProjectSecretsRepo extends Context.Service<ProjectSecretsRepo, {
  /** Inserts, or replaces the ciphertext and `updated_at` of the project's secret of that name (keeping `created_at`). */
  readonly put: (secret: ProjectSecretRecord) => Effect.Effect<ProjectSecretRecord>
  /** By name. */
  readonly list: (projectId: string) => Effect.Effect<ReadonlyArray<ProjectSecretRecord>>
  /** False when the project had no such secret. */
  readonly delete: (projectId: string, name: string) => Effect.Effect<boolean>
  /** A signal once a put or a delete is done, by any process sharing the store (for caches of `list`). */
  readonly changes: Stream.Stream<void>
}>()("@parley/core/ports/ProjectSecretsRepo") {}
