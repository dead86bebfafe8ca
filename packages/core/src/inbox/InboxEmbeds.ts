/**
 * Inbox embeds (decisions 2.17, 3.6, 4.7, 5): create, list, read, update and revoke them, and authenticate the
 * embedded inbox's requests by token. The token is random, answered once and stored as its sha256 hash; it is
 * refused once the embed is revoked, after `expires_at`, and when its project is disabled.
 */
import { Context, Effect, Layer, Option } from "effect"
import { embedFieldChecks, embedRecords, generateToken, openEmbed } from "../embeds/EmbedAccess.ts"
import { PublicUrl, publicUrlOf } from "../shared/PublicUrl.ts"
import { CustomersRepo } from "../tenancy/CustomersRepo.ts"
import { InboxEmbedsRepo } from "./InboxEmbedsRepo.ts"
import { MessageConfigsRepo } from "../messaging/numbers/MessageConfigsRepo.ts"
import { ProjectsRepo } from "../projects/ProjectsRepo.ts"
import type { Project } from "../projects/Project.ts"
import { hashKey, type Principal } from "../projects/Projects.ts"
import { type NotFound, Unauthorized, type Unprocessable } from "../shared/ApiError.ts"
import { Ids } from "../shared/Ids.ts"
import type { ListSlice, ListWindow } from "../shared/Pagination.ts"
import { nowIso } from "../shared/Time.ts"
import type {
  EmbedScopeType,
  InboxEmbedCreateInput,
  InboxEmbedFilter,
  InboxEmbedRecord,
  InboxEmbedUpdateInput
} from "./InboxEmbed.ts"

/** An authenticated embedded inbox: its embed and its project. */
export interface EmbedSession {
  readonly embed: InboxEmbedRecord
  readonly project: Project
}

const USER_FIELD_MAX = 200

const invalidToken = () => new Unauthorized({ error: "Invalid inbox token" })

const { fieldError, checkName, checkOrigins, checkExpiry } = embedFieldChecks("inbox_embed")

const checkUserField = (field: string, value: string | null) => {
  const trimmed = value?.trim() ?? ""
  if (trimmed.length > USER_FIELD_MAX) return Effect.fail(fieldError(field, `must be at most ${USER_FIELD_MAX} characters`))
  return Effect.succeed(trimmed === "" ? null : trimmed)
}

