/** Storage of projects and their API keys. */
import { Context, type Effect, type Option, type Stream } from "effect"
import type { ApiKey, Project } from "./Project.ts"

export class ProjectsRepo extends Context.Service<ProjectsRepo, {
  readonly insert: (project: Project) => Effect.Effect<void>
  readonly findById: (id: string) => Effect.Effect<Option.Option<Project>>
  /** All projects, oldest first. */
  readonly list: Effect.Effect<ReadonlyArray<Project>>
  readonly setDisabled: (id: string, disabled: boolean, at: string) => Effect.Effect<Option.Option<Project>>
  readonly insertKey: (key: ApiKey) => Effect.Effect<void>
  /** The live (not revoked) key with this hash and its project. */
  readonly findKeyByHash: (hash: string) => Effect.Effect<Option.Option<{ readonly key: ApiKey; readonly project: Project }>>
  readonly listKeys: (projectId: string) => Effect.Effect<ReadonlyArray<ApiKey>>
  /** Marks a key revoked; None when the project has no such live key. */
  readonly revokeKey: (projectId: string, keyId: string, at: string) => Effect.Effect<Option.Option<ApiKey>>
  /**
   * Signals after any key was revoked or project disabled, by this process or
   * another one sharing the store, once the change is committed. May also
   * signal when nothing changed (e.g. after reconnecting), so a cache of
   * authenticated keys can be dropped whenever it fires.
   */
  readonly keyChanges: Stream.Stream<void>
  /**
   * Held until the transaction ends (outside one it holds nothing): processes
   * bootstrapping one store at once see each other's default project and key,
   * instead of each creating a project of its own.
   */
  readonly lockBootstrap: Effect.Effect<void>
}>()("@parley/core/ports/ProjectsRepo") {}
