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

/** A contact found or made (`findOrMakeContact`), and whether it was made. */
export interface ContactFound {
  readonly contact: ContactRecord
  /**
   * The contact was made by this call, in the caller's transaction: nothing else can refer to it before that
   * commits (no conversation, no run, no buffered input), so the caller may skip looking for them.
   */
  readonly made: boolean
}

export interface ConversationOpening {
  /**
   * In the caller's transaction, under the lock recording takes for a new contact: the contact found, else made, in
   * one statement. For a caller that reads other things beside it (an API start: its workflow and sender), then
   * passes it to `openConversation`.
   */
  readonly findOrMakeContact: (projectId: string, party: ConversationParty) => Effect.Effect<ContactFound>
  /**
   * The contact (made when new) and its active conversation on the number (opened when it has none: `active`, no
   * messages yet, `msg.conversation.created` sent).
   */
  readonly openConversation: <A = undefined>(
    config: MessageConfigRecord,
    party: ConversationParty,
    options?: {
      /** The party's contact, found in the caller's transaction already (`findOrMakeContact`). */
      readonly found?: ContactFound | undefined
      /**
       * A read of the caller's about a stored contact, made beside the look for its active conversation (one round
       * trip for both), under the conversation's lock. It writes nothing itself but in a savepoint of its own.
       */
      readonly beside?: ((contact: ContactRecord) => Effect.Effect<A>) | undefined
    }
  ) => Effect.Effect<{
    readonly contact: ContactRecord
    readonly conversation: ConversationRecord
    /**
     * The contact was made by this call, in the caller's transaction: nothing else can refer to it before that
     * commits (no conversation, no run, no buffered input), so the caller may skip looking for them.
     */
    readonly contactMade: boolean
    /** What `beside` answered; undefined when the contact was made (nothing can refer to it yet). */
    readonly beside: A | undefined
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
  const findOrMakeContact = Effect.fnUntraced(function*(projectId: string, party: ConversationParty) {
    const now = iso(yield* Clock.currentTimeMillis)
    yield* locks.lock(`contact:${projectId}:${party.waId ?? party.userId}`)
    const { contact, made } = yield* contacts.findOrInsert(newContact(projectId, { waId: party.waId, userId: party.userId }, yield* ids.uuid, now))
    return { contact, made } satisfies ContactFound
  })

  const openConversation = Effect.fn("Messaging.openConversation")(function*<A = undefined>(
    config: MessageConfigRecord,
    party: ConversationParty,
    options?: { readonly found?: ContactFound | undefined; readonly beside?: ((contact: ContactRecord) => Effect.Effect<A>) | undefined }
  ) {
    const beside = options?.beside
    const now = iso(yield* Clock.currentTimeMillis)
    const projectId = config.project_id
    const result = yield* tx.withTransaction(Effect.gen(function*() {
      const { contact: c, made } = options?.found ?? (yield* findOrMakeContact(projectId, party))
      // A contact made just now has no conversation yet, and no one else can open one before this commits.
      let answered: A | undefined
      if (!made) {
        // The lock first, then both reads at once: whatever locks `beside` takes come after it.
        yield* locks.lock(`conversation:${config.id}:${c.id}`)
        const [active, other] = yield* Effect.all([
          conversations.findActive(config.id, c.id),
          beside === undefined ? Effect.undefined : beside(c)
        ], { concurrency: 2 })
        answered = other
        if (Option.isSome(active)) {
          if (!silentBy(active.value, now)) return { contact: c, conversation: active.value, opened: false, made, answered }
          yield* end(active.value, "inactivity", now, config)
        }
      }
      const conversation = newConversation(config, c, yield* ids.uuid, now, now)
      yield* conversations.insertMany([conversation])
      yield* domainEvent(projectId, MSG_CONVERSATION_CREATED, conversationEventPayload(config, conversation), now)
      return { contact: c, conversation, opened: true, made, answered }
    }))
    return { contact: result.contact, conversation: result.conversation, contactMade: result.made, beside: result.answered }
  })

  return { findOrMakeContact, openConversation } satisfies ConversationOpening
})
