/** `BroadcastsRepo` in memory, with the keys the Postgres schema enforces; reads messages from the same store. */
import { Effect, Layer, Option } from "effect"
import {
  ANONYMISED_PHONE,
  type BroadcastCounts,
  type BroadcastFilter,
  type BroadcastRecord,
  type BroadcastStatus,
  RESPONSE_WINDOW_MS,
  type RecipientRecord,
  type RecipientStatus,
  type RecipientView
} from "./Broadcast.ts"
import type { MessageRecord } from "../messaging/Message.ts"
import { BroadcastsRepo, type RecipientOutcome, type RecipientRetry } from "./BroadcastsRepo.ts"
import type { Project } from "../projects/Project.ts"
import type { ListWindow } from "../shared/Pagination.ts"
import { MemoryStore, memoryTable, type MemoryTables } from "../ports/MemoryStore.ts"
import { compareKeys, instant, json, nullableTimestamp, sliceWindow, timestamp, violation } from "../ports/MemoryRows.ts"

const Broadcasts = memoryTable<BroadcastRecord>("msg_broadcasts")
const Recipients = memoryTable<RecipientRecord>("msg_broadcast_recipients")
const Messages = memoryTable<MessageRecord>("msg_messages")
const Projects = memoryTable<Project>("projects")

const storedBroadcast = (b: BroadcastRecord): BroadcastRecord => ({
  ...b,
  template: json(b.template),
  scheduled_at: nullableTimestamp(b.scheduled_at),
  started_at: nullableTimestamp(b.started_at),
  completed_at: nullableTimestamp(b.completed_at),
  stopped_at: nullableTimestamp(b.stopped_at),
  lease_until: nullableTimestamp(b.lease_until),
  created_at: timestamp(b.created_at),
  updated_at: timestamp(b.updated_at)
})

const storedRecipient = (r: RecipientRecord): RecipientRecord => ({
  ...r,
  template_parameters: r.template_parameters === undefined ? null : json(r.template_parameters),
  error_details: r.error_details === null ? null : json(r.error_details),
  sent_at: nullableTimestamp(r.sent_at),
  failed_at: nullableTimestamp(r.failed_at),
  retry_at: nullableTimestamp(r.retry_at),
  attempted_at: nullableTimestamp(r.attempted_at),
  created_at: timestamp(r.created_at),
  updated_at: timestamp(r.updated_at)
})

const newestFirst = <A extends { readonly created_at: string; readonly id: string }>(rows: ReadonlyArray<A>) =>
  [...rows].sort((a, b) => compareKeys({ sortKey: b.created_at, id: b.id }, { sortKey: a.created_at, id: a.id }))

const oldestFirst = <A extends { readonly created_at: string; readonly id: string }>(rows: ReadonlyArray<A>) =>
  [...rows].sort((a, b) => compareKeys({ sortKey: a.created_at, id: a.id }, { sortKey: b.created_at, id: b.id }))

/** The time of the first network status report of this kind, ISO. */
const reportedAt = (m: MessageRecord, status: string): string | null => {
  for (const s of m.statuses) {
    const report = s as { readonly status?: unknown; readonly timestamp?: unknown }
    if (report.status === status && typeof report.timestamp === "string" && /^\d+$/.test(report.timestamp)) {
      return new Date(Number(report.timestamp) * 1000).toISOString()
    }
  }
  return null
}

/** Each recipient with what its message says: the view the API and the counters read. */
const views = (db: MemoryTables, recipients: ReadonlyArray<RecipientRecord>): Array<RecipientView> => {
  const inboundByConversation = new Map<string, Array<number>>()
  for (const m of db.all(Messages)) {
    if (m.direction !== "inbound") continue
    const list = inboundByConversation.get(m.conversation_id) ?? []
    list.push(instant(m.created_at))
    inboundByConversation.set(m.conversation_id, list)
  }
  return recipients.map((r) => {
    // A pending recipient's message counts once the network accepted it: its sender settles the batch later.
    const found = r.status === "sent" || r.status === "pending" ? db.get(Messages, r.message_id) : undefined
    const m = r.status === "pending" && (found?.network_id == null || found.status === "failed") ? undefined : found
    const effective: RecipientStatus = m !== undefined && m.status === "failed" ? "failed" : m !== undefined && r.status === "pending" ? "sent" : r.status
    let responded: string | null = null
    if (m !== undefined && r.sent_at !== null) {
      const from = instant(r.sent_at)
      const replies = (inboundByConversation.get(m.conversation_id) ?? []).filter((t) => t > from && t <= from + RESPONSE_WINDOW_MS)
      if (replies.length > 0) responded = new Date(Math.min(...replies)).toISOString()
    }
    return {
      ...r,
      network_message_id: m?.network_id ?? null,
      effective_status: effective,
      // A delivered message always has a time: the report's, else when the message last moved.
      delivered_at: m !== undefined && (m.status === "delivered" || m.status === "read")
        ? (reportedAt(m, "delivered") ?? reportedAt(m, "read") ?? m.updated_at)
        : null,
      read_at: m !== undefined && m.status === "read" ? (reportedAt(m, "read") ?? m.updated_at) : null,
      responded_at: responded,
      failed_at: r.failed_at ?? (m !== undefined && m.status === "failed" ? (reportedAt(m, "failed") ?? m.updated_at) : null)
    }
  })
}

