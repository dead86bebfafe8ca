/**
 * Stored conversations and contacts (decisions 2.10, 3.5): the reads, the
 * 24-hour end after silence (and the manual one), and the Platform API's
 * update of a conversation's status and metadata.
 */
import { Clock, Effect, Option } from "effect"
import { MessageConfigsRepo } from "./numbers/MessageConfigsRepo.ts"
import { ContactsRepo, ConversationsRepo, MessagingLocks } from "./MessagingRepo.ts"
import { Transactor } from "../ports/Transactor.ts"
import { type NotFound, notFound, type Unprocessable, unprocessable } from "../shared/ApiError.ts"
import type { ListSlice, ListWindow } from "../shared/Pagination.ts"
import { phoneDigits } from "./numbers/MessageConfig.ts"
import {
  type ContactFilter,
  type ContactRecord,
  type ConversationEndReason,
  type ConversationFilter,
  type ConversationRecord,
  type ConversationStatus
} from "./Message.ts"
import { CONVERSATION_IDLE_MS } from "./Queues.ts"
import { iso, type Recording } from "./Recording.ts"

/** What a Platform API PATCH may change on a conversation; absent keys stay as they are. */
export interface ConversationChange {
  readonly status?: ConversationStatus | undefined
  /** `null` clears it. */
  readonly metadata?: Readonly<Record<string, unknown>> | null | undefined
}

