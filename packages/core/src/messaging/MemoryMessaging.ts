/**
 * Memory implementations of the messaging ports (`MessageConfigsRepo`,
 * `ContactsRepo`, `ConversationsRepo`, `MessagesRepo`, `MediaRepo`,
 * `UpstreamInboxRepo`, `MessagingLocks`) over the shared `MemoryStore`. They
 * keep the rules of the Postgres schema (foreign keys to projects, the unique
 * live number, one active conversation per number and contact, message
 * dedupe by network id, timestamps and JSON as the database gives them
 * back); the messaging storage conformance suite holds both adapters to it.
 */
import { Effect, Layer, Option, PubSub, Stream } from "effect"
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
import { MessageConfigsRepo } from "./numbers/MessageConfigsRepo.ts"
import {
  ContactsRepo,
  ConversationsRepo,
  type InboundReadMark,
  MediaRepo,
  type MediaUpload,
  MESSAGING_TOTAL_CAP,
  MessagesRepo,
  MessagingLocks,
  UpstreamInboxRepo
} from "./MessagingRepo.ts"
import { Duplicate } from "../ports/StorageError.ts"
import type { Project } from "../projects/Project.ts"
import type { CursorKey, ListSlice, ListWindow } from "../shared/Pagination.ts"
import type { MessageConfigFilter, MessageConfigRecord } from "./numbers/MessageConfig.ts"
import { MemoryStore, type MemoryTable, memoryTable, type MemoryTables } from "../ports/MemoryStore.ts"
import { byteOrder, compareKeys, instant, json, nullableTimestamp, timestamp, violation } from "../ports/MemoryRows.ts"

const Projects = memoryTable<Project>("projects")
const Configs = memoryTable<MessageConfigRecord>("msg_configs")
const Contacts = memoryTable<ContactRecord>("msg_contacts")
const Conversations = memoryTable<ConversationRecord>("msg_conversations")
const Messages = memoryTable<MessageRecord>("msg_messages")
const StatusEvents = memoryTable<StatusEventRecord>("msg_status_events")
const Media = memoryTable<StoredMedia>("msg_media")
const MediaUploads = memoryTable<MediaUpload>("msg_media_uploads")
const Inbox = memoryTable<InboxEntry>("msg_upstream_inbox")

/** The tables other memory adapters of messaging's records read (erasure's). */
export const messagingTables = { Contacts, Conversations, Messages, StatusEvents, Media, Inbox } as const
const TemplateStatuses = memoryTable<TemplateStatusRecord>("msg_template_status_events")

const bytesOf = (bytes: Uint8Array): Uint8Array => new Uint8Array(bytes)

const keyOf = (r: { readonly created_at: string; readonly id: string }): CursorKey => ({ sortKey: r.created_at, id: r.id })

const requireProject = (db: MemoryTables, projectId: string) => {
  if (db.get(Projects, projectId) === undefined) violation(`no project ${projectId}`)
}

/**
 * `write` applied to each item in order, as one Postgres statement is: when
 * one breaks a rule, the writes of the earlier ones are undone too.
 */
const allOrNothing = <T, A>(db: MemoryTables, items: ReadonlyArray<T>, write: (db: MemoryTables, item: T) => A) => {
  const undo: Array<() => void> = []
  const restore = <R>(table: MemoryTable<R>, id: string) => {
    const had = db.get(table, id)
    undo.push(() => had === undefined ? db.remove(table, id) : db.put(table, id, had))
  }
  const recorded: MemoryTables = {
    get: db.get,
    all: db.all,
    put: (table, id, row) => {
      restore(table, id)
      db.put(table, id, row)
    },
    remove: (table, id) => {
      restore(table, id)
      return db.remove(table, id)
    }
  }
  try {
    return items.map((item) => write(recorded, item))
  } catch (error) {
    for (const step of undo.reverse()) step()
    throw error
  }
}

/** Membership of (a, b) pairs. */
const pairKey = (a: string, b: string) => JSON.stringify([a, b])

/** Rows of one kind newest first through a window. */
const slice = <A extends { readonly created_at: string; readonly id: string }>(
  rows: ReadonlyArray<A>,
  window: ListWindow,
  cap = MESSAGING_TOTAL_CAP
): ListSlice<A> => {
  const newestFirst = [...rows].sort((a, b) => compareKeys(keyOf(b), keyOf(a)))
  if (window.mode === "page") {
    const start = (window.page - 1) * window.perPage
    const items = newestFirst.slice(start, start + window.perPage)
    return { items, hasMore: start + items.length < newestFirst.length, total: Math.min(newestFirst.length, cap) }
  }
  const { after, before, limit } = window
  const inRange = newestFirst.filter((r) =>
    (after === undefined || compareKeys(keyOf(r), after) < 0) &&
    (before === undefined || compareKeys(keyOf(r), before) > 0)
  )
  const travel = before !== undefined ? [...inRange].reverse() : inRange
  const page = travel.slice(0, limit)
  return { items: before !== undefined ? page.reverse() : page, hasMore: travel.length > limit, total: 0 }
}