const countsOf = (all: ReadonlyArray<RecipientView>): BroadcastCounts => ({
  total: all.length,
  sent: all.filter((r) => r.effective_status === "sent").length,
  failed: all.filter((r) => r.effective_status === "failed" || r.effective_status === "suppressed").length,
  delivered: all.filter((r) => r.delivered_at !== null).length,
  read: all.filter((r) => r.read_at !== null).length,
  responded: all.filter((r) => r.responded_at !== null).length,
  pending: all.filter((r) => r.effective_status === "pending").length,
  held: all.filter((r) => r.effective_status === "pending" && r.held_until != null).length
})

const matches = (filter: BroadcastFilter) => (b: BroadcastRecord) =>
  (filter.status === undefined || b.status === filter.status) &&
  (filter.msg_config_id === undefined || b.msg_config_id === filter.msg_config_id) &&
  (filter.msg_template_id === undefined || b.msg_template_id === filter.msg_template_id)

const recipientsOf = (db: MemoryTables, broadcastId: string) => db.all(Recipients).filter((r) => r.broadcast_id === broadcastId)

const ownBroadcast = (db: MemoryTables, projectId: string, id: string) => {
  const b = db.get(Broadcasts, id)
  return b !== undefined && b.project_id === projectId ? b : undefined
}

