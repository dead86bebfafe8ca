/**
 * Tenancy: projects and their API keys. A key is shown once when created and
 * stored as a sha256 hash; authentication hashes the presented key and looks
 * the hash up, so a leaked database never leaks usable keys.
 */
import { Context, Effect, Layer, Option, type Stream } from "effect"
import { hash } from "node:crypto"
import { ProjectsRepo } from "./ProjectsRepo.ts"
import { Transactor } from "../ports/Transactor.ts"
import { invalid, type NotFound, notFound, Unauthorized, type Unprocessable } from "../shared/ApiError.ts"
import { Ids } from "../shared/Ids.ts"
import { nowIso } from "../shared/Time.ts"
import * as SignalledCache from "../shared/SignalledCache.ts"
import type { ApiKey, Project } from "./Project.ts"

/** Who is calling: the project a key belongs to and the key itself (never its secret). */
export interface Principal {
  readonly project: Project
  readonly apiKey: { readonly id: string; readonly name: string }
}

export interface CreatedKey {
  readonly key: ApiKey
  /** The only time the key's secret exists outside the caller's hands. */
  readonly secret: string
}

/**
 * sha256 hex of a key; synchronous because it runs on every authenticated request, and one-shot (`crypto.hash`):
 * a `Hash` object per request cost three times as much.
 */
export const hashKey = (secret: string): Effect.Effect<string> => Effect.sync(() => hash("sha256", secret, "hex"))

const generateSecret = Effect.sync(() => {
  const bytes = crypto.getRandomValues(new Uint8Array(32))
  return `pk_${Buffer.from(bytes).toString("base64url")}`
})

const invalidKey = new Unauthorized({ error: "Invalid API key" })

const CACHE_TTL_MS = 60_000
const CACHE_MAX = 10_000