// ---------------------------------------------------------------------------------------------
// Message configs

const storedConfig = (c: MessageConfigRecord): MessageConfigRecord => ({
  ...c,
  facts: json(c.facts),
  refreshed_at: nullableTimestamp(c.refreshed_at),
  webhook_verified_at: nullableTimestamp(c.webhook_verified_at),
  deleted_at: nullableTimestamp(c.deleted_at),
  created_at: timestamp(c.created_at),
  updated_at: timestamp(c.updated_at)
})

const live = (c: MessageConfigRecord) => c.deleted_at === null

export const layerMemoryMessageConfigsRepo = Layer.effect(
  MessageConfigsRepo,
  Effect.gen(function*() {
    const store = yield* MemoryStore
    const holder = (db: MemoryTables, phoneNumberId: string) =>
      db.all(Configs).find((c) => live(c) && c.phone_number_id === phoneNumberId)
    const changes = yield* PubSub.unbounded<void>()
    const signal = <A>(result: Option.Option<A>): Effect.Effect<Option.Option<A>> =>
      Option.isSome(result) ? Effect.as(PubSub.publish(changes, undefined), result) : Effect.succeed(result)

    return MessageConfigsRepo.of({
      insert: Effect.fn("MessageConfigsRepo.insert")(function*(config: MessageConfigRecord) {
        const duplicate = yield* store.run((db) => {
          requireProject(db, config.project_id)
          if (db.get(Configs, config.id) !== undefined) violation(`duplicate config id ${config.id}`)
          if (live(config) && holder(db, config.phone_number_id) !== undefined) return true
          db.put(Configs, config.id, storedConfig(config))
          return false
        })
        if (duplicate) return yield* new Duplicate({ field: "phone_number_id" })
        yield* signal(Option.some(config))
      }),
      findById: Effect.fn("MessageConfigsRepo.findById")((projectId: string, id: string) =>
        store.run((db) =>
          Option.filter(Option.fromNullishOr(db.get(Configs, id)), (c) => c.project_id === projectId && live(c))
        )
      ),
      findLiveById: Effect.fn("MessageConfigsRepo.findLiveById")((id: string) =>
        store.run((db) => Option.filter(Option.fromNullishOr(db.get(Configs, id)), live))
      ),
      findByPhoneNumberId: Effect.fn("MessageConfigsRepo.findByPhoneNumberId")((phoneNumberId: string) =>
        store.run((db) => Option.fromNullishOr(holder(db, phoneNumberId)))
      ),
      listByBusinessAccount: Effect.fn("MessageConfigsRepo.listByBusinessAccount")((businessAccountId: string) =>
        store.run((db) =>
          db.all(Configs)
            .filter((c) => live(c) && c.business_account_id === businessAccountId)
            .sort((a, b) => compareKeys(keyOf(a), keyOf(b)))
        )
      ),
      list: Effect.fn("MessageConfigsRepo.list")((projectId: string, filter: MessageConfigFilter, window: ListWindow) =>
        store.run((db) =>
          slice(
            db.all(Configs).filter((c) =>
              c.project_id === projectId && live(c) &&
              (filter.customer_id === undefined || c.customer_id === filter.customer_id) &&
              (filter.kind === undefined || c.kind === filter.kind)
            ),
            window,
            Number.MAX_SAFE_INTEGER
          )
        )
      ),
      update: Effect.fn("MessageConfigsRepo.update")(function*(config: MessageConfigRecord) {
        const result = yield* store.run((db) => {
          const current = db.get(Configs, config.id)
          if (current === undefined || current.project_id !== config.project_id || !live(current)) {
            return Option.none<MessageConfigRecord>()
          }
          const other = holder(db, config.phone_number_id)
          if (other !== undefined && other.id !== config.id) return new Duplicate({ field: "phone_number_id" })
          const updated = storedConfig({
            ...config,
            project_id: current.project_id,
            created_at: current.created_at,
            provisioned: current.provisioned,
            deleted_at: current.deleted_at
          })
          db.put(Configs, config.id, updated)
          return Option.some(updated)
        })
        if (result instanceof Duplicate) return yield* result
        return yield* signal(result)
      }),
      listIdleProvisioned: Effect.fn("MessageConfigsRepo.listIdleProvisioned")((before: string, limit: number) =>
        store.run((db) => {
          const cutoff = Date.parse(before)
          const active = new Set(
            db.all(Messages).filter((m) => Date.parse(m.created_at) >= cutoff).map((m) => m.msg_config_id)
          )
          return db.all(Configs)
            .filter((c) =>
              live(c) && c.provisioned && c.kind === "production" && Date.parse(c.created_at) < cutoff && !active.has(c.id)
            )
            .sort((a, b) => compareKeys(keyOf(a), keyOf(b)))
            .slice(0, limit)
        })
      ),
      markDeleted: Effect.fn("MessageConfigsRepo.markDeleted")((projectId: string, id: string, at: string) =>
        store.run((db) => {
          const current = db.get(Configs, id)
          if (current === undefined || current.project_id !== projectId || !live(current)) {
            return Option.none<MessageConfigRecord>()
          }
          const deleted = storedConfig({ ...current, deleted_at: at, updated_at: at })
          db.put(Configs, id, deleted)
          return Option.some(deleted)
        }).pipe(Effect.flatMap(signal))
      ),
      changes: Stream.fromPubSub(changes)
    })
  })
)

