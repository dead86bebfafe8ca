/**
 * The service every embed kind offers (the inbox's, the workflow viewer's): create, list, read, update and revoke
 * embeds, and open a page's requests by token. What a kind adds is described by an `EmbedKind`: its words, its
 * token prefix and page path, how it resolves a scope, and its own fields.
 */
import { Effect, Option } from "effect"
import type { Project } from "../projects/Project.ts"
import { hashKey, type Principal, Projects } from "../projects/Projects.ts"
import { type NotFound, notFound, Unauthorized, type Unprocessable } from "../shared/ApiError.ts"
import { Ids } from "../shared/Ids.ts"
import type { ListSlice, ListWindow } from "../shared/Pagination.ts"
import { PublicUrl, publicUrlOf } from "../shared/PublicUrl.ts"
import { nowIso } from "../shared/Time.ts"
import type { EmbedRecordOf } from "./Embed.ts"
import { embedFieldChecks, type EmbedLanguage, type EmbedMode, generateToken, openEmbed } from "./EmbedAccess.ts"
import type { EmbedsRepo } from "./EmbedsRepo.ts"

/** An opened page: its embed and its project. */
export interface OpenedEmbed<R> {
  readonly embed: R
  readonly project: Project
}

/** The inputs every kind lets a caller set on create and change on update. */
export interface EmbedEditableInput {
  readonly name?: string
  readonly allowed_origins?: ReadonlyArray<string>
  readonly default_mode?: EmbedMode
  readonly language?: EmbedLanguage
  readonly expires_at?: string | null
}

export interface EmbedCreateInputOf<S extends string> extends EmbedEditableInput {
  readonly scope_type: S
  readonly scope_id?: string | null
}

export interface EmbedsService<R, C, U, F> {
  /** The record with the token and `embed_url`, which no later answer repeats. */
  readonly create: (
    principal: Principal,
    input: C
  ) => Effect.Effect<{ readonly embed: R; readonly token: string; readonly embed_url: string }, Unprocessable>
  readonly list: (principal: Principal, filter: F, window: ListWindow) => Effect.Effect<ListSlice<R>>
  readonly get: (principal: Principal, id: string) => Effect.Effect<R, NotFound>
  readonly update: (principal: Principal, id: string, input: U) => Effect.Effect<R, NotFound | Unprocessable>
  /** `DELETE`: `revoked` at once and for good; revoking a revoked embed changes nothing. */
  readonly revoke: (principal: Principal, id: string) => Effect.Effect<void, NotFound>
  /** The embed and project a token opens, recording its use; 401 with the kind's words otherwise. */
  readonly authenticate: (token: string) => Effect.Effect<OpenedEmbed<R>, Unauthorized>
}

type FieldError = (field: string, message: string) => Unprocessable

export interface EmbedKind<S extends string, Own, C extends EmbedCreateInputOf<S>, U extends EmbedEditableInput> {
  /** The service's name in its spans (`InboxEmbeds`). */
  readonly service: string
  /** The 404's resource (`Inbox embed`). */
  readonly resource: string
  /** The request's key (`inbox_embed`), named in the 422's paths. */
  readonly envelope: string
  /** The token's prefix: one kind's token never opens another kind's page. */
  readonly tokenPrefix: string
  /** Where the page lives below the public URL (`embed`, `viewer`). */
  readonly pagePath: string
  /** The 401's words. */
  readonly invalidToken: string
  /** The name when the create input gives none. */
  readonly defaultName: (scopeName: string | null) => string
  /** The display name of a scope other than the project; a failure message when the scope is not the project's. */
  readonly scopeName: (
    project: Project,
    scopeType: Exclude<S, "project">,
    id: string
  ) => Effect.Effect<{ readonly name: string | null } | { readonly refused: string }>
  /** The kind's own fields of a new embed. */
  readonly created: (input: C, fieldError: FieldError) => Effect.Effect<Own, Unprocessable>
  /** The kind's own fields after an update. */
  readonly updated: (current: Own, input: U, fieldError: FieldError) => Effect.Effect<Own, Unprocessable>
}

