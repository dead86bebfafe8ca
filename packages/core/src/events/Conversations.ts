/**
 * Whether a conversation belongs to a project, for `conversation_id` on
 * emitted events (decisions 4.5). Messaging owns conversations; this port
 * keeps events independent of it (`messaging/ConversationLookup.ts` answers it).
 */
import { Context, type Effect } from "effect"

export class ConversationLookup extends Context.Service<ConversationLookup, {
  readonly exists: (projectId: string, conversationId: string) => Effect.Effect<boolean>
}>()("@parley/core/events/ConversationLookup") {}