// ---------------------------------------------------------------------------------------------
// Contacts

const storedContact = (c: ContactRecord): ContactRecord => ({
  ...c,
  created_at: timestamp(c.created_at),
  updated_at: timestamp(c.updated_at)
})

const contactClash = (db: MemoryTables, contact: ContactRecord) =>
  db.all(Contacts).some((c) =>
    c.id !== contact.id && c.project_id === contact.project_id &&
    ((contact.wa_id !== null && c.wa_id === contact.wa_id) ||
      (contact.business_scoped_user_id !== null && c.business_scoped_user_id === contact.business_scoped_user_id))
  )

const insertContact = (db: MemoryTables, contact: ContactRecord) => {
  requireProject(db, contact.project_id)
  if (db.get(Contacts, contact.id) !== undefined) violation(`duplicate contact id ${contact.id}`)
  if (contactClash(db, contact)) violation("duplicate contact wa_id or business-scoped id")
  db.put(Contacts, contact.id, storedContact(contact))
}

/** By business-scoped user id, else by parent id. */
const byUser = (db: MemoryTables, projectId: string, userId: string) => {
  const mine = db.all(Contacts).filter((c) => c.project_id === projectId)
  return Option.fromNullishOr(
    mine.find((c) => c.business_scoped_user_id === userId) ?? mine.find((c) => c.parent_business_scoped_user_id === userId)
  )
}

export const layerMemoryContactsRepo = Layer.effect(
  ContactsRepo,
  Effect.gen(function*() {
    const store = yield* MemoryStore
    const inProject = (projectId: string, pick: (c: ContactRecord) => boolean) =>
      store.run((db) => Option.fromNullishOr(db.all(Contacts).find((c) => c.project_id === projectId && pick(c))))

    return ContactsRepo.of({
      insert: Effect.fn("ContactsRepo.insert")((contact: ContactRecord) =>
        store.run((db) => insertContact(db, contact))
      ),
      insertMany: Effect.fn("ContactsRepo.insertMany")((contacts: ReadonlyArray<ContactRecord>) =>
        store.run((db) => {
          allOrNothing(db, contacts, insertContact)
        })
      ),
      findOrInsert: Effect.fn("ContactsRepo.findOrInsert")((contact: ContactRecord) =>
        store.run((db) => {
          const mine = db.all(Contacts).filter((c) => c.project_id === contact.project_id)
          const userId = contact.business_scoped_user_id
          const found = contact.wa_id !== null
            ? mine.find((c) => c.wa_id === contact.wa_id)
            : mine.find((c) => c.business_scoped_user_id === userId) ?? mine.find((c) => c.parent_business_scoped_user_id === userId)
          if (found !== undefined) return { contact: found, made: false }
          insertContact(db, contact)
          return { contact, made: true }
        })
      ),
      findById: Effect.fn("ContactsRepo.findById")((projectId: string, id: string) =>
        inProject(projectId, (c) => c.id === id)
      ),
      findByWaId: Effect.fn("ContactsRepo.findByWaId")((projectId: string, waId: string) =>
        inProject(projectId, (c) => c.wa_id === waId)
      ),
      findByWaIds: Effect.fn("ContactsRepo.findByWaIds")((projectId: string, waIds: ReadonlyArray<string>) =>
        store.run((db) => {
          const wanted = new Set(waIds)
          return db.all(Contacts).filter((c) => c.project_id === projectId && c.wa_id !== null && wanted.has(c.wa_id))
        })
      ),
      findByUserId: Effect.fn("ContactsRepo.findByUserId")((projectId: string, userId: string) =>
        store.run((db) => byUser(db, projectId, userId))
      ),
      findByIdentity: Effect.fn("ContactsRepo.findByIdentity")((projectId: string, waId: string | undefined, userId: string | undefined) =>
        store.run((db) => ({
          byPhone: waId === undefined
            ? Option.none<ContactRecord>()
            : Option.fromNullishOr(db.all(Contacts).find((c) => c.project_id === projectId && c.wa_id === waId)),
          byUser: userId === undefined ? Option.none<ContactRecord>() : byUser(db, projectId, userId)
        }))
      ),
      update: Effect.fn("ContactsRepo.update")((contact: ContactRecord) =>
        store.run((db) => {
          const current = db.get(Contacts, contact.id)
          if (current === undefined || current.project_id !== contact.project_id) return
          if (contactClash(db, contact)) violation("duplicate contact wa_id or business-scoped id")
          db.put(Contacts, contact.id, storedContact({ ...contact, created_at: current.created_at }))
        })
      ),
      list: Effect.fn("ContactsRepo.list")((projectId: string, filter: ContactFilter, window: ListWindow) =>
        store.run((db) => {
          const onNumber = filter.msg_config_id === undefined ? undefined : new Set(
            db.all(Conversations).filter((c) => c.msg_config_id === filter.msg_config_id).map((c) => c.contact_id)
          )
          return slice(
            db.all(Contacts).filter((c) =>
              c.project_id === projectId &&
              (onNumber === undefined || onNumber.has(c.id)) &&
              (filter.wa_id === undefined || c.wa_id === filter.wa_id)
            ),
            window
          )
        })
      )
    })
  })
)

