/**
 * Storage of what Parley keeps of its numbers' conversations: contacts,
 * conversations, messages and their status reports, the media copies, the
 * raw upstream webhooks it acknowledged, and template status reports. All
 * scoped by project except what ingestion reads before it knows the project
 * (the inbox, status reports keyed by number).
 */
import { Context, type Effect, type Option } from "effect"
import type {
  ContactFilter,
  ContactRecord,
  ConversationFilter,
  ConversationRecord,
  InboxEntry,
  MessageFilter,
  MessageRecord,
  ProcessingStatus,
  StatusEventRecord,
  StoredMedia,
  TemplateStatusRecord
} from "./Message.ts"
import type { ListSlice, ListWindow } from "../shared/Pagination.ts"

/** Page-mode totals of contacts, conversations and messages are counted up to this many (decisions 1.3). */
export const MESSAGING_TOTAL_CAP = 10_000

export class ContactsRepo extends Context.Service<ContactsRepo, {
  /** A broken uniqueness (wa_id or business-scoped id taken in the project) is a defect: callers look up first, under a lock. */
  readonly insert: (contact: ContactRecord) => Effect.Effect<void>
  /** Several in one step (same rule as `insert`). */
  readonly insertMany: (contacts: ReadonlyArray<ContactRecord>) => Effect.Effect<void>
  /**
   * The project's contact with `contact`'s phone number (`findByWaId`), or without one its business-scoped id
   * (`findByUserId`), else `contact` inserted (`made`): one step. Callers hold the contact's lock, as for `insert`.
   */
  readonly findOrInsert: (contact: ContactRecord) => Effect.Effect<{ readonly contact: ContactRecord; readonly made: boolean }>
  readonly findById: (projectId: string, id: string) => Effect.Effect<Option.Option<ContactRecord>>
  readonly findByWaId: (projectId: string, waId: string) => Effect.Effect<Option.Option<ContactRecord>>
  /** The project's contacts with any of these phone numbers (digits), in no particular order. */
  readonly findByWaIds: (projectId: string, waIds: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<ContactRecord>>
  /** By business-scoped user id, or by its parent id. */
  readonly findByUserId: (projectId: string, userId: string) => Effect.Effect<Option.Option<ContactRecord>>
  /** `findByWaId` and `findByUserId` in one step (each None when its key is undefined). */
  readonly findByIdentity: (
    projectId: string,
    waId: string | undefined,
    userId: string | undefined
  ) => Effect.Effect<{ readonly byPhone: Option.Option<ContactRecord>; readonly byUser: Option.Option<ContactRecord> }>
  /** Replaces the identity and profile fields and `updated_at`. */
  readonly update: (contact: ContactRecord) => Effect.Effect<void>
  /** Newest first by (created_at, id). */
  readonly list: (projectId: string, filter: ContactFilter, window: ListWindow) => Effect.Effect<ListSlice<ContactRecord>>
}>()("@parley/core/ports/ContactsRepo") {}

export class ConversationsRepo extends Context.Service<ConversationsRepo, {
  /** A second active conversation of one (config, contact) is a defect: callers look up first, under a lock. */
  readonly insert: (conversation: ConversationRecord) => Effect.Effect<void>
  /** Several in one step (same rule as `insert`). */
  readonly insertMany: (conversations: ReadonlyArray<ConversationRecord>) => Effect.Effect<void>
  readonly findById: (projectId: string, id: string) => Effect.Effect<Option.Option<ConversationRecord>>
  /** The project's conversations among `ids`, in no particular order. */
  readonly findByIds: (projectId: string, ids: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<ConversationRecord>>
  /** The active conversation between a number and a contact, if any. */
  readonly findActive: (msgConfigId: string, contactId: string) => Effect.Effect<Option.Option<ConversationRecord>>
  /** The active conversations of these (number, contact) pairs, in no particular order. */
  readonly findActiveMany: (
    pairs: ReadonlyArray<{ readonly msgConfigId: string; readonly contactId: string }>
  ) => Effect.Effect<ReadonlyArray<ConversationRecord>>
  /** Replaces every field but identity, project, number, contact and creation time. */
  readonly update: (conversation: ConversationRecord) => Effect.Effect<void>
  /** `update` of several in one step. */
  readonly updateMany: (conversations: ReadonlyArray<ConversationRecord>) => Effect.Effect<void>
  /**
   * A send's network id becomes `last_message_id` of each conversation whose
   * latest message is still that send (`last_message_id` null and
   * `last_message_timestamp` the send's); one step, no read.
   */
  readonly setLastMessageIds: (
    updates: ReadonlyArray<{
      readonly projectId: string
      readonly id: string
      readonly timestamp: string
      readonly networkId: string
      readonly at: string
    }>
  ) => Effect.Effect<void>
  /** Newest first by (created_at, id). */
  readonly list: (
    projectId: string,
    filter: ConversationFilter,
    window: ListWindow
  ) => Effect.Effect<ListSlice<ConversationRecord>>
  /** Active conversations of every project whose last message is strictly older than `before`, stalest first. */
  readonly listIdle: (before: string, limit: number) => Effect.Effect<ReadonlyArray<ConversationRecord>>
}>()("@parley/core/ports/ConversationsRepo") {}

/** One network mark-read the network accepted, to store (`MessagesRepo.markInboundRead`). */
export interface InboundReadMark {
  readonly projectId: string
  readonly phoneNumberId: string
  readonly networkId: string
  readonly at: string
}

export class MessagesRepo extends Context.Service<MessagesRepo, {
  /**
   * Stores the message; false (and nothing stored) when the number already
   * has a message with its `network_id` (duplicate deliveries).
   */
  readonly insert: (message: MessageRecord) => Effect.Effect<boolean>
  /**
   * Stores a message whose `network_id` the caller found free under the message's lock (inbound recording): nobody
   * waits for the answer, and a duplicate after all is a defect (its transaction fails, storing nothing).
   */
  readonly insertNew: (message: MessageRecord) => Effect.Effect<void>
  /**
   * `insert` of several in one step; answers, for each message in order,
   * whether it was stored (a duplicate `network_id`, also within the batch,
   * stores nothing for that one).
   */
  readonly insertMany: (messages: ReadonlyArray<MessageRecord>) => Effect.Effect<ReadonlyArray<boolean>>
  readonly findById: (projectId: string, id: string) => Effect.Effect<Option.Option<MessageRecord>>
  readonly findByNetworkId: (phoneNumberId: string, networkId: string) => Effect.Effect<Option.Option<MessageRecord>>
  /** The number's messages among these network ids, in no particular order. */
  readonly findByNetworkIds: (phoneNumberId: string, networkIds: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<MessageRecord>>
  /** Replaces every field but identity, project, number, conversation, contact, direction and creation time. */
  readonly update: (message: MessageRecord) => Effect.Effect<void>
  /** `update` of several in one step. */
  readonly updateMany: (messages: ReadonlyArray<MessageRecord>) => Effect.Effect<void>
  /** Sets `status` and `statuses` (and `updated_at`) of several messages in one step, nothing else. */
  readonly setStatuses: (
    updates: ReadonlyArray<Pick<MessageRecord, "project_id" | "id" | "status" | "statuses" | "updated_at">>
  ) => Effect.Effect<void>
  /**
   * Sets `network_id` (and `updated_at`) of several messages in one step, nothing else, unless a status report under
   * that network id of the number is kept already (`recordStatuses`: it overtook the send's answer; the caller applies
   * it with the id). Answers the ids it set, as an effect the caller may await once its transaction is done: on
   * PostgreSQL the statement then rides with the commit instead of costing a round trip of its own.
   */
  readonly setNetworkIdsUnlessReported: (
    updates: ReadonlyArray<{
      readonly projectId: string
      readonly id: string
      readonly phoneNumberId: string
      readonly networkId: string
      readonly at: string
    }>
  ) => Effect.Effect<Effect.Effect<ReadonlyArray<string>>>
  /**
   * Sets `processing_status` of those of the project's messages among `ids` that are still `pending`, nothing else
   * (routing's settle: one conditional write instead of a read and a whole-row write per message).
   */
  readonly settleProcessing: (projectId: string, ids: ReadonlyArray<string>, status: ProcessingStatus) => Effect.Effect<void>
  /**
   * For each mark: marks the number's inbound message with that network id, and the `delivered` inbound messages of
   * its conversation recorded at or before it, `read` (and `updated_at`); all in one step (concurrent mark-reads
   * share it). Answers how many messages changed (a mark of no inbound message of its project changes none).
   */
  readonly markInboundRead: (marks: ReadonlyArray<InboundReadMark>) => Effect.Effect<number>
  /** Newest first by (created_at, id); `since`/`until` inclusive on `created_at`. */
  readonly list: (projectId: string, filter: MessageFilter, window: ListWindow) => Effect.Effect<ListSlice<MessageRecord>>
  /**
   * Keeps status reports in order; answers, for each in order, whether it is
   * new: false when (number, id, status, timestamp) was already kept, or came
   * earlier in the same call.
   */
  readonly recordStatuses: (events: ReadonlyArray<StatusEventRecord>) => Effect.Effect<ReadonlyArray<boolean>>
  /** The reports kept for these messages of a number, in arrival order. */
  readonly statusEvents: (phoneNumberId: string, networkIds: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<StatusEventRecord>>
  /**
   * The reports of a number received at or after `since` that carry this
   * `biz_opaque_callback_data`, in arrival order: how a send whose answer a
   * crash lost learns its network id (the key rode with the send).
   */
  readonly statusEventsByCallbackData: (
    phoneNumberId: string,
    callbackData: string,
    since: string
  ) => Effect.Effect<ReadonlyArray<StatusEventRecord>>
}>()("@parley/core/ports/MessagesRepo") {}

/** A file the proxy uploaded to the network, and the number (and business account) it went up through. */
export interface MediaUpload {
  readonly network_media_id: string
  readonly project_id: string
  readonly msg_config_id: string
  readonly business_account_id: string
  readonly created_at: string
}

export class MediaRepo extends Context.Service<MediaRepo, {
  readonly insert: (media: StoredMedia) => Effect.Effect<void>
  /** Remembers an upload (the latest of a media id wins). */
  readonly recordUpload: (upload: MediaUpload) => Effect.Effect<void>
  /** The project's uploads among these network media ids, in no particular order. */
  readonly findUploads: (projectId: string, networkMediaIds: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<MediaUpload>>
  /** With its bytes. */
  readonly find: (projectId: string, id: string) => Effect.Effect<Option.Option<StoredMedia>>
  readonly delete: (projectId: string, id: string) => Effect.Effect<boolean>
}>()("@parley/core/ports/MediaRepo") {}

export class UpstreamInboxRepo extends Context.Service<UpstreamInboxRepo, {
  readonly insert: (entry: InboxEntry) => Effect.Effect<void>
  readonly find: (id: string) => Effect.Effect<Option.Option<InboxEntry>>
  readonly markFannedOut: (id: string, at: string) => Effect.Effect<void>
  /** Processed: its `senders` are cleared. */
  readonly markProcessed: (id: string, at: string) => Effect.Effect<void>
  /** Whether an entry not processed yet names one of these senders (`windowKey`). */
  readonly hasUnprocessedFrom: (senders: ReadonlyArray<string>) => Effect.Effect<boolean>
  /** Entries not processed that arrived strictly before `receivedBefore`, oldest first. */
  readonly listUnprocessed: (receivedBefore: string, limit: number) => Effect.Effect<ReadonlyArray<InboxEntry>>
  /** Drops processed entries processed strictly before `before`; answers how many. */
  readonly prune: (before: string) => Effect.Effect<number>
  readonly recordTemplateStatus: (event: TemplateStatusRecord) => Effect.Effect<void>
  /** Oldest first. */
  readonly listTemplateStatus: (businessAccountId: string) => Effect.Effect<ReadonlyArray<TemplateStatusRecord>>
}>()("@parley/core/ports/UpstreamInboxRepo") {}

/**
 * Serialises changes that must not interleave across processes (one network
 * message id, one contact, one conversation). A lock covers everything the
 * transaction reads and stores after taking it, and is held until the
 * transaction ends; outside a transaction it holds nothing. A store may send
 * the lock together with the transaction's next statement, so work between
 * the two (no storage call) is not covered.
 */
export class MessagingLocks extends Context.Service<MessagingLocks, {
  readonly lock: (key: string) => Effect.Effect<void>
  /**
   * Holds every key of the set. Keys are taken in one fixed order, so callers
   * that hold overlapping sets never wait on each other in a cycle; callers
   * that take several sets take message keys, then contact keys, then
   * conversation keys (as single `lock` calls do). Inbound recording takes a
   * message's key with its sender's contact key in one set: nobody else takes
   * an inbound message's key, so no other order meets it.
   */
  readonly lockAll: (keys: ReadonlyArray<string>) => Effect.Effect<void>
}>()("@parley/core/ports/MessagingLocks") {}