export const layerMemoryBroadcastsRepo = Layer.effect(
  BroadcastsRepo,
  Effect.gen(function*() {
    const store = yield* MemoryStore
    return BroadcastsRepo.of({
      insert: Effect.fn("BroadcastsRepo.insert")((b: BroadcastRecord) =>
        store.run((db) => {
          if (db.get(Projects, b.project_id) === undefined) violation(`no project ${b.project_id}`)
          if (db.get(Broadcasts, b.id) !== undefined) violation(`duplicate broadcast ${b.id}`)
          db.put(Broadcasts, b.id, storedBroadcast(b))
        })
      ),
      findById: Effect.fn("BroadcastsRepo.findById")((projectId: string, id: string) =>
        store.run((db) => Option.fromNullishOr(ownBroadcast(db, projectId, id)))
      ),
      list: Effect.fn("BroadcastsRepo.list")((projectId: string, filter: BroadcastFilter, window: ListWindow) =>
        store.run((db) => sliceWindow(newestFirst(db.all(Broadcasts).filter((b) => b.project_id === projectId).filter(matches(filter))), window))
      ),
      transition: Effect.fn("BroadcastsRepo.transition")((b: BroadcastRecord, from: ReadonlyArray<BroadcastStatus>) =>
        store.run((db) => {
          const current = ownBroadcast(db, b.project_id, b.id)
          if (current === undefined || !from.includes(current.status)) return Option.none<BroadcastRecord>()
          const row = storedBroadcast({ ...b, lease_owner: current.lease_owner, lease_until: current.lease_until, created_at: current.created_at })
          db.put(Broadcasts, b.id, row)
          return Option.some(row)
        })
      ),
      addRecipients: Effect.fn("BroadcastsRepo.addRecipients")(
        (projectId: string, broadcastId: string, recipients: ReadonlyArray<RecipientRecord>) =>
          store.run((db) => {
            const b = ownBroadcast(db, projectId, broadcastId)
            if (b === undefined || b.status !== "draft") return Option.none()
            const phones = new Set(recipientsOf(db, broadcastId).map((r) => r.phone_number))
            let added = 0
            for (const r of recipients) {
              if (phones.has(r.phone_number)) continue
              if (db.get(Recipients, r.id) !== undefined) violation(`duplicate recipient ${r.id}`)
              phones.add(r.phone_number)
              db.put(Recipients, r.id, storedRecipient(r))
              added++
            }
            return Option.some({ added, duplicates: recipients.length - added })
          })
      ),
      clearRecipients: Effect.fn("BroadcastsRepo.clearRecipients")((projectId: string, broadcastId: string) =>
        store.run((db) => {
          const b = ownBroadcast(db, projectId, broadcastId)
          if (b === undefined || (b.status !== "draft" && b.status !== "scheduled")) return Option.none()
          const rows = recipientsOf(db, broadcastId)
          for (const r of rows) db.remove(Recipients, r.id)
          return Option.some(rows.length)
        })
      ),
      listRecipients: Effect.fn("BroadcastsRepo.listRecipients")(
        (projectId: string, broadcastId: string, status: RecipientStatus | undefined, window: ListWindow) =>
          store.run((db) => {
            if (ownBroadcast(db, projectId, broadcastId) === undefined) return { items: [], hasMore: false, total: 0 }
            const all = views(db, recipientsOf(db, broadcastId)).filter((r) => status === undefined || r.effective_status === status)
            return sliceWindow(newestFirst(all), window)
          })
      ),
      counts: Effect.fn("BroadcastsRepo.counts")((projectId: string, broadcastId: string) =>
        store.run((db) => {
          const b = ownBroadcast(db, projectId, broadcastId)
          return countsOf(b === undefined ? [] : views(db, recipientsOf(db, broadcastId)))
        })
      ),
      lease: Effect.fn("BroadcastsRepo.lease")((broadcastId: string, owner: string, now: string, until: string) =>
        store.run((db) => {
          const b = db.get(Broadcasts, broadcastId)
          if (b === undefined) return Option.none<BroadcastRecord>()
          const free = b.lease_until === null || instant(b.lease_until) < instant(now) || b.lease_owner === owner
          if (!free) return Option.none<BroadcastRecord>()
          const row = storedBroadcast({ ...b, lease_owner: owner, lease_until: until })
          db.put(Broadcasts, b.id, row)
          return Option.some(row)
        })
      ),
      release: Effect.fn("BroadcastsRepo.release")((broadcastId: string, owner: string) =>
        store.run((db) => {
          const b = db.get(Broadcasts, broadcastId)
          if (b !== undefined && b.lease_owner === owner) db.put(Broadcasts, b.id, { ...b, lease_owner: null, lease_until: null })
        })
      ),
      pendingBatch: Effect.fn("BroadcastsRepo.pendingBatch")((broadcastId: string, now: string, limit: number) =>
        store.run((db) =>
          oldestFirst(recipientsOf(db, broadcastId).filter((r) =>
            r.status === "pending" && (r.retry_at === null || instant(r.retry_at) <= instant(now))
          )).slice(0, limit)
        )
      ),
      markAttempted: Effect.fn("BroadcastsRepo.markAttempted")((broadcastId: string, ids: ReadonlyArray<string>, at: string) =>
        store.run((db) => {
          for (const id of ids) {
            const r = db.get(Recipients, id)
            if (r !== undefined && r.broadcast_id === broadcastId) db.put(Recipients, id, storedRecipient({ ...r, attempted_at: at }))
          }
        })
      ),
      postpone: Effect.fn("BroadcastsRepo.postpone")((broadcastId: string, retries: ReadonlyArray<RecipientRetry>) =>
        store.run((db) => {
          for (const retry of retries) {
            const r = db.get(Recipients, retry.id)
            if (r === undefined || r.broadcast_id !== broadcastId || r.status !== "pending") continue
            db.put(Recipients, r.id, storedRecipient({ ...r, ...retry, held_until: retry.held_until ?? null }))
          }
        })
      ),
      settle: Effect.fn("BroadcastsRepo.settle")((broadcastId: string, outcomes: ReadonlyArray<RecipientOutcome>) =>
        store.run((db) => {
          for (const o of outcomes) {
            const r = db.get(Recipients, o.id)
            if (r === undefined || r.broadcast_id !== broadcastId || r.status !== "pending") continue
            db.put(Recipients, r.id, storedRecipient({
              ...r,
              status: o.status,
              sent_at: o.status === "sent" ? o.at : null,
              failed_at: o.status === "sent" ? null : o.at,
              error_message: o.error_message,
              error_details: o.error_details,
              updated_at: o.at
            }))
          }
        })
      ),
      progress: Effect.fn("BroadcastsRepo.progress")((broadcastId: string) =>
        store.run((db) => {
          const all = recipientsOf(db, broadcastId)
          return { total: all.length, pending: all.filter((r) => r.status === "pending").length }
        })
      ),
      listRunnable: Effect.fn("BroadcastsRepo.listRunnable")((now: string, limit: number) =>
        store.run((db) =>
          oldestFirst(db.all(Broadcasts).filter((b) =>
            b.status === "sending" || (b.status === "scheduled" && b.scheduled_at !== null && instant(b.scheduled_at) <= instant(now))
          )).slice(0, limit)
        )
      ),
      contactsReachedSince: Effect.fn("BroadcastsRepo.contactsReachedSince")((msgConfigIds: ReadonlyArray<string>, since: string) =>
        store.run((db) => {
          const configs = new Set(msgConfigIds)
          const broadcasts = new Set(db.all(Broadcasts).filter((b) => configs.has(b.msg_config_id)).map((b) => b.id))
          const from = instant(since)
          return new Set(
            db.all(Recipients)
              .filter((r) => broadcasts.has(r.broadcast_id) && r.sent_at !== null && instant(r.sent_at) >= from)
              .map((r) => r.phone_number)
          ).size
        })
      ),
      anonymiseRecipients: Effect.fn("BroadcastsRepo.anonymiseRecipients")((projectId: string, phoneNumber: string) =>
        store.run((db) => {
          const rows = db.all(Recipients).filter((r) => r.project_id === projectId && r.phone_number === phoneNumber)
          for (const r of rows) db.put(Recipients, r.id, { ...r, phone_number: ANONYMISED_PHONE, template_parameters: null })
          return rows.length
        })
      )
    })
  })
)
