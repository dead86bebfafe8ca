/**
 * Opening a conversation before any message (decisions 2.5.1: "the service
 * finds or creates the active conversation for (sender number, contact)" at
 * an API start). A run started by the API is attached to its contact and
 * conversation from its first step, so routing finds it by (number,
 * contact), an agent reads the conversation's history, and its webhook
 * payloads name the conversation. The contact and the conversation are
 * found or made under the locks recording takes (contact, then
 * conversation), so a message recorded at the same moment shares them.
 */
import { Clock, Effect, Option } from "effect"
import { ContactsRepo, ConversationsRepo, MessagingLocks } from "./MessagingRepo.ts"
import { Transactor } from "../ports/Transactor.ts"
import { Ids } from "../shared/Ids.ts"
import { conversationEventPayload, MSG_CONVERSATION_CREATED } from "./DomainEvents.ts"
import type { ContactRecord, ConversationRecord } from "./Message.ts"
import type { MessageConfigRecord } from "./numbers/MessageConfig.ts"
import { iso, newContact, newConversation, type Recording, silentBy } from "./Recording.ts"

/** Who the conversation is with: a phone number's digits, else a business-scoped user id. */
export type ConversationParty = { readonly waId: string; readonly userId?: undefined } | { readonly waId?: undefined; readonly userId: string }

export interface ConversationOpening {
  /**
   * The contact (made when new) and its active conversation on the number (opened when it has none: `active`, no
   * messages yet, `msg.conversation.created` sent).
   */
  readonly openConversation: (
    config: MessageConfigRecord,
    party: ConversationParty
  ) => Effect.Effect<{
    readonly contact: ContactRecord
    readonly conversation: ConversationRecord
    /**
     * The contact was made by this call, in the caller's transaction: nothing else can refer to it before that
     * commits (no conversation, no run, no buffered input), so the caller may skip looking for them.
     */
    readonly contactMade: boolean
  }>
}

export const makeConversationOpening = Effect.fnUntraced(function*(recording: Recording) {
  const contacts = yield* ContactsRepo
  const conversations = yield* ConversationsRepo
  const locks = yield* MessagingLocks
  const tx = yield* Transactor
  const ids = yield* Ids
  const { domainEvent, end } = recording

  /**
   * Under the lock recording takes for a new contact: the contact found, else made, in one statement (no look
   * without the lock first: that cost a statement and a round trip for every new contact).
   */
  const findOrMakeContact = Effect.fnUntraced(function*(projectId: string, party: ConversationParty, now: string) {
    yield* locks.lock(`contact:${projectId}:${party.waId ?? party.userId}`)
    return yield* contacts.findOrInsert(newContact(projectId, { waId: party.waId, userId: party.userId }, yield* ids.uuid, now))
  })

  const openConversation = Effect.fn("Messaging.openConversation")(function*(config: MessageConfigRecord, party: ConversationParty) {
    const now = iso(yield* Clock.currentTimeMillis)
    const projectId = config.project_id
    const result = yield* tx.withTransaction(Effect.gen(function*() {
      const { contact: c, made } = yield* findOrMakeContact(projectId, party, now)
      // A contact made just now has no conversation yet, and no one else can open one before this commits.
      if (!made) {
        yield* locks.lock(`conversation:${config.id}:${c.id}`)
        const active = yield* conversations.findActive(config.id, c.id)
        if (Option.isSome(active)) {
          if (!silentBy(active.value, now)) return { contact: c, conversation: active.value, opened: false, made }
          yield* end(active.value, "inactivity", now, config)
        }
      }
      const conversation = newConversation(config, c, yield* ids.uuid, now, now)
      yield* conversations.insertMany([conversation])
      yield* domainEvent(projectId, MSG_CONVERSATION_CREATED, conversationEventPayload(config, conversation), now)
      return { contact: c, conversation, opened: true, made }
    }))
    return { contact: result.contact, conversation: result.conversation, contactMade: result.made }
  })

  return { openConversation } satisfies ConversationOpening
})