// ---------------------------------------------------------------------------------------------
// Conversations

const storedConversation = (c: ConversationRecord): ConversationRecord => ({
  ...c,
  metadata: c.metadata === null ? null : json(c.metadata),
  ended_at: nullableTimestamp(c.ended_at),
  last_active_at: timestamp(c.last_active_at),
  last_inbound_at: nullableTimestamp(c.last_inbound_at),
  last_outbound_at: nullableTimestamp(c.last_outbound_at),
  created_at: timestamp(c.created_at),
  updated_at: timestamp(c.updated_at)
})

const conversationMatches = (projectId: string, f: ConversationFilter) => (c: ConversationRecord) =>
  c.project_id === projectId &&
  (f.msg_config_id === undefined || c.msg_config_id === f.msg_config_id) &&
  (f.status === undefined || c.status === f.status) &&
  (f.phone_number === undefined || c.phone_number === f.phone_number) &&
  (f.assigned_user_id === undefined || c.assigned_user_id === f.assigned_user_id) &&
  (f.unassigned !== true || c.assigned_user_id === null) &&
  (f.last_active_since === undefined || instant(c.last_active_at) >= instant(f.last_active_since)) &&
  (f.last_active_until === undefined || instant(c.last_active_at) <= instant(f.last_active_until))

const activeOf = (db: MemoryTables, msgConfigId: string, contactId: string) =>
  db.all(Conversations).find((c) => c.msg_config_id === msgConfigId && c.contact_id === contactId && c.status === "active")

const insertConversation = (db: MemoryTables, conversation: ConversationRecord) => {
  requireProject(db, conversation.project_id)
  if (db.get(Configs, conversation.msg_config_id) === undefined) violation(`no config ${conversation.msg_config_id}`)
  if (db.get(Contacts, conversation.contact_id) === undefined) violation(`no contact ${conversation.contact_id}`)
  if (db.get(Conversations, conversation.id) !== undefined) violation(`duplicate conversation id ${conversation.id}`)
  if (conversation.status === "active" && activeOf(db, conversation.msg_config_id, conversation.contact_id)) {
    violation("a second active conversation for one number and contact")
  }
  db.put(Conversations, conversation.id, storedConversation(conversation))
}

const updateConversation = (db: MemoryTables, conversation: ConversationRecord) => {
  const current = db.get(Conversations, conversation.id)
  if (current === undefined || current.project_id !== conversation.project_id) return
  if (conversation.status === "active" && current.status !== "active") {
    const other = activeOf(db, current.msg_config_id, current.contact_id)
    if (other !== undefined && other.id !== current.id) {
      violation("a second active conversation for one number and contact")
    }
  }
  db.put(
    Conversations,
    conversation.id,
    storedConversation({
      ...conversation,
      project_id: current.project_id,
      msg_config_id: current.msg_config_id,
      phone_number_id: current.phone_number_id,
      contact_id: current.contact_id,
      created_at: current.created_at
    })
  )
}

