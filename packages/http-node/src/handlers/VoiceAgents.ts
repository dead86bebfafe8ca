/** Voice agents (older surface, read-only): one service call → encode (contract). */
import { CurrentPrincipal, ParleyApi, VoiceAgents } from "@parley/core"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"

export const VoiceAgentsHandlers = HttpApiBuilder.group(
  ParleyApi,
  "voiceAgents",
  Effect.fn(function*(handlers) {
    const agents = yield* VoiceAgents
    return handlers.handle("list", () =>
      Effect.gen(function*() {
        const principal = yield* CurrentPrincipal
        return { data: yield* agents.list(principal.project.id) }
      }))
  })
)
