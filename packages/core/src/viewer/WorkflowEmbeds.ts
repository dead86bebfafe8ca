/**
 * Workflow viewer embeds (issue 31 §3): create, list, read, update and revoke them, and open the
 * viewer's requests by token. The token rules are the inbox's (`embeds/EmbedAccess.ts`): random, answered once,
 * stored as its hash, refused once revoked, after `expires_at` and while its project is disabled.
 */
import { Context, Effect, Layer, Option } from "effect"
import { embedFieldChecks, embedRecords, generateToken, openEmbed } from "../embeds/EmbedAccess.ts"
import type { Project } from "../projects/Project.ts"
import { hashKey, type Principal } from "../projects/Projects.ts"
import { ProjectsRepo } from "../projects/ProjectsRepo.ts"
import { type NotFound, Unauthorized, type Unprocessable } from "../shared/ApiError.ts"
import { Ids } from "../shared/Ids.ts"
import type { ListSlice, ListWindow } from "../shared/Pagination.ts"
import { PublicUrl, publicUrlOf } from "../shared/PublicUrl.ts"
import { nowIso } from "../shared/Time.ts"
import { WorkflowsRepo } from "../workflows/WorkflowsRepo.ts"
import type {
  WorkflowEmbedCreateInput,
  WorkflowEmbedFilter,
  WorkflowEmbedRecord,
  WorkflowEmbedScopeType,
  WorkflowEmbedUpdateInput
} from "./WorkflowEmbed.ts"
import { WorkflowEmbedsRepo } from "./WorkflowEmbedsRepo.ts"

/** An opened viewer: its embed and its project. */
export interface ViewerSession {
  readonly embed: WorkflowEmbedRecord
  readonly project: Project
}

/** The token's prefix: a viewer token never opens the inbox, nor an inbox token the viewer. */
export const WORKFLOW_EMBED_TOKEN_PREFIX = "we"

const invalidToken = () => new Unauthorized({ error: "Invalid viewer token" })
const { fieldError, checkName, checkOrigins, checkExpiry } = embedFieldChecks("workflow_embed")

export class WorkflowEmbeds extends Context.Service<WorkflowEmbeds, {
  /** The record with the token and `embed_url`, which no later answer repeats. */
  readonly create: (
    principal: Principal,
    input: WorkflowEmbedCreateInput
  ) => Effect.Effect<{ readonly embed: WorkflowEmbedRecord; readonly token: string; readonly embed_url: string }, Unprocessable>
  readonly list: (principal: Principal, filter: WorkflowEmbedFilter, window: ListWindow) => Effect.Effect<ListSlice<WorkflowEmbedRecord>>
  readonly get: (principal: Principal, id: string) => Effect.Effect<WorkflowEmbedRecord, NotFound>
  readonly update: (
    principal: Principal,
    id: string,
    input: WorkflowEmbedUpdateInput
  ) => Effect.Effect<WorkflowEmbedRecord, NotFound | Unprocessable>
  /** `DELETE`: `revoked` at once and for good; revoking a revoked embed changes nothing. */
  readonly revoke: (principal: Principal, id: string) => Effect.Effect<void, NotFound>
  /** The embed and project a token opens, recording its use; 401 `Invalid viewer token` otherwise. */
  readonly authenticate: (token: string) => Effect.Effect<ViewerSession, Unauthorized>
}>()("@parley/core/viewer/WorkflowEmbeds") {
  static readonly layer = Layer.effect(
    WorkflowEmbeds,
    Effect.gen(function*() {
      const repo = yield* WorkflowEmbedsRepo
      const workflows = yield* WorkflowsRepo
      const projects = yield* ProjectsRepo
      const ids = yield* Ids

      const records = embedRecords(repo, "Workflow embed")

      /** The scope's display name, or 422 naming `scope_id` when the scope is not the project's. */
      const resolveScope = Effect.fn("WorkflowEmbeds.resolveScope")(
        function*(project: Project, scopeType: WorkflowEmbedScopeType, scopeId: string | null | undefined) {
          const id = scopeId === undefined || scopeId === null || scopeId.trim() === "" ? null : scopeId.trim()
          if (scopeType === "project") {
            if (id !== null) return yield* fieldError("scope_id", "must be absent for scope_type project")
            return { scope_id: null, scope_name: project.name }
          }
          if (id === null) return yield* fieldError("scope_id", "is required for scope_type workflow")
          const workflow = yield* workflows.findById(project.id, id)
          if (Option.isNone(workflow)) return yield* fieldError("scope_id", "is not a workflow of this project")
          return { scope_id: id, scope_name: workflow.value.name }
        }
      )

      const create = Effect.fn("WorkflowEmbeds.create")(function*(principal: Principal, input: WorkflowEmbedCreateInput) {
        const scope = yield* resolveScope(principal.project, input.scope_type, input.scope_id)
        const now = yield* nowIso
        const token = yield* generateToken(WORKFLOW_EMBED_TOKEN_PREFIX)
        const embed: WorkflowEmbedRecord = {
          id: yield* ids.uuid,
          project_id: principal.project.id,
          name: yield* checkName(input.name ?? scope.scope_name ?? "Workflows"),
          scope_type: input.scope_type,
          ...scope,
          access: input.access ?? "view",
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
        return { embed, token, embed_url: publicUrlOf(base, `viewer/${token}`).toString() }
      })

      const update = Effect.fn("WorkflowEmbeds.update")(function*(principal: Principal, id: string, input: WorkflowEmbedUpdateInput) {
        const current = yield* records.find(principal.project.id, id)
        const next: WorkflowEmbedRecord = {
          ...current,
          name: input.name !== undefined ? yield* checkName(input.name) : current.name,
          access: input.access ?? current.access,
          allowed_origins: input.allowed_origins !== undefined ? yield* checkOrigins(input.allowed_origins) : current.allowed_origins,
          default_mode: input.default_mode ?? current.default_mode,
          language: input.language ?? current.language,
          expires_at: input.expires_at !== undefined ? yield* checkExpiry(input.expires_at) : current.expires_at,
          updated_at: yield* nowIso
        }
        return yield* records.save(next)
      })

      const authenticate = Effect.fn("WorkflowEmbeds.authenticate")(function*(token: string) {
        const opened = yield* openEmbed(token, WORKFLOW_EMBED_TOKEN_PREFIX, repo).pipe(Effect.provideService(ProjectsRepo, projects))
        return yield* Option.match(opened, { onNone: () => Effect.fail(invalidToken()), onSome: Effect.succeed })
      })

      return WorkflowEmbeds.of({
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
