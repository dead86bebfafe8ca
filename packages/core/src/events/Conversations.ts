/**
 * Whether a conversation belongs to a project, for `conversation_id` on
 * emitted events (decisions 4.5). Messaging owns conversations; this port
 * keeps events independent of it.
 */
import { Context, Effect, Layer, Option } from "effect"
import { ConversationsRepo } from "../messaging/MessagingRepo.ts"

export class ConversationLookup extends Context.Service<ConversationLookup, {
  readonly exists: (projectId: string, conversationId: string) => Effect.Effect<boolean>
}>()("@parley/core/events/ConversationLookup") {}

/** Answered from messaging's stored conversations: a conversation of another project does not exist. */
export const layerConversationLookup = Layer.effect(
  ConversationLookup,
  Effect.gen(function*() {
    const conversations = yield* ConversationsRepo
    return ConversationLookup.of({
      exists: (projectId, conversationId) => Effect.map(conversations.findById(projectId, conversationId), Option.isSome)
    })
  })
)