export const layerMemoryConversationsRepo = Layer.effect(
  ConversationsRepo,
  Effect.gen(function*() {
    const store = yield* MemoryStore

    return ConversationsRepo.of({
      insert: Effect.fn("ConversationsRepo.insert")((conversation: ConversationRecord) =>
        store.run((db) => insertConversation(db, conversation))
      ),
      insertMany: Effect.fn("ConversationsRepo.insertMany")((conversations: ReadonlyArray<ConversationRecord>) =>
        store.run((db) => {
          allOrNothing(db, conversations, insertConversation)
        })
      ),
      findById: Effect.fn("ConversationsRepo.findById")((projectId: string, id: string) =>
        store.run((db) =>
          Option.filter(Option.fromNullishOr(db.get(Conversations, id)), (c) => c.project_id === projectId)
        )
      ),
      findByIds: Effect.fn("ConversationsRepo.findByIds")((projectId: string, ids: ReadonlyArray<string>) =>
        store.run((db) => {
          const wanted = new Set(ids)
          return db.all(Conversations).filter((c) => c.project_id === projectId && wanted.has(c.id))
        })
      ),
      findActive: Effect.fn("ConversationsRepo.findActive")((msgConfigId: string, contactId: string) =>
        store.run((db) => Option.fromNullishOr(activeOf(db, msgConfigId, contactId)))
      ),
      findActiveMany: Effect.fn("ConversationsRepo.findActiveMany")(
        (pairs: ReadonlyArray<{ readonly msgConfigId: string; readonly contactId: string }>) =>
          store.run((db) => {
            const wanted = new Set(pairs.map((p) => pairKey(p.msgConfigId, p.contactId)))
            return db.all(Conversations).filter((c) => c.status === "active" && wanted.has(pairKey(c.msg_config_id, c.contact_id)))
          })
      ),
      update: Effect.fn("ConversationsRepo.update")((conversation: ConversationRecord) =>
        store.run((db) => updateConversation(db, conversation))
      ),
      updateMany: Effect.fn("ConversationsRepo.updateMany")((conversations: ReadonlyArray<ConversationRecord>) =>
        store.run((db) => {
          allOrNothing(db, conversations, updateConversation)
        })
      ),
      setLastMessageIds: Effect.fn("ConversationsRepo.setLastMessageIds")(
        (updates: Parameters<ConversationsRepo["Service"]["setLastMessageIds"]>[0]) =>
          store.run((db) => {
            for (const u of updates) {
              const current = db.get(Conversations, u.id)
              if (
                current === undefined || current.project_id !== u.projectId || current.last_message_id !== null ||
                current.last_message_timestamp !== u.timestamp
              ) continue
              db.put(Conversations, u.id, storedConversation({ ...current, last_message_id: u.networkId, updated_at: u.at }))
            }
          })
      ),
      list: Effect.fn("ConversationsRepo.list")((projectId: string, filter: ConversationFilter, window: ListWindow) =>
        store.run((db) => slice(db.all(Conversations).filter(conversationMatches(projectId, filter)), window))
      ),
      listIdle: Effect.fn("ConversationsRepo.listIdle")((before: string, limit: number) =>
        store.run((db) =>
          db.all(Conversations)
            .filter((c) => c.status === "active" && instant(c.last_active_at) < instant(before))
            .sort((a, b) => instant(a.last_active_at) - instant(b.last_active_at) || byteOrder(a.id, b.id))
            .slice(0, limit)
        )
      )
    })
  })
)

// ---------------------------------------------------------------------------------------------
// Messages and their status reports

const storedMessage = (m: MessageRecord): MessageRecord => ({
  ...m,
  fields: json(m.fields),
  media: m.media === null ? null : json(m.media),
  message_type_data: m.message_type_data === null ? null : json(m.message_type_data),
  statuses: json(m.statuses),
  ext_data: json(m.ext_data),
  created_at: timestamp(m.created_at),
  updated_at: timestamp(m.updated_at)
})

const messageMatches = (projectId: string, f: MessageFilter) => (m: MessageRecord) =>
  m.project_id === projectId &&
  (f.msg_config_id === undefined || m.msg_config_id === f.msg_config_id) &&
  (f.conversation_id === undefined || m.conversation_id === f.conversation_id) &&
  (f.direction === undefined || m.direction === f.direction) &&
  (f.status === undefined || m.status === f.status) &&
  (f.since === undefined || instant(m.created_at) >= instant(f.since)) &&
  (f.until === undefined || instant(m.created_at) <= instant(f.until)) &&
  (f.phone_number === undefined || m.phone_number === f.phone_number) &&
  (f.type === undefined || m.type === f.type) &&
  (f.has_media === undefined || m.has_media === f.has_media)

export const statusKey = (e: { readonly phone_number_id: string; readonly network_id: string; readonly status: string; readonly timestamp: string }) =>
  JSON.stringify([e.phone_number_id, e.network_id, e.status, e.timestamp])

const byNetworkId = (db: MemoryTables, phoneNumberId: string, networkId: string) =>
  db.all(Messages).find((m) => m.phone_number_id === phoneNumberId && m.network_id === networkId)

