/**
 * What contact erasure (decisions 4.8) removes of messaging's records: the status reports of the contact's messages
 * and the raw upstream payloads that name it, its stored media, messages, conversations and the contact row.
 * Messaging owns the port; `Parley.ts` wires it into erasure (`ContactHoldings`). Each deletion removes at most
 * `limit` rows, answers how many and is idempotent: erasure calls it until it answers less.
 */
import { Context, Effect, Layer } from "effect"
import { messagingTables, statusKey } from "./MemoryMessaging.ts"
import { byId, MemoryStore, type MemoryTables, removeSome } from "../ports/MemoryStore.ts"

const { Contacts, Conversations, Inbox, Media, Messages, StatusEvents } = messagingTables

export class MessagingErasure extends Context.Service<MessagingErasure, {
  /**
   * The status reports of the contact's messages, then the raw upstream payloads that hold one of `terms` but the
   * contact's own id (the inbox is not scoped by project: ingestion stores a payload before it knows one, and a
   * payload names its contact by the network's identifiers).
   */
  readonly deleteUpstreamPayloads: (
    projectId: string,
    contactId: string,
    terms: ReadonlyArray<string>,
    limit: number
  ) => Effect.Effect<number>
  /** The stored media (bytes and all) of the contact's messages. */
  readonly deleteMedia: (projectId: string, contactId: string, limit: number) => Effect.Effect<number>
  readonly deleteMessages: (projectId: string, contactId: string, limit: number) => Effect.Effect<number>
  /** Its conversations, with the messages that arrived in them meanwhile. */
  readonly deleteConversations: (projectId: string, contactId: string, limit: number) => Effect.Effect<number>
  /** The contact row itself (answers 0 or 1). */
  readonly deleteContact: (projectId: string, contactId: string) => Effect.Effect<number>
}>()("@parley/core/messaging/MessagingErasure") {}


const messagesOf = (db: MemoryTables, projectId: string, contactId: string) =>
  db.all(Messages).filter((m) => m.project_id === projectId && m.contact_id === contactId)

const bytesMention = (bytes: Uint8Array, terms: ReadonlyArray<string>) => {
  const text = Buffer.from(bytes).toString("utf8")
  return terms.some((t) => text.includes(t))
}

export const layerMemoryMessagingErasure = Layer.effect(
  MessagingErasure,
  Effect.gen(function*() {
    const store = yield* MemoryStore
    return MessagingErasure.of({
      deleteUpstreamPayloads: Effect.fn("MessagingErasure.deleteUpstreamPayloads")(
        (projectId: string, contactId: string, terms: ReadonlyArray<string>, limit: number) =>
          store.run((db) => {
            const networkIds = new Set(
              messagesOf(db, projectId, contactId).flatMap((m) => m.network_id === null ? [] : [`${m.phone_number_id}\u0000${m.network_id}`])
            )
            const reports = db.all(StatusEvents).filter((e) => networkIds.has(`${e.phone_number_id}\u0000${e.network_id}`))
            const removed = removeSome(db, StatusEvents, reports, limit, statusKey)
            const named = terms.filter((t) => t !== contactId)
            if (named.length === 0) return removed
            const payloads = db.all(Inbox).filter((e) => bytesMention(e.body, named))
            return removed + removeSome(db, Inbox, payloads, limit - removed, byId)
          })
      ),
      deleteMedia: Effect.fn("MessagingErasure.deleteMedia")((projectId: string, contactId: string, limit: number) =>
        store.run((db) => {
          const ids = new Set(messagesOf(db, projectId, contactId).flatMap((m) => m.media === null ? [] : [m.media.id]))
          return removeSome(db, Media, db.all(Media).filter((m) => m.project_id === projectId && ids.has(m.id)), limit, byId)
        })
      ),
      deleteMessages: Effect.fn("MessagingErasure.deleteMessages")((projectId: string, contactId: string, limit: number) =>
        store.run((db) => removeSome(db, Messages, messagesOf(db, projectId, contactId), limit, byId))
      ),
      deleteConversations: Effect.fn("MessagingErasure.deleteConversations")((projectId: string, contactId: string, limit: number) =>
        store.run((db) => {
          const conversations = db.all(Conversations)
            .filter((c) => c.project_id === projectId && c.contact_id === contactId)
            .slice(0, limit)
          const gone = new Set(conversations.map((c) => c.id))
          // Messages that arrived while the erasure ran go with their conversation (as the Postgres cascade does).
          for (const m of db.all(Messages)) if (gone.has(m.conversation_id)) db.remove(Messages, m.id)
          return removeSome(db, Conversations, conversations, limit, byId)
        })
      ),
      deleteContact: Effect.fn("MessagingErasure.deleteContact")((projectId: string, contactId: string) =>
        store.run((db) => {
          const contact = db.get(Contacts, contactId)
          if (contact === undefined || contact.project_id !== projectId) return 0
          for (const c of db.all(Conversations)) if (c.contact_id === contactId) db.remove(Conversations, c.id)
          for (const m of db.all(Messages)) if (m.contact_id === contactId) db.remove(Messages, m.id)
          return db.remove(Contacts, contactId) ? 1 : 0
        })
      )
    })
  })
)