export const makeEmbeds = <S extends string, Own, C extends EmbedCreateInputOf<S>, U extends EmbedEditableInput, F>(
  repo: EmbedsRepo<EmbedRecordOf<S> & Own, F>,
  kind: EmbedKind<S, Own, C, U>
) =>
  Effect.gen(function*() {
    type R = EmbedRecordOf<S> & Own
    const projects = yield* Projects
    const ids = yield* Ids
    const { fieldError, checkName, checkOrigins, checkExpiry } = embedFieldChecks(kind.envelope)
    const invalidToken = () => new Unauthorized({ error: kind.invalidToken })

    const gone = (id: string) => () => Effect.fail(notFound(kind.resource, id))
    const find = (projectId: string, id: string) =>
      Effect.flatMap(repo.findById(projectId, id), Option.match({ onNone: gone(id), onSome: Effect.succeed }))

    /** The scope's display name, or 422 naming `scope_id` when the scope is not the project's. */
    const resolveScope = Effect.fn(`${kind.service}.resolveScope`)(function*(project: Project, scopeType: S, scopeId: string | null | undefined) {
      const id = scopeId === undefined || scopeId === null || scopeId.trim() === "" ? null : scopeId.trim()
      if (scopeType === "project") {
        if (id !== null) return yield* fieldError("scope_id", "must be absent for scope_type project")
        return { scope_id: null, scope_name: project.name }
      }
      if (id === null) return yield* fieldError("scope_id", `is required for scope_type ${scopeType}`)
      const scope = yield* kind.scopeName(project, scopeType as Exclude<S, "project">, id)
      if ("refused" in scope) return yield* fieldError("scope_id", scope.refused)
      return { scope_id: id, scope_name: scope.name }
    })

    const create = Effect.fn(`${kind.service}.create`)(function*(principal: Principal, input: C) {
      const scope = yield* resolveScope(principal.project, input.scope_type, input.scope_id)
      const now = yield* nowIso
      const token = yield* generateToken(kind.tokenPrefix)
      const embed = {
        id: yield* ids.uuid,
        project_id: principal.project.id,
        name: yield* checkName(input.name ?? kind.defaultName(scope.scope_name)),
        scope_type: input.scope_type,
        ...scope,
        ...(yield* kind.created(input, fieldError)),
        status: "active",
        allowed_origins: yield* checkOrigins(input.allowed_origins ?? []),
        default_mode: input.default_mode ?? "system",
        language: input.language ?? "en",
        expires_at: yield* checkExpiry(input.expires_at ?? null),
        last_used_at: null,
        token_hash: yield* hashKey(token),
        created_at: now,
        updated_at: now
      } as R
      yield* repo.insert(embed)
      const base = yield* PublicUrl
      return { embed, token, embed_url: publicUrlOf(base, `${kind.pagePath}/${token}`).toString() }
    })

    const update = Effect.fn(`${kind.service}.update`)(function*(principal: Principal, id: string, input: U) {
      const current = yield* find(principal.project.id, id)
      const next: R = {
        ...current,
        name: input.name !== undefined ? yield* checkName(input.name) : current.name,
        ...(yield* kind.updated(current, input, fieldError)),
        allowed_origins: input.allowed_origins !== undefined ? yield* checkOrigins(input.allowed_origins) : current.allowed_origins,
        default_mode: input.default_mode ?? current.default_mode,
        language: input.language ?? current.language,
        expires_at: input.expires_at !== undefined ? yield* checkExpiry(input.expires_at) : current.expires_at,
        updated_at: yield* nowIso
      }
      return yield* Effect.flatMap(repo.update(next), Option.match({ onNone: gone(id), onSome: Effect.succeed }))
    })

    const revoke = Effect.fnUntraced(function*(principal: Principal, id: string) {
      const current = yield* find(principal.project.id, id)
      if (current.status === "revoked") return
      yield* repo.update({ ...current, status: "revoked", updated_at: yield* nowIso })
    })

    const authenticate = Effect.fn(`${kind.service}.authenticate`)(function*(token: string) {
      const opened = yield* openEmbed(token, kind.tokenPrefix, repo).pipe(Effect.provideService(Projects, projects))
      return yield* Option.match(opened, { onNone: () => Effect.fail(invalidToken()), onSome: Effect.succeed })
    })

    const service: EmbedsService<R, C, U, F> = {
      create,
      list: (principal, filter, window) => repo.list(principal.project.id, filter, window),
      get: (principal, id) => find(principal.project.id, id),
      update,
      revoke,
      authenticate
    }
    return service
  })