/** Largest `metadata` of a conversation, serialized as JSON (decisions 2.10). */
export const CONVERSATION_METADATA_MAX_BYTES = 16 * 1024
export interface StoredConversations {
  /** Ends an active conversation; None when it is unknown, already ended answers it unchanged. */
  readonly endConversation: (
    projectId: string,
    conversationId: string,
    reason: ConversationEndReason
  ) => Effect.Effect<Option.Option<ConversationRecord>>
  /**
   * Ends the conversation when 24 hours passed since its last message;
   * otherwise answers it (still active, with the time its silence would end it).
   */
  readonly endIfIdle: (projectId: string, conversationId: string) => Effect.Effect<Option.Option<ConversationRecord>>
  readonly listConversations: (
    projectId: string,
    filter: ConversationFilter,
    window: ListWindow
  ) => Effect.Effect<ListSlice<ConversationRecord>>
  readonly getConversation: (projectId: string, id: string) => Effect.Effect<ConversationRecord, NotFound>
  /** By id; None when the project has none. */
  readonly findConversation: (projectId: string, id: string) => Effect.Effect<Option.Option<ConversationRecord>>
  /** The project's conversations among `ids` (those that exist), in one read. */
  readonly findConversations: (projectId: string, ids: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<ConversationRecord>>
  /**
   * `PATCH /platform/v1/msg/conversations/<id>` (decisions 2.10, 3.5): `metadata` replaced as a whole (at most
   * 16 KB serialized); `status` `ended` ends an active conversation as the inactivity end does (reason `manual`),
   * `active` reopens an ended one unless the contact has a newer active conversation on the number (422).
   */
  readonly updateConversation: (
    projectId: string,
    id: string,
    change: ConversationChange
  ) => Effect.Effect<ConversationRecord, NotFound | Unprocessable>
  readonly listContacts: (projectId: string, filter: ContactFilter, window: ListWindow) => Effect.Effect<ListSlice<ContactRecord>>
  /** By contact id, phone number (any format) or business-scoped id. */
  readonly getContact: (projectId: string, identifier: string) => Effect.Effect<ContactRecord, NotFound>
  /** By contact id only; None when the project has none. */
  readonly findContact: (projectId: string, id: string) => Effect.Effect<Option.Option<ContactRecord>>
}

export const makeStoredConversations = Effect.fnUntraced(function*(recording: Recording) {
  const configs = yield* MessageConfigsRepo
  const contacts = yield* ContactsRepo
  const conversations = yield* ConversationsRepo
  const locks = yield* MessagingLocks
  const tx = yield* Transactor
  const { end } = recording

  const endConversation = Effect.fn("Messaging.endConversation")(
    function*(projectId: string, conversationId: string, reason: ConversationEndReason, onlyIdle = false) {
      const nowMs = yield* Clock.currentTimeMillis
      const now = iso(nowMs)
      return yield* tx.withTransaction(Effect.gen(function*() {
        const first = yield* conversations.findById(projectId, conversationId)
        if (Option.isNone(first)) return Option.none<ConversationRecord>()
        yield* locks.lock(`conversation:${first.value.msg_config_id}:${first.value.contact_id}`)
        // Read again under the lock: a message may have arrived meanwhile.
        const found = yield* conversations.findById(projectId, conversationId)
        if (Option.isNone(found) || found.value.status !== "active") return found
        const current = found.value
        if (onlyIdle && Date.parse(current.last_active_at) + CONVERSATION_IDLE_MS > nowMs) return found
        return Option.some(yield* endLocked(current, reason, now))
      }))
    }
  )

  /** Ends an active conversation read under its lock, inside a transaction: the record and `msg.conversation.ended`. */
  const endLocked = (current: ConversationRecord, reason: ConversationEndReason, now: string) =>
    Effect.flatMap(configs.findLiveById(current.msg_config_id), (config) => end(current, reason, now, Option.getOrUndefined(config)))

  const updateConversation = Effect.fn("Messaging.updateConversation")(
    function*(projectId: string, id: string, change: ConversationChange) {
      if (change.metadata !== undefined && change.metadata !== null) {
        const size = new TextEncoder().encode(JSON.stringify(change.metadata)).length
        if (size > CONVERSATION_METADATA_MAX_BYTES) {
          return yield* unprocessable("metadata must be at most 16 KB when serialized", [
            { path: "msg_conversation.metadata", message: `${size} bytes exceeds ${CONVERSATION_METADATA_MAX_BYTES}` }
          ])
        }
      }
      const now = iso(yield* Clock.currentTimeMillis)
      return yield* tx.withTransaction(Effect.gen(function*() {
        const first = yield* conversations.findById(projectId, id)
        if (Option.isNone(first)) return yield* notFound("Conversation", id)
        yield* locks.lock(`conversation:${first.value.msg_config_id}:${first.value.contact_id}`)
        const found = yield* conversations.findById(projectId, id)
        if (Option.isNone(found)) return yield* notFound("Conversation", id)
        const current: ConversationRecord = change.metadata === undefined
          ? found.value
          : { ...found.value, metadata: change.metadata, updated_at: now }
        if (change.status === "ended" && current.status === "active") {
          return yield* endLocked(current, "manual", now)
        }
        if (change.status === "active" && current.status === "ended") {
          const newer = yield* conversations.findActive(current.msg_config_id, current.contact_id)
          if (Option.isSome(newer)) {
            return yield* unprocessable("The contact has a newer active conversation on this number", [
              { path: "msg_conversation.status", message: `conversation ${newer.value.id} is active` }
            ])
          }
          // Reopening counts as activity: the 24-hour silence is measured from now.
          const reopened: ConversationRecord = {
            ...current,
            status: "active",
            end_reason: null,
            ended_at: null,
            last_active_at: now > current.last_active_at ? now : current.last_active_at,
            updated_at: now
          }
          yield* conversations.update(reopened)
          return reopened
        }
        if (current !== found.value) yield* conversations.update(current)
        return current
      }))
    }
  )

  const getConversation = (projectId: string, id: string) =>
    conversations.findById(projectId, id).pipe(
      Effect.flatMap(Option.match({ onNone: () => Effect.fail(notFound("Conversation", id)), onSome: Effect.succeed }))
    )

  const getContact = Effect.fn("Messaging.getContact")(function*(projectId: string, identifier: string) {
    const byId = yield* contacts.findById(projectId, identifier)
    if (Option.isSome(byId)) return byId.value
    const digits = phoneDigits(identifier)
    if (/^\+?[\d\s\-().]+$/.test(identifier) && digits.length > 0) {
      const byPhone = yield* contacts.findByWaId(projectId, digits)
      if (Option.isSome(byPhone)) return byPhone.value
    }
    const byUser = yield* contacts.findByUserId(projectId, identifier)
    if (Option.isSome(byUser)) return byUser.value
    return yield* notFound("Contact", identifier)
  })

  return {
    endConversation: (projectId, conversationId, reason) => endConversation(projectId, conversationId, reason),
    endIfIdle: (projectId, conversationId) => endConversation(projectId, conversationId, "inactivity", true),
    listConversations: (projectId, filter, window) => conversations.list(projectId, filter, window),
    getConversation,
    findConversation: conversations.findById,
    findConversations: conversations.findByIds,
    updateConversation,
    listContacts: (projectId, filter, window) => contacts.list(projectId, filter, window),
    getContact,
    findContact: contacts.findById
  } satisfies StoredConversations
})
