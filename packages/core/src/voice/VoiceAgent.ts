/**
 * Voice agents (spec "Voice agent", decisions 4.13): records an operator
 * declares for a project with the CLI (`parley voice-agents`), listed
 * read-only at `GET {legacy_url}/voice_agents`.
 */
import { Clock, Context, Effect, Layer, Option, Schema } from "effect"
import { Projects } from "../projects/Projects.ts"
import { VoiceAgentsRepo } from "./VoiceAgentsRepo.ts"
import { type ErrorDetail, type NotFound, notFoundNamed, type Unprocessable, unprocessable } from "../shared/ApiError.ts"
import { Ids } from "../shared/Ids.ts"

export const VoiceAgentProvider = Schema.Struct({
  type: Schema.String,
  kind: Schema.String,
  agent_name: Schema.String
})

/** The record as the API shows it. */
export const VoiceAgent = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  provider: VoiceAgentProvider,
  created_at: Schema.String,
  updated_at: Schema.String
}).annotate({ identifier: "VoiceAgent" })
export type VoiceAgent = typeof VoiceAgent.Type

export interface VoiceAgentRecord extends VoiceAgent {
  readonly project_id: string
}

/** What an operator gives (the CLI's flags). */
export interface VoiceAgentDeclaration {
  readonly name: string
  readonly provider: { readonly type: string; readonly kind: string; readonly agent_name: string }
}

export const MaxVoiceAgentFieldLength = 128

const problemsOf = (d: VoiceAgentDeclaration): ReadonlyArray<ErrorDetail> => {
  const fields: ReadonlyArray<readonly [string, string]> = [
    ["name", d.name],
    ["provider.type", d.provider.type],
    ["provider.kind", d.provider.kind],
    ["provider.agent_name", d.provider.agent_name]
  ]
  return fields.flatMap(([path, value]) =>
    value.trim() === ""
      ? [{ path, message: "must not be empty" }]
      : value.length > MaxVoiceAgentFieldLength
      ? [{ path, message: `must be at most ${MaxVoiceAgentFieldLength} characters` }]
      : []
  )
}

export const toVoiceAgent = ({ project_id: _project, ...agent }: VoiceAgentRecord): VoiceAgent => agent

export class VoiceAgents extends Context.Service<VoiceAgents, {
  /** The project's voice agents by name. */
  readonly list: (projectId: string) => Effect.Effect<ReadonlyArray<VoiceAgent>>
  /** Creates or replaces (by name, keeping id and created_at) a voice agent; 404 unknown project, 422 naming each bad field. */
  readonly declare: (
    projectId: string,
    declaration: VoiceAgentDeclaration
  ) => Effect.Effect<VoiceAgent, NotFound | Unprocessable>
  /** False when the project has no voice agent of that name. */
  readonly remove: (projectId: string, name: string) => Effect.Effect<boolean>
}>()("@parley/core/voice/VoiceAgents") {
  static readonly layer = Layer.effect(
    VoiceAgents,
    Effect.gen(function*() {
      const repo = yield* VoiceAgentsRepo
      const projects = yield* Projects
      const ids = yield* Ids
      return VoiceAgents.of({
        list: Effect.fn("VoiceAgents.list")(function*(projectId: string) {
          return (yield* repo.list(projectId)).map(toVoiceAgent)
        }),
        declare: Effect.fn("VoiceAgents.declare")(function*(projectId, declaration) {
          const problems = problemsOf(declaration)
          const first = problems[0]
          if (first !== undefined) return yield* unprocessable(`${first.path} ${first.message}`, problems)
          if (Option.isNone(yield* projects.find(projectId))) return yield* notFoundNamed("Project", projectId)
          const now = new Date(yield* Clock.currentTimeMillis).toISOString()
          return toVoiceAgent(yield* repo.declare({
            id: yield* ids.uuid,
            project_id: projectId,
            name: declaration.name.trim(),
            provider: {
              type: declaration.provider.type.trim(),
              kind: declaration.provider.kind.trim(),
              agent_name: declaration.provider.agent_name.trim()
            },
            created_at: now,
            updated_at: now
          }))
        }),
        remove: (projectId, name) => repo.remove(projectId, name)
      })
    })
  )
}
