/**
 * `ContactErasureRepo` in memory: the erasure records, and deletions over the
 * tables the other memory adapters keep (shared by name in `MemoryStore`),
 * with the same matching rules as the Postgres adapter.
 */
import { Effect, Layer, Option } from "effect"
import type { EventRecord } from "../events/Event.ts"
import type { ExecutionRecord, StepEventRecord } from "../executions/Execution.ts"
import type { ContactRecord, ConversationRecord, InboxEntry, MessageRecord, StatusEventRecord, StoredMedia } from "../messaging/Message.ts"
import {
  type ContactErasureRecord,
  ContactErasureRepo,
  type ErasureSubject,
  erasureTerms
} from "./ContactErasureRepo.ts"
import type { ExecutionInputRecord } from "../executions/ExecutionsRepo.ts"
import type { DomainEvent } from "../ports/Outbox.ts"
import type { WebhookAttemptRecord, WebhookBufferRecord, WebhookDeliveryRecord } from "../webhooks/Webhook.ts"
import { instant, json, nullableTimestamp, timestamp } from "../ports/MemoryRows.ts"
import { MemoryStore, type MemoryTable, memoryTable, type MemoryTables } from "../ports/MemoryStore.ts"

const Erasures = memoryTable<ContactErasureRecord>("contact_erasures")
const Contacts = memoryTable<ContactRecord>("msg_contacts")
const Conversations = memoryTable<ConversationRecord>("msg_conversations")
const Messages = memoryTable<MessageRecord>("msg_messages")
const StatusEvents = memoryTable<StatusEventRecord>("msg_status_events")
const Media = memoryTable<StoredMedia>("msg_media")
const Inbox = memoryTable<InboxEntry>("msg_upstream_inbox")
const Executions = memoryTable<ExecutionRecord>("workflow_executions")
const StepEvents = memoryTable<StepEventRecord>("workflow_step_events")
const Inputs = memoryTable<ExecutionInputRecord>("workflow_execution_inputs")
const Events = memoryTable<EventRecord>("events")
const DomainEvents = memoryTable<DomainEvent>("domain_events")
const Deliveries = memoryTable<WebhookDeliveryRecord>("webhook_deliveries")
const Attempts = memoryTable<WebhookAttemptRecord & { readonly id: string }>("webhook_delivery_attempts")
const Buffers = memoryTable<WebhookBufferRecord>("webhook_buffers")

// The status reports' key, as `MemoryMessaging` keeps them.
const statusKey = (e: StatusEventRecord) => JSON.stringify([e.phone_number_id, e.network_id, e.status, e.timestamp])

const stored = (r: ContactErasureRecord): ContactErasureRecord =>
  json({
    ...r,
    created_at: timestamp(r.created_at),
    updated_at: timestamp(r.updated_at),
    finished_at: nullableTimestamp(r.finished_at)
  })

const conversationIds = (db: MemoryTables, s: ErasureSubject) =>
  new Set(
    db.all(Conversations).filter((c) => c.project_id === s.project_id && c.contact_id === s.contact_id).map((c) => c.id)
  )

const executionsOf = (db: MemoryTables, s: ErasureSubject) => {
  const conversations = conversationIds(db, s)
  return db.all(Executions).filter((e) =>
    e.project_id === s.project_id &&
    (e.contact_id === s.contact_id || (e.msg_conversation_id !== null && conversations.has(e.msg_conversation_id)))
  )
}

const messagesOf = (db: MemoryTables, s: ErasureSubject) =>
  db.all(Messages).filter((m) => m.project_id === s.project_id && m.contact_id === s.contact_id)

const mentions = (text: string, terms: ReadonlyArray<string>) => terms.some((t) => text.includes(t))
const bytesMention = (bytes: Uint8Array, terms: ReadonlyArray<string>) => mentions(Buffer.from(bytes).toString("utf8"), terms)

/** Removes up to `limit` rows of `rows` (keyed by `key`); answers how many. */
const removeSome = <A>(db: MemoryTables, table: MemoryTable<A>, rows: ReadonlyArray<A>, key: (a: A) => string, limit: number) => {
  const some = rows.slice(0, limit)
  for (const row of some) db.remove(table, key(row))
  return some.length
}

const byId = (r: { readonly id: string }) => r.id