/** Whether it was stored: a duplicate delivery of a network message is not. */
const insertMessage = (db: MemoryTables, message: MessageRecord) => {
  requireProject(db, message.project_id)
  if (db.get(Conversations, message.conversation_id) === undefined) {
    violation(`no conversation ${message.conversation_id}`)
  }
  if (db.get(Messages, message.id) !== undefined) violation(`duplicate message id ${message.id}`)
  if (message.network_id !== null && byNetworkId(db, message.phone_number_id, message.network_id) !== undefined) {
    return false
  }
  db.put(Messages, message.id, storedMessage(message))
  return true
}

const updateMessage = (db: MemoryTables, message: MessageRecord) => {
  const current = db.get(Messages, message.id)
  if (current === undefined || current.project_id !== message.project_id) return
  if (message.network_id !== null) {
    const other = byNetworkId(db, current.phone_number_id, message.network_id)
    if (other !== undefined && other.id !== message.id) violation("duplicate network message id")
  }
  db.put(
    Messages,
    message.id,
    storedMessage({
      ...message,
      project_id: current.project_id,
      msg_config_id: current.msg_config_id,
      phone_number_id: current.phone_number_id,
      conversation_id: current.conversation_id,
      contact_id: current.contact_id,
      direction: current.direction,
      created_at: current.created_at
    })
  )
}

/** Whether it is new: a report kept before is not. */
const recordStatus = (db: MemoryTables, event: StatusEventRecord) => {
  const key = statusKey(event)
  if (db.get(StatusEvents, key) !== undefined) return false
  db.put(StatusEvents, key, { ...event, raw: json(event.raw), received_at: timestamp(event.received_at) })
  return true
}

