/**
 * Project secrets (decisions 10.5.4): set, listed (names only) and deleted by
 * the operator, resolved for `${ENV:NAME}` when a workflow node runs. Values
 * are encrypted with the host's secret key (`FunctionSecretsCipher`), bound
 * to the project and the name.
 */
import { Clock, Context, Data, Effect, Layer, Option } from "effect"
import { FunctionSecretsCipher } from "../shared/SecretCipher.ts"
import * as SignalledCache from "../shared/SignalledCache.ts"
import { ProjectSecretsRepo } from "./ProjectSecretsRepo.ts"
import { ProjectsRepo } from "./ProjectsRepo.ts"
import { invalid, type NotFound, notFound, notFoundNamed, type Unprocessable } from "../shared/ApiError.ts"
import {
  PROJECT_SECRET_NAME,
  PROJECT_SECRET_NAME_MAX_LENGTH,
  PROJECT_SECRET_VALUE_MAX_BYTES,
  type ProjectSecretInfo,
  projectSecretScope,
  toProjectSecretInfo
} from "./ProjectSecret.ts"

/** A stored value this host cannot decrypt (another key, tampered data). */
export class ProjectSecretsUnreadable extends Data.TaggedError("ProjectSecretsUnreadable")<{
  readonly name: string
  readonly message: string
}> {}

const CACHE_TTL_MS = 60_000
const CACHE_MAX = 10_000

export class ProjectSecrets extends Context.Service<ProjectSecrets, {
  /** Creates or replaces the secret; 422 for a bad name or value, 404 for an unknown project. */
  readonly set: (projectId: string, name: string, value: string) => Effect.Effect<ProjectSecretInfo, NotFound | Unprocessable>
  readonly list: (projectId: string) => Effect.Effect<ReadonlyArray<ProjectSecretInfo>, NotFound>
  readonly delete: (projectId: string, name: string) => Effect.Effect<void, NotFound>
  /** Every secret of the project, decrypted, by name (for interpolation: never logged). */
  readonly resolve: (projectId: string) => Effect.Effect<ReadonlyMap<string, string>, ProjectSecretsUnreadable>
}>()("@parley/core/projects/ProjectSecrets") {
  static readonly layer = Layer.effect(
    ProjectSecrets,
    Effect.gen(function*() {
      const repo = yield* ProjectSecretsRepo
      const projects = yield* ProjectsRepo
      const keys = yield* FunctionSecretsCipher

      // Every function invoke and `${ENV:NAME}` resolves a project's secrets: their sealed values are remembered per
      // project, dropped by every put or delete from any process sharing the store (`changes`) and at once after
      // this process's own, and expire as a backstop. Values stay sealed in the cache: a resolve decrypts.
      const sealed = yield* SignalledCache.make({
        lookup: repo.list,
        keyOf: (projectId: string) => projectId,
        changes: repo.changes,
        ttlMs: CACHE_TTL_MS,
        max: CACHE_MAX
      })

      const requireProject = (projectId: string) =>
        Effect.flatMap(projects.findById(projectId), (found) => Option.isNone(found) ? Effect.fail(notFound("Project", projectId)) : Effect.void)

      const set = Effect.fn("ProjectSecrets.set")(function*(projectId: string, name: string, value: string) {
        yield* requireProject(projectId)
        if (name.length > PROJECT_SECRET_NAME_MAX_LENGTH || !PROJECT_SECRET_NAME.test(name)) {
          return yield* invalid("name", `must be 1 to ${PROJECT_SECRET_NAME_MAX_LENGTH} of A-Z, 0-9 and _`, `Secret names are 1 to ${PROJECT_SECRET_NAME_MAX_LENGTH} of A-Z, 0-9 and _`)
        }
        if (Buffer.byteLength(value, "utf8") > PROJECT_SECRET_VALUE_MAX_BYTES) {
          return yield* invalid("value", `must be at most ${PROJECT_SECRET_VALUE_MAX_BYTES / 1024} KB`, `Secret values are at most ${PROJECT_SECRET_VALUE_MAX_BYTES / 1024} KB`)
        }
        const cipher = yield* keys.cipher
        const now = new Date(yield* Clock.currentTimeMillis).toISOString()
        const stored = yield* repo.put({
          project_id: projectId,
          name,
          ciphertext: cipher.encrypt(projectSecretScope(projectId), name, value),
          created_at: now,
          updated_at: now
        })
        yield* sealed.forget
        return toProjectSecretInfo(stored)
      })

      const list = Effect.fn("ProjectSecrets.list")(function*(projectId: string) {
        yield* requireProject(projectId)
        return (yield* repo.list(projectId)).map(toProjectSecretInfo)
      })

      const remove = Effect.fn("ProjectSecrets.delete")(function*(projectId: string, name: string) {
        yield* requireProject(projectId)
        if (!(yield* repo.delete(projectId, name))) return yield* notFoundNamed("Secret", name)
        yield* sealed.forget
      })

      const resolve = Effect.fn("ProjectSecrets.resolve")(function*(projectId: string) {
        const stored = yield* sealed.get(projectId)
        const values = new Map<string, string>()
        if (stored.length === 0) return values
        const cipher = yield* keys.cipher
        for (const secret of stored) {
          const plain = yield* cipher.decrypt(projectSecretScope(projectId), secret.name, secret.ciphertext).pipe(
            Effect.mapError((e) => new ProjectSecretsUnreadable({ name: secret.name, message: `Project secret ${secret.name} could not be read: ${e.message}` }))
          )
          values.set(secret.name, plain)
        }
        return values
      })

      return ProjectSecrets.of({ set, list, delete: remove, resolve })
    })
  )
}