export const layerMemoryContactErasureRepo = Layer.effect(
  ContactErasureRepo,
  Effect.gen(function*() {
    const store = yield* MemoryStore
    const deletion = (name: string, f: (db: MemoryTables, s: ErasureSubject, limit: number) => number) =>
      Effect.fn(`ContactErasureRepo.${name}`)((subject: ErasureSubject, limit: number) =>
        store.run((db) => f(db, subject, limit))
      )
    return ContactErasureRepo.of({
      open: Effect.fn("ContactErasureRepo.open")((record: ContactErasureRecord) =>
        store.run((db) => {
          const current = db.all(Erasures).find((e) =>
            e.project_id === record.project_id && e.contact_id === record.contact_id && e.status !== "done"
          )
          if (current !== undefined) return { record: current, created: false }
          const row = stored(record)
          db.put(Erasures, row.id, row)
          return { record: row, created: true }
        })
      ),
      find: Effect.fn("ContactErasureRepo.find")((id: string) =>
        store.run((db) => Option.fromNullishOr(db.get(Erasures, id)))
      ),
      reach: Effect.fn("ContactErasureRepo.reach")((id: string, step: string, at: string) =>
        store.run((db) => {
          const current = db.get(Erasures, id)
          if (current === undefined || current.status === "done") return false
          db.put(Erasures, id, stored({ ...current, status: "running", step, updated_at: at }))
          return true
        })
      ),
      finish: Effect.fn("ContactErasureRepo.finish")((id: string, at: string) =>
        store.run((db) => {
          const current = db.get(Erasures, id)
          if (current !== undefined) {
            db.put(Erasures, id, stored({ ...current, status: "done", target: null, updated_at: at, finished_at: at }))
          }
        })
      ),
      listUnfinished: Effect.fn("ContactErasureRepo.listUnfinished")((limit: number) =>
        store.run((db) =>
          db.all(Erasures)
            .filter((e) => e.status !== "done")
            .sort((a, b) => instant(a.created_at) - instant(b.created_at) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
            .slice(0, limit)
        )
      ),

      deleteStepEvents: deletion("deleteStepEvents", (db, s, limit) => {
        const executions = new Set(executionsOf(db, s).map((e) => e.id))
        return removeSome(db, StepEvents, db.all(StepEvents).filter((e) => executions.has(e.execution_id)), byId, limit)
      }),
      deleteExecutions: deletion("deleteExecutions", (db, s, limit) => {
        const inputs = db.all(Inputs).filter((i) => i.project_id === s.project_id && i.contact_id === s.contact_id)
        const removedInputs = removeSome(db, Inputs, inputs, byId, limit)
        const executions = executionsOf(db, s)
        const gone = new Set(executions.slice(0, limit - removedInputs).map((e) => e.id))
        // Step events are the previous step's; any a live run wrote since go with their execution.
        for (const e of db.all(StepEvents)) if (gone.has(e.execution_id)) db.remove(StepEvents, e.id)
        return removedInputs + removeSome(db, Executions, executions, byId, limit - removedInputs)
      }),
      deleteProjectEvents: deletion("deleteProjectEvents", (db, s, limit) => {
        const conversations = conversationIds(db, s)
        const linked = db.all(Events).filter((e) =>
          e.project_id === s.project_id && e.conversation_id !== null && conversations.has(e.conversation_id)
        )
        return removeSome(db, Events, linked, byId, limit)
      }),
      deleteDeliveries: deletion("deleteDeliveries", (db, s, limit) => {
        const terms = erasureTerms(s)
        const deliveries = db.all(Deliveries).filter((d) =>
          d.project_id === s.project_id &&
          ((s.target.wa_id !== null && d.conversation_phone_number === s.target.wa_id) ||
            bytesMention(Buffer.from(d.body, "base64"), terms))
        ).slice(0, limit)
        const gone = new Set(deliveries.map((d) => d.id))
        for (const a of db.all(Attempts)) if (gone.has(a.delivery_id)) db.remove(Attempts, a.id)
        const removed = removeSome(db, Deliveries, deliveries, byId, limit)
        const buffers = db.all(Buffers).filter((b) =>
          b.project_id === s.project_id &&
          ((s.target.wa_id !== null && b.conversation_phone_number === s.target.wa_id) ||
            mentions(JSON.stringify(b.items), terms))
        )
        return removed + removeSome(db, Buffers, buffers, byId, limit - removed)
      }),
      deleteDomainEvents: deletion("deleteDomainEvents", (db, s, limit) => {
        const terms = erasureTerms(s)
        const named = db.all(DomainEvents).filter((e) => e.project_id === s.project_id && mentions(JSON.stringify(e.payload), terms))
        return removeSome(db, DomainEvents, named, byId, limit)
      }),
      deleteUpstreamPayloads: deletion("deleteUpstreamPayloads", (db, s, limit) => {
        const networkIds = new Set(
          messagesOf(db, s).flatMap((m) => m.network_id === null ? [] : [`${m.phone_number_id}\u0000${m.network_id}`])
        )
        const reports = db.all(StatusEvents).filter((e) => networkIds.has(`${e.phone_number_id}\u0000${e.network_id}`))
        const removed = removeSome(db, StatusEvents, reports, statusKey, limit)
        // The inbox is not scoped by project (ingestion stores it before it knows one): a payload names its contact.
        const terms = erasureTerms(s).filter((t) => t !== s.contact_id)
        const payloads = db.all(Inbox).filter((e) => bytesMention(e.body, terms))
        return removed + removeSome(db, Inbox, payloads, byId, limit - removed)
      }),
      deleteMedia: deletion("deleteMedia", (db, s, limit) => {
        const ids = new Set(messagesOf(db, s).flatMap((m) => m.media === null ? [] : [m.media.id]))
        return removeSome(db, Media, db.all(Media).filter((m) => m.project_id === s.project_id && ids.has(m.id)), byId, limit)
      }),
      deleteMessages: deletion("deleteMessages", (db, s, limit) => removeSome(db, Messages, messagesOf(db, s), byId, limit)),
      deleteConversations: deletion("deleteConversations", (db, s, limit) => {
        const conversations = db.all(Conversations)
          .filter((c) => c.project_id === s.project_id && c.contact_id === s.contact_id)
          .slice(0, limit)
        const gone = new Set(conversations.map((c) => c.id))
        // Messages that arrived while the erasure ran go with their conversation (as the Postgres cascade does).
        for (const m of db.all(Messages)) if (gone.has(m.conversation_id)) db.remove(Messages, m.id)
        return removeSome(db, Conversations, conversations, byId, limit)
      }),
      deleteContact: deletion("deleteContact", (db, s) => {
        const contact = db.get(Contacts, s.contact_id)
        if (contact === undefined || contact.project_id !== s.project_id) return 0
        for (const c of db.all(Conversations)) {
          if (c.contact_id === s.contact_id) db.remove(Conversations, c.id)
        }
        for (const m of db.all(Messages)) if (m.contact_id === s.contact_id) db.remove(Messages, m.id)
        return db.remove(Contacts, s.contact_id) ? 1 : 0
      })
    })
  })
)