export class InboxEmbeds extends Context.Service<InboxEmbeds, {
  /** The record with the token and `embed_url`, which no later answer repeats. */
  readonly create: (
    principal: Principal,
    input: InboxEmbedCreateInput
  ) => Effect.Effect<{ readonly embed: InboxEmbedRecord; readonly token: string; readonly embed_url: string }, Unprocessable>
  readonly list: (principal: Principal, filter: InboxEmbedFilter, window: ListWindow) => Effect.Effect<ListSlice<InboxEmbedRecord>>
  readonly get: (principal: Principal, id: string) => Effect.Effect<InboxEmbedRecord, NotFound>
  readonly update: (
    principal: Principal,
    id: string,
    input: InboxEmbedUpdateInput
  ) => Effect.Effect<InboxEmbedRecord, NotFound | Unprocessable>
  /** `DELETE`: `revoked` at once and for good; revoking a revoked embed changes nothing. */
  readonly revoke: (principal: Principal, id: string) => Effect.Effect<void, NotFound>
  /** The embed and project a token opens, recording its use; 401 `Invalid inbox token` otherwise. */
  readonly authenticate: (token: string) => Effect.Effect<EmbedSession, Unauthorized>
}>()("@parley/core/inbox/InboxEmbeds") {
  static readonly layer = Layer.effect(
    InboxEmbeds,
    Effect.gen(function*() {
      const repo = yield* InboxEmbedsRepo
      const customers = yield* CustomersRepo
      const configs = yield* MessageConfigsRepo
      const projects = yield* ProjectsRepo
      const ids = yield* Ids

      const records = embedRecords(repo, "Inbox embed")

      /** The scope's display name, or 422 naming `scope_id` when the scope is not the project's. */
      const resolveScope = Effect.fn("InboxEmbeds.resolveScope")(
        function*(project: Project, scopeType: EmbedScopeType, scopeId: string | null | undefined) {
          const id = scopeId === undefined || scopeId === null || scopeId.trim() === "" ? null : scopeId.trim()
          if (scopeType === "project") {
            if (id !== null) return yield* fieldError("scope_id", "must be absent for scope_type project")
            return { scope_id: null, scope_name: project.name }
          }
          if (id === null) return yield* fieldError("scope_id", `is required for scope_type ${scopeType}`)
          if (scopeType === "customer") {
            const customer = yield* customers.findById(project.id, id)
            if (Option.isNone(customer)) return yield* fieldError("scope_id", "is not a customer of this project")
            return { scope_id: id, scope_name: customer.value.name }
          }
          const config = yield* configs.findByPhoneNumberId(id)
          if (Option.isNone(config) || config.value.project_id !== project.id || config.value.deleted_at !== null) {
            return yield* fieldError("scope_id", "is not a phone_number_id of this project")
          }
          return { scope_id: id, scope_name: config.value.display_name }
        }
      )

      const create = Effect.fn("InboxEmbeds.create")(function*(principal: Principal, input: InboxEmbedCreateInput) {
        const scope = yield* resolveScope(principal.project, input.scope_type, input.scope_id)
        const now = yield* nowIso
        const token = yield* generateToken("ie")
        const embed: InboxEmbedRecord = {
          id: yield* ids.uuid,
          project_id: principal.project.id,
          name: yield* checkName(input.name ?? "Inbox"),
          scope_type: input.scope_type,
          ...scope,
          assigned_user_id: yield* checkUserField("assigned_user_id", input.assigned_user_id ?? null),
          assigned_user_name: yield* checkUserField("assigned_user_name", input.assigned_user_name ?? null),
          status: "active",
          allowed_origins: yield* checkOrigins(input.allowed_origins ?? []),
          default_mode: input.default_mode ?? "system",
          language: input.language ?? "en",
          expires_at: yield* checkExpiry(input.expires_at ?? null),
          last_used_at: null,
          token_hash: yield* hashKey(token),
          created_at: now,
          updated_at: now
        }
        yield* repo.insert(embed)
        const base = yield* PublicUrl
        return { embed, token, embed_url: publicUrlOf(base, `embed/${token}`).toString() }
      })

      const update = Effect.fn("InboxEmbeds.update")(function*(principal: Principal, id: string, input: InboxEmbedUpdateInput) {
        const current = yield* records.find(principal.project.id, id)
        const next: InboxEmbedRecord = {
          ...current,
          name: input.name !== undefined ? yield* checkName(input.name) : current.name,
          assigned_user_id: input.assigned_user_id !== undefined
            ? yield* checkUserField("assigned_user_id", input.assigned_user_id)
            : current.assigned_user_id,
          assigned_user_name: input.assigned_user_name !== undefined
            ? yield* checkUserField("assigned_user_name", input.assigned_user_name)
            : current.assigned_user_name,
          allowed_origins: input.allowed_origins !== undefined ? yield* checkOrigins(input.allowed_origins) : current.allowed_origins,
          default_mode: input.default_mode ?? current.default_mode,
          language: input.language ?? current.language,
          expires_at: input.expires_at !== undefined ? yield* checkExpiry(input.expires_at) : current.expires_at,
          updated_at: yield* nowIso
        }
        return yield* records.save(next)
      })

      const authenticate = Effect.fn("InboxEmbeds.authenticate")(function*(token: string) {
        const opened = yield* openEmbed(token, "ie", repo).pipe(Effect.provideService(ProjectsRepo, projects))
        return yield* Option.match(opened, { onNone: () => Effect.fail(invalidToken()), onSome: Effect.succeed })
      })

      return InboxEmbeds.of({
        create,
        list: records.list,
        get: records.get,
        update,
        revoke: records.revoke,
        authenticate
      })
    })
  )
}