export class Projects extends Context.Service<Projects, {
  readonly create: (name: string) => Effect.Effect<Project, Unprocessable>
  readonly list: Effect.Effect<ReadonlyArray<Project>>
  readonly get: (id: string) => Effect.Effect<Project, NotFound>
  /** The project, if it exists (disabled ones too): what other capabilities check a project by. */
  readonly find: (id: string) => Effect.Effect<Option.Option<Project>>
  readonly setDisabled: (id: string, disabled: boolean) => Effect.Effect<Project, NotFound>
  /** A signal once a key is revoked or a project disabled or enabled, by any process sharing the store (for caches). */
  readonly changes: Stream.Stream<void>
  /** Creates a key; `secret` sets it explicitly (operator-provided), otherwise a random one is made. */
  readonly createKey: (
    projectId: string,
    name: string,
    secret?: string
  ) => Effect.Effect<CreatedKey, NotFound | Unprocessable>
  readonly listKeys: (projectId: string) => Effect.Effect<ReadonlyArray<ApiKey>, NotFound>
  readonly revokeKey: (projectId: string, keyId: string) => Effect.Effect<ApiKey, NotFound>
  /** Resolves a presented key to its project; unknown, revoked or disabled → 401. */
  readonly authenticate: (secret: string) => Effect.Effect<Principal, Unauthorized>
  /**
   * First start of a host: makes sure a default project exists and, when
   * `explicitKey` is given, that it is a live key of that project. Answers the
   * secret of a key created now (to print once), or None.
   */
  readonly bootstrap: (explicitKey: string | undefined) => Effect.Effect<{
    readonly project: Project
    readonly createdSecret: Option.Option<string>
  }>
}>()("@parley/core/projects/Projects") {
  static readonly layer = Layer.effect(
    Projects,
    Effect.gen(function*() {
      const repo = yield* ProjectsRepo
      const tx = yield* Transactor
      const ids = yield* Ids

      const get = Effect.fn("Projects.get")(function*(id: string) {
        return yield* repo.findById(id).pipe(
          Effect.flatMap(Option.match({ onNone: () => Effect.fail(notFound("Project", id)), onSome: Effect.succeed }))
        )
      })

      const create = Effect.fn("Projects.create")(function*(name: string) {
        const trimmed = name.trim()
        if (trimmed.length === 0 || trimmed.length > 200) {
          return yield* invalid("name", "must be 1-200 characters")
        }
        const now = yield* nowIso
        const project: Project = { id: yield* ids.uuid, name: trimmed, disabled: false, created_at: now, updated_at: now }
        yield* repo.insert(project)
        return project
      })

      const createKey = Effect.fn("Projects.createKey")(function*(projectId: string, name: string, secret?: string) {
        yield* get(projectId)
        if (secret !== undefined && secret.length < 16) {
          return yield* invalid("key", "must be at least 16 characters", "An API key must be at least 16 characters")
        }
        const value = secret ?? (yield* generateSecret)
        const key: ApiKey = {
          id: yield* ids.uuid,
          project_id: projectId,
          name: name.trim() || "default",
          key_hash: yield* hashKey(value),
          prefix: value.slice(0, 7),
          created_at: yield* nowIso,
          revoked_at: null
        }
        yield* repo.insertKey(key)
        return { key, secret: value }
      })

      // Authenticated keys are remembered so a request costs no key lookup; every revoke or disable, from any
      // process sharing the store, drops them all at once (`keyChanges`), and entries expire as a backstop. Unknown
      // keys are not remembered: guesses must not fill the cache.
      const principals = yield* SignalledCache.make({
        lookup: (hash: string) =>
          Effect.map(repo.findKeyByHash(hash), (found): Option.Option<Principal> =>
            Option.isNone(found) || found.value.project.disabled
              ? Option.none()
              : Option.some({ project: found.value.project, apiKey: { id: found.value.key.id, name: found.value.key.name } })),
        keyOf: (hash) => hash,
        changes: repo.keyChanges,
        ttlMs: CACHE_TTL_MS,
        max: CACHE_MAX,
        remember: Option.isSome
      })

      const authenticate = Effect.fn("Projects.authenticate")(function*(secret: string) {
        if (secret.length === 0) return yield* invalidKey
        const principal = yield* principals.get(yield* hashKey(secret))
        if (Option.isNone(principal)) return yield* invalidKey
        return principal.value
      })

      const bootstrap = Effect.fn("Projects.bootstrap")(function*(explicitKey: string | undefined) {
        return yield* tx.withTransaction(Effect.gen(function*() {
          // Hosts started at once on an empty database: without it each would create a default project, and the
          // key would belong to one while the simulated number is connected to the other.
          yield* repo.lockBootstrap
          const existing = yield* repo.list
          const project = existing[0] ?? (yield* Effect.orDie(create("Default project")))
          if (explicitKey !== undefined) {
            const known = yield* repo.findKeyByHash(yield* hashKey(explicitKey))
            if (Option.isNone(known)) {
              yield* Effect.orDie(createKey(project.id, "PARLEY_API_KEY", explicitKey))
            }
            return { project, createdSecret: Option.none<string>() }
          }
          if (existing.length > 0) return { project, createdSecret: Option.none<string>() }
          const created = yield* Effect.orDie(createKey(project.id, "default"))
          return { project, createdSecret: Option.some(created.secret) }
        }))
      })

      return Projects.of({
        create,
        list: repo.list,
        get,
        find: repo.findById,
        setDisabled: Effect.fn("Projects.setDisabled")(function*(id: string, disabled: boolean) {
          const updated = yield* repo.setDisabled(id, disabled, yield* nowIso)
          yield* principals.forget
          return yield* Option.match(updated, { onNone: () => Effect.fail(notFound("Project", id)), onSome: Effect.succeed })
        }),
        changes: repo.keyChanges,
        createKey,
        listKeys: Effect.fn("Projects.listKeys")(function*(projectId: string) {
          yield* get(projectId)
          return yield* repo.listKeys(projectId)
        }),
        revokeKey: Effect.fn("Projects.revokeKey")(function*(projectId: string, keyId: string) {
          const revoked = yield* repo.revokeKey(projectId, keyId, yield* nowIso)
          // Effective here at once, before the store's signal arrives.
          yield* principals.forget
          return yield* Option.match(revoked, { onNone: () => Effect.fail(notFound("API key", keyId)), onSome: Effect.succeed })
        }),
        authenticate,
        bootstrap
      })
    })
  )
}