export const layerMemoryMessagesRepo = Layer.effect(
  MessagesRepo,
  Effect.gen(function*() {
    const store = yield* MemoryStore

    return MessagesRepo.of({
      insert: Effect.fn("MessagesRepo.insert")((message: MessageRecord) =>
        store.run((db) => insertMessage(db, message))
      ),
      insertMany: Effect.fn("MessagesRepo.insertMany")((messages: ReadonlyArray<MessageRecord>) =>
        store.run((db) => allOrNothing(db, messages, insertMessage))
      ),
      insertNew: Effect.fn("MessagesRepo.insertNew")((message: MessageRecord) =>
        store.run((db) => {
          if (!insertMessage(db, message)) violation(`duplicate network id ${message.network_id}`)
        })
      ),
      findById: Effect.fn("MessagesRepo.findById")((projectId: string, id: string) =>
        store.run((db) => Option.filter(Option.fromNullishOr(db.get(Messages, id)), (m) => m.project_id === projectId))
      ),
      findByNetworkId: Effect.fn("MessagesRepo.findByNetworkId")((phoneNumberId: string, networkId: string) =>
        store.run((db) => Option.fromNullishOr(byNetworkId(db, phoneNumberId, networkId)))
      ),
      findByNetworkIds: Effect.fn("MessagesRepo.findByNetworkIds")(
        (phoneNumberId: string, networkIds: ReadonlyArray<string>) =>
          store.run((db) => {
            const wanted = new Set(networkIds)
            return db.all(Messages).filter((m) =>
              m.phone_number_id === phoneNumberId && m.network_id !== null && wanted.has(m.network_id)
            )
          })
      ),
      update: Effect.fn("MessagesRepo.update")((message: MessageRecord) =>
        store.run((db) => updateMessage(db, message))
      ),
      updateMany: Effect.fn("MessagesRepo.updateMany")((messages: ReadonlyArray<MessageRecord>) =>
        store.run((db) => {
          allOrNothing(db, messages, updateMessage)
        })
      ),
      setStatuses: Effect.fn("MessagesRepo.setStatuses")(
        (updates: Parameters<MessagesRepo["Service"]["setStatuses"]>[0]) =>
          store.run((db) => {
            for (const u of updates) {
              const current = db.get(Messages, u.id)
              if (current === undefined || current.project_id !== u.project_id) continue
              db.put(Messages, u.id, storedMessage({ ...current, status: u.status, statuses: u.statuses, updated_at: u.updated_at }))
            }
          })
      ),
      setNetworkIdsUnlessReported: Effect.fn("MessagesRepo.setNetworkIdsUnlessReported")(
        (updates: Parameters<MessagesRepo["Service"]["setNetworkIdsUnlessReported"]>[0]) =>
          store.run((db) => {
            const reported = new Set(db.all(StatusEvents).map((e) => `${e.phone_number_id}:${e.network_id}`))
            const changed = updates.flatMap((u) => {
              const current = db.get(Messages, u.id)
              return current === undefined || current.project_id !== u.projectId || reported.has(`${u.phoneNumberId}:${u.networkId}`)
                ? []
                : [{ ...current, network_id: u.networkId, updated_at: u.at }]
            })
            allOrNothing(db, changed, updateMessage)
            return Effect.succeed(changed.map((m) => m.id))
          })
      ),
      settleProcessing: Effect.fn("MessagesRepo.settleProcessing")(
        (projectId: string, ids: ReadonlyArray<string>, status: ProcessingStatus) =>
          store.run((db) => {
            for (const id of ids) {
              const current = db.get(Messages, id)
              if (current === undefined || current.project_id !== projectId || current.processing_status !== "pending") continue
              db.put(Messages, id, storedMessage({ ...current, processing_status: status }))
            }
          })
      ),
      markInboundRead: Effect.fn("MessagesRepo.markInboundRead")((marks: ReadonlyArray<InboundReadMark>) =>
        store.run((db) => {
          // One target per conversation, its latest (as the PostgreSQL adapter's statement).
          const targets = new Map<string, { readonly message: MessageRecord; readonly at: string }>()
          for (const mark of marks) {
            const message = byNetworkId(db, mark.phoneNumberId, mark.networkId)
            if (message === undefined || message.project_id !== mark.projectId || message.direction !== "inbound") continue
            const seen = targets.get(message.conversation_id)
            targets.set(message.conversation_id, {
              message: seen === undefined || seen.message.created_at < message.created_at ? message : seen.message,
              at: seen === undefined || seen.at < mark.at ? mark.at : seen.at
            })
          }
          let marked = 0
          for (const { at, message } of targets.values()) {
            const earlier = db.all(Messages).filter(messageMatches(message.project_id, {
              conversation_id: message.conversation_id,
              direction: "inbound",
              status: "delivered",
              until: message.created_at
            }))
            for (const m of earlier) db.put(Messages, m.id, storedMessage({ ...m, status: "read", updated_at: at }))
            marked += earlier.length
          }
          return marked
        })
      ),
      list: Effect.fn("MessagesRepo.list")((projectId: string, filter: MessageFilter, window: ListWindow) =>
        store.run((db) => slice(db.all(Messages).filter(messageMatches(projectId, filter)), window))
      ),
      recordStatuses: Effect.fn("MessagesRepo.recordStatuses")((events: ReadonlyArray<StatusEventRecord>) =>
        store.run((db) => allOrNothing(db, events, recordStatus))
      ),
      statusEvents: Effect.fn("MessagesRepo.statusEvents")((phoneNumberId: string, networkIds: ReadonlyArray<string>) =>
        // Insertion order is arrival order.
        store.run((db) => {
          const wanted = new Set(networkIds)
          return db.all(StatusEvents).filter((e) => e.phone_number_id === phoneNumberId && wanted.has(e.network_id))
        })
      ),
      statusEventsByCallbackData: Effect.fn("MessagesRepo.statusEventsByCallbackData")(
        (phoneNumberId: string, callbackData: string, since: string) =>
          store.run((db) =>
            db.all(StatusEvents).filter((e) =>
              e.phone_number_id === phoneNumberId && Date.parse(e.received_at) >= Date.parse(since) &&
              (e.raw as Record<string, unknown>)["biz_opaque_callback_data"] === callbackData
            )
          )
      )
    })
  })
)

// ---------------------------------------------------------------------------------------------
// Media, inbox, template status reports, locks

export const layerMemoryMediaRepo = Layer.effect(
  MediaRepo,
  Effect.gen(function*() {
    const store = yield* MemoryStore
    const copy = (m: StoredMedia): StoredMedia => ({ ...m, bytes: bytesOf(m.bytes) })
    return MediaRepo.of({
      insert: Effect.fn("MediaRepo.insert")((media: StoredMedia) =>
        store.run((db) => {
          requireProject(db, media.project_id)
          if (db.get(Media, media.id) !== undefined) violation(`duplicate media id ${media.id}`)
          db.put(Media, media.id, { ...copy(media), created_at: timestamp(media.created_at) })
        })
      ),
      find: Effect.fn("MediaRepo.find")((projectId: string, id: string) =>
        store.run((db) =>
          Option.map(
            Option.filter(Option.fromNullishOr(db.get(Media, id)), (m) => m.project_id === projectId),
            copy
          )
        )
      ),
      delete: Effect.fn("MediaRepo.delete")((projectId: string, id: string) =>
        store.run((db) => {
          const current = db.get(Media, id)
          return current !== undefined && current.project_id === projectId && db.remove(Media, id)
        })
      ),
      recordUpload: Effect.fn("MediaRepo.recordUpload")((upload: MediaUpload) =>
        store.run((db) => {
          requireProject(db, upload.project_id)
          db.put(MediaUploads, `${upload.project_id}\u0000${upload.network_media_id}`, {
            ...upload,
            created_at: timestamp(upload.created_at)
          })
        })
      ),
      findUploads: Effect.fn("MediaRepo.findUploads")((projectId: string, networkMediaIds: ReadonlyArray<string>) =>
        store.run((db) =>
          networkMediaIds.flatMap((id) => Option.toArray(Option.fromNullishOr(db.get(MediaUploads, `${projectId}\u0000${id}`))))
        )
      )
    })
  })
)

