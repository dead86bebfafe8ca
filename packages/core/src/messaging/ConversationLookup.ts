/** Events' `ConversationLookup` answered from messaging's stored conversations. */
import { Effect, Layer, Option } from "effect"
import { ConversationLookup } from "../events/Conversations.ts"
import { ConversationsRepo } from "./MessagingRepo.ts"

/** A conversation of another project does not exist. */
export const layerConversationLookup = Layer.effect(
  ConversationLookup,
  Effect.gen(function*() {
    const conversations = yield* ConversationsRepo
    return ConversationLookup.of({
      exists: (projectId, conversationId) => Effect.map(conversations.findById(projectId, conversationId), Option.isSome)
    })
  })
)
