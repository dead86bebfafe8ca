/** The HTTP contract of voice agents (decisions 4.13): `GET {legacy_url}/voice_agents`, read-only. */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { Authentication } from "../http/Middleware.ts"
import { VoiceAgent } from "./VoiceAgent.ts"

export class VoiceAgentsApi extends HttpApiGroup.make("voiceAgents")
  .add(
    HttpApiEndpoint.get("list", "/voice_agents", {
      success: Schema.Struct({ data: Schema.Array(VoiceAgent) })
    }).annotateMerge(OpenApi.annotations({
      summary: "List the project's voice agents",
      description: "The voice agents the operator declared for the key's project (`parley voice-agents add`), by name; " +
        "read-only over the API."
    }))
  )
  .middleware(Authentication)
  .prefix("/api/v1")
  .annotateMerge(OpenApi.annotations({
    title: "Voice agents (older surface)",
    description: "The voice agents the operator declared for the project (`parley voice-agents add`), by name"
  }))
{}
