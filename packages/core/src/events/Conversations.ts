/**
 * Whether a conversation belongs to a project, for `conversation_id` on
 * emitted events (decisions 4.5). Messaging owns conversations; this port
 * keeps events independent of it.
 */
import { Context, Effect, Layer } from "effect"

export class ConversationLookup extends Context.Service<ConversationLookup, {
  readonly exists: (projectId: string, conversationId: string) => Effect.Effect<boolean>
}>()("@parley/core/events/ConversationLookup") {}

/**
 * Answered from the stores that exist. No capability stores conversations
 * yet, so no project has one; messaging wires its own lookup here once it
 * lands.
 */
export const layerConversationLookup = Layer.succeed(
  ConversationLookup,
  ConversationLookup.of({ exists: () => Effect.succeed(false) })
)