const storedEntry = (e: InboxEntry): InboxEntry => ({
  ...e,
  body: bytesOf(e.body),
  received_at: timestamp(e.received_at),
  fanned_out_at: nullableTimestamp(e.fanned_out_at),
  processed_at: nullableTimestamp(e.processed_at),
  senders: [...e.senders]
})

export const layerMemoryUpstreamInboxRepo = Layer.effect(
  UpstreamInboxRepo,
  Effect.gen(function*() {
    const store = yield* MemoryStore
    const patch = (id: string, change: Partial<InboxEntry>) =>
      store.run((db) => {
        const current = db.get(Inbox, id)
        if (current !== undefined) db.put(Inbox, id, storedEntry({ ...current, ...change }))
      })
    return UpstreamInboxRepo.of({
      insert: Effect.fn("UpstreamInboxRepo.insert")((entry: InboxEntry) =>
        store.run((db) => {
          if (db.get(Inbox, entry.id) !== undefined) violation(`duplicate inbox id ${entry.id}`)
          db.put(Inbox, entry.id, storedEntry(entry))
        })
      ),
      find: Effect.fn("UpstreamInboxRepo.find")((id: string) =>
        store.run((db) => Option.map(Option.fromNullishOr(db.get(Inbox, id)), storedEntry))
      ),
      markFannedOut: Effect.fn("UpstreamInboxRepo.markFannedOut")((id: string, at: string) =>
        patch(id, { fanned_out_at: at })
      ),
      markProcessed: Effect.fn("UpstreamInboxRepo.markProcessed")((id: string, at: string) =>
        patch(id, { processed_at: at, senders: [] })
      ),
      hasUnprocessedFrom: Effect.fn("UpstreamInboxRepo.hasUnprocessedFrom")((senders: ReadonlyArray<string>) =>
        store.run((db) => db.all(Inbox).some((e) => e.processed_at === null && e.senders.some((s) => senders.includes(s))))
      ),
      listUnprocessed: Effect.fn("UpstreamInboxRepo.listUnprocessed")((receivedBefore: string, limit: number) =>
        store.run((db) =>
          db.all(Inbox)
            .filter((e) => e.processed_at === null && instant(e.received_at) < instant(receivedBefore))
            .sort((a, b) => instant(a.received_at) - instant(b.received_at) || byteOrder(a.id, b.id))
            .slice(0, limit)
            .map(storedEntry)
        )
      ),
      prune: Effect.fn("UpstreamInboxRepo.prune")((before: string) =>
        store.run((db) => {
          let removed = 0
          for (const e of db.all(Inbox)) {
            if (e.processed_at !== null && instant(e.processed_at) < instant(before)) {
              db.remove(Inbox, e.id)
              removed++
            }
          }
          return removed
        })
      ),
      recordTemplateStatus: Effect.fn("UpstreamInboxRepo.recordTemplateStatus")((event: TemplateStatusRecord) =>
        store.run((db) => {
          if (db.get(TemplateStatuses, event.id) !== undefined) violation(`duplicate template status id ${event.id}`)
          db.put(TemplateStatuses, event.id, { ...event, received_at: timestamp(event.received_at) })
        })
      ),
      listTemplateStatus: Effect.fn("UpstreamInboxRepo.listTemplateStatus")((businessAccountId: string) =>
        store.run((db) =>
          db.all(TemplateStatuses)
            .filter((e) => e.business_account_id === businessAccountId)
            .sort((a, b) => instant(a.received_at) - instant(b.received_at) || byteOrder(a.id, b.id))
        )
      )
    })
  })
)

/** Memory transactions already run one at a time, so a lock has nothing left to hold. */
export const layerMemoryMessagingLocks = Layer.succeed(
  MessagingLocks,
  MessagingLocks.of({ lock: () => Effect.void, lockAll: () => Effect.void })
)

/** Every messaging port in memory, over the `MemoryStore` in context. */
export const layerMemoryMessagingStorage = Layer.mergeAll(
  layerMemoryMessageConfigsRepo,
  layerMemoryContactsRepo,
  layerMemoryConversationsRepo,
  layerMemoryMessagesRepo,
  layerMemoryMediaRepo,
  layerMemoryUpstreamInboxRepo,
  layerMemoryMessagingLocks
)
