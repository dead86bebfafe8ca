/**
 * The stored side of messaging (decisions 2.10, 3.5, 10.1 step 1): inbound
 * messages recorded once per network id, outbound messages recorded at send
 * and moved by status reports, contacts found or created by phone number or
 * business-scoped id, conversations opened on the first message between a
 * number and a contact and ended after 24 hours of silence. Every change that
 * webhooks report writes its domain event in the same transaction.
 *
 * Ingestion calls `recordInbound` and `applyStatuses`; the proxy calls
 * `recordOutbound`, `assignNetworkId`, `failOutbound`, `markInboundRead` and
 * the reads.
 */
import { Clock, Context, Effect, Exit, Layer, Option } from "effect"
import { createHash } from "node:crypto"
import { PublicUrl } from "../http/PublicUrl.ts"
import { JobQueue } from "../ports/JobQueue.ts"
import { MessageConfigsRepo } from "../ports/MessageConfigsRepo.ts"
import { ContactsRepo, ConversationsRepo, MediaRepo, MessagesRepo, MessagingLocks } from "../ports/MessagingRepo.ts"
import { type DomainEvent, Outbox } from "../ports/Outbox.ts"
import { Transactor } from "../ports/Transactor.ts"
import { type NotFound, notFound, type Unprocessable, unprocessable } from "../shared/ApiError.ts"
import { groupBy } from "../shared/Collections.ts"
import * as GroupCommit from "../shared/GroupCommit.ts"
import { Ids } from "../shared/Ids.ts"
import type { ListSlice, ListWindow } from "../shared/Pagination.ts"
import type { MessageConfigRecord } from "./numbers/MessageConfig.ts"
import { phoneDigits } from "./numbers/MessageConfig.ts"
import { LiveNumbers } from "./numbers/LiveNumbers.ts"
import { renderInbound, renderOutbound, type Rendition } from "./Content.ts"
import {
  conversationEventPayload,
  messageEventPayload,
  conversationActivityPayload,
  MSG_CONVERSATION_ACTIVITY,
  MSG_CONVERSATION_CREATED,
  MSG_CONVERSATION_ENDED,
  MSG_MESSAGE_RECEIVED,
  msgMessageStatusEvent
} from "./DomainEvents.ts"
import {
  type ContactFilter,
  type ContactRecord,
  type ConversationEndReason,
  type ConversationFilter,
  type ConversationRecord,
  type ConversationStatus,
  MEDIA_TYPES,
  mediaUrl,
  type MessageFilter,
  type MessageOrigin,
  type MessageRecord,
  type MessageStatus,
  type StatusEventRecord,
  type StoredMedia
} from "./Message.ts"
import { armInactivity, CONVERSATION_IDLE_MS } from "./Queues.ts"
import type { WebhookContact } from "./Webhook.ts"

type Json = Record<string, unknown>

const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value)
const str = (value: unknown): string | undefined => (typeof value === "string" && value.length > 0 ? value : undefined)

/** A file fetched from the network for an inbound message, to keep with it. */
export interface FetchedMedia {
  readonly network_media_id: string
  readonly bytes: Uint8Array
  readonly content_type: string
  readonly filename: string | undefined
}

export interface InboundInput {
  /** The network's message object exactly as the webhook carried it. */
  readonly message: Json
  /** The `contacts[]` member of the change that names the sender, if any. */
  readonly contact?: WebhookContact | undefined
  readonly media?: FetchedMedia | undefined
}

export type InboundOutcome =
  | { readonly _tag: "Recorded"; readonly message: MessageRecord; readonly conversation: ConversationRecord; readonly newConversation: boolean }
  | { readonly _tag: "Duplicate" }
  /** Neither a phone number nor a business-scoped id names the sender, or the message has no id. */
  | { readonly _tag: "Unaddressable" }

export type StatusOutcome =
  | { readonly _tag: "Applied"; readonly message: MessageRecord; readonly changed: boolean }
  | { readonly _tag: "Duplicate" }
  /** Kept: it applies when the message is recorded (a report that overtook the send). */
  | { readonly _tag: "Pending" }

export interface OutboundInput {
  /** The send envelope as it goes to the network (parsed). */
  readonly envelope: Json
  /** The Parley id to record the message under; by default a new one. */
  readonly id?: string | undefined
  /** Known when the network already answered. */
  readonly network_id?: string | undefined
  readonly origin?: MessageOrigin | undefined
}

/** The most outbound records or network ids written in one transaction. */
const BATCH_MAX = 256
/** Such transactions running at once: their round trips overlap. */
const BATCH_WRITERS = 4

/** A status as the network reports it, in rank order (decisions 3.5); `played` counts as `read`. */
const RANK: Readonly<Record<string, number>> = { pending: 0, sent: 1, delivered: 2, read: 3 }

/** The status a report moves a message to, or undefined when it changes nothing (decisions 3.5). */
export const nextStatus = (current: MessageStatus, reported: string): MessageStatus | undefined => {
  const status = reported === "played" ? "read" : reported
  if (status === "failed") return current === "delivered" || current === "read" || current === "failed" ? undefined : "failed"
  if (status !== "sent" && status !== "delivered" && status !== "read") return undefined
  if (current === "failed") return status
  return RANK[status]! > RANK[current]! ? status : undefined
}

const epochSeconds = (ms: number) => String(Math.floor(ms / 1000))
const iso = (ms: number) => new Date(ms).toISOString()
const later = (a: string | null, b: string) => (a === null || Date.parse(b) > Date.parse(a) ? b : a)

/** When a contact wrote: the network's timestamp, never ahead of now. */
const activityTime = (timestamp: string | undefined, now: number) => {
  const seconds = timestamp === undefined ? Number.NaN : Number(timestamp)
  return Number.isFinite(seconds) ? Math.min(now, seconds * 1000) : now
}

const extension = (contentType: string) => {
  const type = contentType.split(";")[0]!.trim().toLowerCase()
  const known: Readonly<Record<string, string>> = {
    "image/jpeg": "jpg",
    "image/png": "png",
    "image/webp": "webp",
    "video/mp4": "mp4",
    "video/3gpp": "3gp",
    "audio/ogg": "ogg",
    "audio/mpeg": "mp3",
    "audio/mp4": "m4a",
    "audio/aac": "aac",
    "audio/amr": "amr",
    "application/pdf": "pdf",
    "text/plain": "txt"
  }
  return known[type] ?? "bin"
}

interface Identity {
  readonly waId: string | undefined
  readonly userId: string | undefined
  readonly parentUserId?: string | undefined
  readonly username?: string | undefined
  readonly name?: string | undefined
}

const newContact = (projectId: string, who: Identity, id: string, now: string): ContactRecord => ({
  id,
  project_id: projectId,
  wa_id: who.waId ?? null,
  business_scoped_user_id: who.userId ?? null,
  parent_business_scoped_user_id: who.parentUserId ?? null,
  username: who.username ?? null,
  profile_name: who.name ?? null,
  created_at: now,
  updated_at: now
})

/** A new active conversation of (number, contact), before its first message is counted. */
const newConversation = (
  config: MessageConfigRecord,
  contact: ContactRecord,
  id: string,
  activeAt: string,
  now: string
): ConversationRecord =>
  ({
    id,
    project_id: config.project_id,
    msg_config_id: config.id,
    phone_number_id: config.phone_number_id,
    contact_id: contact.id,
    phone_number: contact.wa_id,
    business_scoped_user_id: contact.business_scoped_user_id,
    parent_business_scoped_user_id: contact.parent_business_scoped_user_id,
    username: contact.username,
    contact_name: contact.profile_name,
    status: "active",
    end_reason: null,
    ended_at: null,
    last_active_at: activeAt,
    metadata: null,
    assigned_user_id: null,
    messages_count: 0,
    last_message_id: null,
    last_message_type: null,
    last_message_timestamp: null,
    last_message_text: null,
    last_inbound_at: null,
    last_outbound_at: null,
    created_at: now,
    updated_at: now
  })

/** The fields a new message takes from its rendition and its contact. */
const renditionFields = (type: string, rendition: Rendition, contact: ContactRecord, now: string) => ({
  has_media: MEDIA_TYPES.includes(type),
  content: rendition.content,
  transcript: null,
  message_type_data: rendition.message_type_data,
  statuses: [],
  ext_data: rendition.ext_data,
  contact_name: contact.profile_name,
  phone_number: contact.wa_id,
  created_at: now,
  updated_at: now
})

/** What a Platform API PATCH may change on a conversation; absent keys stay as they are. */
export interface ConversationChange {
  readonly status?: ConversationStatus | undefined
  /** `null` clears it. */
  readonly metadata?: Readonly<Record<string, unknown>> | null | undefined
}

/** Largest `metadata` of a conversation, serialized as JSON (decisions 2.10). */
export const CONVERSATION_METADATA_MAX_BYTES = 16 * 1024

export class Messaging extends Context.Service<Messaging, {
  readonly recordInbound: (config: MessageConfigRecord, input: InboundInput) => Effect.Effect<InboundOutcome>
  /**
   * Applies network status objects (`{ id, status, timestamp, errors?, ... }`)
   * of the number's messages, in order, in one transaction; one outcome each.
   */
  readonly applyStatuses: (config: MessageConfigRecord, statuses: ReadonlyArray<Json>) => Effect.Effect<ReadonlyArray<StatusOutcome>>
  /**
   * Records a message Parley sends (`ext.status` pending, `origin` as given, `api` by default) and
   * links it to its conversation. Concurrent records share one transaction.
   */
  readonly recordOutbound: (
    config: MessageConfigRecord,
    input: OutboundInput
  ) => Effect.Effect<{ readonly message: MessageRecord; readonly conversation: ConversationRecord }, Unprocessable>
  /**
   * The network accepted a recorded send (`recordOutbound`'s message): its id,
   * and any status reports that came first. Concurrent assignments share one
   * transaction.
   */
  readonly assignNetworkId: (config: MessageConfigRecord, message: MessageRecord, networkId: string) => Effect.Effect<MessageRecord>
  /** The network refused a recorded send: `failed`, with the error as its status entry. */
  readonly failOutbound: (projectId: string, messageId: string, error: Json) => Effect.Effect<MessageRecord, NotFound>
  /** Marks an inbound message and the earlier inbound messages of its conversation `read` (no webhook, decisions 6.1). */
  readonly markInboundRead: (config: MessageConfigRecord, networkId: string) => Effect.Effect<number>
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

  readonly listMessages: (projectId: string, filter: MessageFilter, window: ListWindow) => Effect.Effect<ListSlice<MessageRecord>>
  /** By Parley's id or the network's. */
  readonly getMessage: (projectId: string, phoneNumberId: string, id: string) => Effect.Effect<MessageRecord, NotFound>
  readonly listConversations: (
    projectId: string,
    filter: ConversationFilter,
    window: ListWindow
  ) => Effect.Effect<ListSlice<ConversationRecord>>
  readonly getConversation: (projectId: string, id: string) => Effect.Effect<ConversationRecord, NotFound>
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
  /** The project's live config of a network phone number id, if any. */
  readonly numberOf: (projectId: string, phoneNumberId: string) => Effect.Effect<Option.Option<MessageConfigRecord>>
  readonly listContacts: (projectId: string, filter: ContactFilter, window: ListWindow) => Effect.Effect<ListSlice<ContactRecord>>
  /** By contact id, phone number (any format) or business-scoped id. */
  readonly getContact: (projectId: string, identifier: string) => Effect.Effect<ContactRecord, NotFound>
}>()("@parley/core/messaging/Messaging") {
  static readonly layer = Layer.effect(
    Messaging,
    Effect.gen(function*() {
      const configs = yield* MessageConfigsRepo
      const liveNumbers = yield* LiveNumbers
      const contacts = yield* ContactsRepo
      const conversations = yield* ConversationsRepo
      const messages = yield* MessagesRepo
      const media = yield* MediaRepo
      const locks = yield* MessagingLocks
      const outbox = yield* Outbox
      const tx = yield* Transactor
      const ids = yield* Ids
      const jobs = yield* JobQueue
      const publicUrl = yield* PublicUrl

      const makeEvent = (projectId: string, type: string, payload: unknown, at: string) =>
        Effect.map(ids.uuid, (id): DomainEvent => ({ id, project_id: projectId, type, payload, created_at: at }))
      const domainEvent = (projectId: string, type: string, payload: unknown, at: string) =>
        Effect.flatMap(makeEvent(projectId, type, payload, at), outbox.append)

      /** Arms the inactivity end after a commit; a lost timer is caught by the maintenance sweep. */
      const arm = (conversation: ConversationRecord) =>
        armInactivity(jobs, conversation).pipe(
          Effect.catchCause((cause) => Effect.logWarning("Could not arm a conversation's inactivity timer", cause))
        )

      /** Finds the contact by phone number, then by business-scoped id; fills what it learnt; creates it otherwise. */
      const resolveContact = (projectId: string, who: Identity, now: string) =>
        Effect.gen(function*() {
          const byPhone = who.waId === undefined ? Option.none() : yield* contacts.findByWaId(projectId, who.waId)
          const known = Option.isSome(byPhone) && (who.userId === undefined || byPhone.value.business_scoped_user_id === who.userId)
          const byUser = known || who.userId === undefined ? Option.none() : yield* contacts.findByUserId(projectId, who.userId)
          const found = Option.orElse(byPhone, () => byUser)
          if (Option.isNone(found)) {
            const created = newContact(projectId, who, yield* ids.uuid, now)
            yield* contacts.insert(created)
            return created
          }
          const current = found.value
          // Two records of one person (met once by phone, once by id only) stay apart: never claim the other's id.
          const otherHoldsUser = Option.isSome(byPhone) && Option.isSome(byUser) && byPhone.value.id !== byUser.value.id
          const next: ContactRecord = {
            ...current,
            wa_id: current.wa_id ?? (Option.isNone(byPhone) ? who.waId ?? null : null),
            business_scoped_user_id: current.business_scoped_user_id ??
              (otherHoldsUser ? null : who.userId ?? null),
            parent_business_scoped_user_id: who.parentUserId ?? current.parent_business_scoped_user_id,
            username: who.username ?? current.username,
            profile_name: who.name ?? current.profile_name,
            updated_at: now
          }
          const changed = next.wa_id !== current.wa_id || next.business_scoped_user_id !== current.business_scoped_user_id ||
            next.parent_business_scoped_user_id !== current.parent_business_scoped_user_id ||
            next.username !== current.username || next.profile_name !== current.profile_name
          if (!changed) return current
          yield* contacts.update(next)
          return next
        })

      /** The active conversation of (number, contact), or a new one (with its domain event). */
      const openConversation = (config: MessageConfigRecord, contact: ContactRecord, activeAt: string, now: string) =>
        Effect.gen(function*() {
          yield* locks.lock(`conversation:${config.id}:${contact.id}`)
          const active = yield* conversations.findActive(config.id, contact.id)
          if (Option.isSome(active)) return { conversation: active.value, created: false }
          const conversation = newConversation(config, contact, yield* ids.uuid, activeAt, now)
          yield* conversations.insert(conversation)
          yield* domainEvent(config.project_id, MSG_CONVERSATION_CREATED, conversationEventPayload(config, conversation), now)
          return { conversation, created: true }
        })

      /** The conversation after one more message. A late (older) message does not replace the latest one. */
      const countMessage = (conversation: ConversationRecord, message: MessageRecord, contact: ContactRecord, activeAt: string, now: string) => {
        const newest = conversation.last_message_timestamp === null ||
          Number(message.timestamp) >= Number(conversation.last_message_timestamp)
        const next: ConversationRecord = {
          ...conversation,
          phone_number: conversation.phone_number ?? contact.wa_id,
          business_scoped_user_id: conversation.business_scoped_user_id ?? contact.business_scoped_user_id,
          parent_business_scoped_user_id: contact.parent_business_scoped_user_id ?? conversation.parent_business_scoped_user_id,
          username: contact.username ?? conversation.username,
          contact_name: contact.profile_name ?? conversation.contact_name,
          messages_count: conversation.messages_count + 1,
          last_active_at: later(conversation.last_active_at, activeAt)!,
          ...(newest
            ? {
              last_message_id: message.network_id,
              last_message_type: message.type,
              last_message_timestamp: message.timestamp,
              last_message_text: message.content
            }
            : {}),
          ...(message.direction === "inbound"
            ? { last_inbound_at: later(conversation.last_inbound_at, activeAt) }
            : { last_outbound_at: later(conversation.last_outbound_at, activeAt) }),
          updated_at: now
        }
        return next
      }

      const recordInbound = Effect.fn("Messaging.recordInbound")(function*(config: MessageConfigRecord, input: InboundInput) {
        const m = input.message
        const networkId = str(m["id"])
        const type = str(m["type"]) ?? "unknown"
        const who: Identity = {
          waId: str(m["from"]) ?? str(input.contact?.wa_id),
          userId: str(m["from_user_id"]) ?? str(input.contact?.user_id),
          parentUserId: str(m["from_parent_user_id"]) ?? str(input.contact?.parent_user_id),
          username: str(input.contact?.profile?.username),
          name: str(input.contact?.profile?.name)
        }
        if (networkId === undefined || (who.waId === undefined && who.userId === undefined)) {
          return { _tag: "Unaddressable" } as InboundOutcome
        }
        const nowMs = yield* Clock.currentTimeMillis
        const now = iso(nowMs)
        const activeAt = iso(activityTime(str(m["timestamp"]), nowMs))
        const messageId = yield* ids.uuid
        const stored: StoredMedia | undefined = input.media === undefined ? undefined : {
          id: yield* ids.uuid,
          project_id: config.project_id,
          msg_config_id: config.id,
          network_media_id: input.media.network_media_id,
          filename: input.media.filename ?? `${type}-${input.media.network_media_id}.${extension(input.media.content_type)}`,
          content_type: input.media.content_type,
          byte_size: input.media.bytes.byteLength,
          sha256: createHash("sha256").update(input.media.bytes).digest("hex"),
          bytes: input.media.bytes,
          created_at: now
        }

        const outcome = yield* tx.withTransaction(Effect.gen(function*() {
          yield* locks.lock(`message:${config.phone_number_id}:${networkId}`)
          if (Option.isSome(yield* messages.findByNetworkId(config.phone_number_id, networkId))) {
            return { _tag: "Duplicate" } as InboundOutcome
          }
          yield* locks.lock(`contact:${config.project_id}:${who.waId ?? who.userId}`)
          const contact = yield* resolveContact(config.project_id, who, now)
          const { conversation, created } = yield* openConversation(config, contact, activeAt, now)
          if (stored !== undefined) yield* media.insert(stored)
          const rendition = renderInbound(
            m,
            stored === undefined ? null : {
              filename: stored.filename,
              content_type: stored.content_type,
              byte_size: stored.byte_size,
              url: mediaUrl(publicUrl, stored.id)
            }
          )
          const { id: _id, timestamp: _timestamp, type: _type, ...rest } = m
          const message: MessageRecord = {
            id: messageId,
            project_id: config.project_id,
            msg_config_id: config.id,
            phone_number_id: config.phone_number_id,
            conversation_id: conversation.id,
            contact_id: contact.id,
            network_id: networkId,
            direction: "inbound",
            type,
            timestamp: str(m["timestamp"]) ?? epochSeconds(nowMs),
            fields: {
              ...rest,
              ...(contact.business_scoped_user_id !== null ? { business_scoped_user_id: contact.business_scoped_user_id } : {}),
              ...(contact.parent_business_scoped_user_id !== null
                ? { parent_business_scoped_user_id: contact.parent_business_scoped_user_id }
                : {}),
              ...(contact.username !== null ? { username: contact.username } : {})
            },
            status: "delivered",
            // No execution engine routes messages yet: processing ends here (decisions 10.1 steps 2 and 5).
            processing_status: config.inbound_processing_enabled ? "completed" : "blocked",
            origin: null,
            ...renditionFields(type, rendition, contact, now),
            media: stored === undefined
              ? null
              : { id: stored.id, filename: stored.filename, content_type: stored.content_type, byte_size: stored.byte_size }
          }
          if (!(yield* messages.insert(message))) return { _tag: "Duplicate" } as InboundOutcome
          const counted = countMessage(conversation, message, contact, activeAt, now)
          yield* conversations.update(counted)
          yield* domainEvent(
            config.project_id,
            MSG_MESSAGE_RECEIVED,
            messageEventPayload(publicUrl, config, message, counted, created),
            now
          )
          yield* domainEvent(config.project_id, MSG_CONVERSATION_ACTIVITY, conversationActivityPayload(message, activeAt), now)
          return { _tag: "Recorded", message, conversation: counted, newConversation: created } as InboundOutcome
        }))
        // One timer per conversation, armed when it opens: a timer that fires early re-arms itself (MessagingJobs).
        if (outcome._tag === "Recorded" && outcome.newConversation) yield* arm(outcome.conversation)
        return outcome
      })

      /**
       * A message after raw status objects, in order: each is appended to
       * `ext.statuses`; `steps` is the message after each one, `changes` the
       * steps that moved `ext.status` of an outbound message.
       */
      const advance = (message: MessageRecord, raws: ReadonlyArray<unknown>, now: string) => {
        let current = message
        const steps: Array<MessageRecord> = []
        const changes: Array<MessageRecord> = []
        for (const raw of raws) {
          const reported = isObject(raw) ? str(raw["status"]) ?? "" : ""
          const next = current.direction === "outbound" ? nextStatus(current.status, reported) : undefined
          current = { ...current, statuses: [...current.statuses, raw], status: next ?? current.status, updated_at: now }
          steps.push(current)
          if (next !== undefined) changes.push(current)
        }
        return { message: current, steps, changes }
      }

      /** The `msg.message.<status>` domain events of status changes, each with its message's conversation. */
      const statusEvents = (
        config: MessageConfigRecord,
        changes: ReadonlyArray<MessageRecord>,
        conversationOf: (message: MessageRecord) => ConversationRecord | undefined,
        now: string
      ) =>
        Effect.forEach(changes.flatMap((changed) => {
          const conversation = conversationOf(changed)
          return conversation === undefined ? [] : [{ changed, conversation }]
        }), ({ changed, conversation }) =>
          makeEvent(
            changed.project_id,
            msgMessageStatusEvent(changed.status as Exclude<MessageStatus, "pending">),
            messageEventPayload(publicUrl, config, changed, conversation, false),
            now
          ))

      /** Conversations by id, read in one step. */
      const conversationsById = (projectId: string, ids: ReadonlyArray<string>) =>
        Effect.map(
          ids.length === 0 ? Effect.succeed([]) : conversations.findByIds(projectId, [...new Set(ids)]),
          (found) => new Map(found.map((c) => [c.id, c]))
        )

      /** Applies raw status objects to one message: stored, with their domain events. */
      const applyToMessage = (config: MessageConfigRecord, message: MessageRecord, raws: ReadonlyArray<unknown>, now: string) =>
        Effect.gen(function*() {
          const applied = advance(message, raws, now)
          if (raws.length === 0) return applied.message
          yield* messages.update(applied.message)
          const byId = yield* conversationsById(message.project_id, applied.changes.length > 0 ? [message.conversation_id] : [])
          yield* outbox.appendMany(yield* statusEvents(config, applied.changes, (m) => byId.get(m.conversation_id), now))
          return applied.message
        })

      const applyStatuses = Effect.fn("Messaging.applyStatuses")(
        function*(config: MessageConfigRecord, statuses: ReadonlyArray<Json>) {
          const now = iso(yield* Clock.currentTimeMillis)
          const reports = statuses.flatMap((raw, index) => {
            const networkId = str(raw["id"])
            const status = str(raw["status"])
            if (networkId === undefined || status === undefined) return []
            const event: StatusEventRecord = {
              phone_number_id: config.phone_number_id,
              network_id: networkId,
              status,
              timestamp: str(raw["timestamp"]) ?? "",
              raw,
              received_at: now
            }
            return [{ index, raw, event }]
          })
          const outcomes: Array<StatusOutcome> = statuses.map(() => ({ _tag: "Duplicate" }))
          if (reports.length === 0) return outcomes
          yield* tx.withTransaction(Effect.gen(function*() {
            yield* locks.lockAll(reports.map((r) => `message:${config.phone_number_id}:${r.event.network_id}`))
            const fresh = yield* messages.recordStatuses(reports.map((r) => r.event))
            const kept = reports.filter((_, i) => fresh[i])
            const found = yield* messages.findByNetworkIds(config.phone_number_id, [...new Set(kept.map((r) => r.event.network_id))])
            const byNetworkId = new Map(
              found.filter((m) => m.project_id === config.project_id).map((m) => [m.network_id!, m] as const)
            )
            const updated: Array<MessageRecord> = []
            const changes: Array<MessageRecord> = []
            for (const group of groupBy(kept, (r) => r.event.network_id)) {
              const message = byNetworkId.get(group[0]!.event.network_id)
              if (message === undefined) {
                // Kept: it applies when the message is recorded (a report that overtook the send).
                for (const r of group) outcomes[r.index] = { _tag: "Pending" }
                continue
              }
              const applied = advance(message, group.map((r) => r.raw), now)
              group.forEach((r, i) => {
                const before = i === 0 ? message : applied.steps[i - 1]!
                outcomes[r.index] = { _tag: "Applied", message: applied.steps[i]!, changed: applied.steps[i]!.status !== before.status }
              })
              updated.push(applied.message)
              changes.push(...applied.changes)
            }
            // Reports change the status and its history only: nothing else of the rows is written again.
            yield* messages.setStatuses(updated)
            const byId = yield* conversationsById(config.project_id, changes.map((m) => m.conversation_id))
            yield* outbox.appendMany(yield* statusEvents(config, changes, (m) => byId.get(m.conversation_id), now))
          }))
          return outcomes
        }
      )

      /** An outbound record waiting for its transaction. */
      interface PendingOutbound {
        readonly config: MessageConfigRecord
        readonly input: OutboundInput
        readonly waId: string | undefined
        readonly userId: string | undefined
        readonly messageId: string
        readonly nowMs: number
      }
      type OutboundRecorded = { readonly message: MessageRecord; readonly conversation: ConversationRecord }

      /**
       * Records outbound messages in one transaction: locks (message ids, then
       * contacts, then conversations), contacts and active conversations read
       * in one step each and the missing ones created, messages inserted,
       * conversations counted, status reports that overtook a send applied,
       * and every domain event appended at once.
       */
      const recordOutboundBatch = (batch: ReadonlyArray<PendingOutbound>) =>
        Effect.gen(function*() {
          const contactKey = (p: PendingOutbound) => `${p.config.project_id}:${p.waId ?? p.userId}`
          const result = yield* tx.withTransaction(Effect.gen(function*() {
            yield* locks.lockAll(batch.flatMap((p) =>
              p.input.network_id === undefined ? [] : [`message:${p.config.phone_number_id}:${p.input.network_id}`]
            ))
            const contactOf = new Map<string, ContactRecord>()
            const findByPhone = (pending: ReadonlyArray<PendingOutbound>) =>
              Effect.forEach(groupBy(pending.filter((p) => p.waId !== undefined), (p) => p.config.project_id), (group) => {
                const projectId = group[0]!.config.project_id
                return Effect.map(contacts.findByWaIds(projectId, [...new Set(group.map((p) => p.waId!))]), (found) => {
                  for (const c of found) contactOf.set(`${projectId}:${c.wa_id}`, c)
                })
              }, { discard: true })
            // A stored contact keeps its id and phone number: found ones need no lock. Missing ones are looked up
            // again under their locks (another writer may have just made them), then made.
            yield* findByPhone(batch)
            const missing = batch.filter((p) => !contactOf.has(contactKey(p)))
            if (missing.length > 0) {
              yield* locks.lockAll(missing.map((p) => `contact:${contactKey(p)}`))
              yield* findByPhone(missing)
              const created: Array<ContactRecord> = []
              for (const p of missing) {
                const key = contactKey(p)
                if (contactOf.has(key)) continue
                const byUser = p.userId === undefined ? Option.none() : yield* contacts.findByUserId(p.config.project_id, p.userId)
                if (Option.isSome(byUser)) {
                  contactOf.set(key, byUser.value)
                  continue
                }
                const contact = newContact(p.config.project_id, { waId: p.waId, userId: p.userId }, yield* ids.uuid, iso(p.nowMs))
                contactOf.set(key, contact)
                created.push(contact)
              }
              yield* contacts.insertMany(created)
            }

            const contactFor = (p: PendingOutbound) => contactOf.get(contactKey(p))!
            const pairKey = (msgConfigId: string, contactId: string) => `${msgConfigId}:${contactId}`
            yield* locks.lockAll(batch.map((p) => `conversation:${pairKey(p.config.id, contactFor(p).id)}`))
            const active = yield* conversations.findActiveMany(
              batch.map((p) => ({ msgConfigId: p.config.id, contactId: contactFor(p).id }))
            )
            const conversationOf = new Map(active.map((c) => [pairKey(c.msg_config_id, c.contact_id), c]))
            const opened: Array<ConversationRecord> = []
            const events: Array<DomainEvent> = []
            for (const p of batch) {
              const key = pairKey(p.config.id, contactFor(p).id)
              if (conversationOf.has(key)) continue
              const now = iso(p.nowMs)
              const conversation = newConversation(p.config, contactFor(p), yield* ids.uuid, now, now)
              conversationOf.set(key, conversation)
              opened.push(conversation)
              const payload = conversationEventPayload(p.config, conversation)
              events.push(yield* makeEvent(p.config.project_id, MSG_CONVERSATION_CREATED, payload, now))
            }
            yield* conversations.insertMany(opened)

            const records = batch.map((p) => {
              const { messaging_product: _product, type: _type, ...fields } = p.input.envelope
              const rendition = renderOutbound(p.input.envelope)
              const type = str(p.input.envelope["type"]) ?? "text"
              const contact = contactFor(p)
              const now = iso(p.nowMs)
              return {
                id: p.messageId,
                project_id: p.config.project_id,
                msg_config_id: p.config.id,
                phone_number_id: p.config.phone_number_id,
                conversation_id: conversationOf.get(pairKey(p.config.id, contact.id))!.id,
                contact_id: contact.id,
                network_id: p.input.network_id ?? null,
                direction: "outbound",
                type,
                timestamp: epochSeconds(p.nowMs),
                fields,
                status: "pending",
                processing_status: "completed",
                origin: p.input.origin ?? "api",
                ...renditionFields(type, rendition, contact, now),
                media: null
              } satisfies MessageRecord
            })
            const stored = yield* messages.insertMany(records)
            const touched = new Set<string>()
            for (let i = 0; i < batch.length; i++) {
              if (!stored[i]) continue
              const p = batch[i]!
              const key = pairKey(p.config.id, contactFor(p).id)
              const now = iso(p.nowMs)
              conversationOf.set(key, countMessage(conversationOf.get(key)!, records[i]!, contactFor(p), now, now))
              touched.add(key)
              const payload = conversationActivityPayload(records[i]!, now)
              events.push(yield* makeEvent(p.config.project_id, MSG_CONVERSATION_ACTIVITY, payload, now))
            }
            yield* conversations.updateMany([...touched].map((key) => conversationOf.get(key)!))

            // Reports that overtook their send move the new records now.
            const early = new Map<string, ReadonlyArray<unknown>>()
            const assigned = batch.filter((p, i) => stored[i] && p.input.network_id !== undefined)
            for (const group of groupBy(assigned, (p) => p.config.phone_number_id)) {
              const kept = yield* messages.statusEvents(group[0]!.config.phone_number_id, group.map((p) => p.input.network_id!))
              for (const p of group) {
                early.set(p.messageId, kept.filter((e) => e.network_id === p.input.network_id).map((e) => e.raw))
              }
            }
            const recorded = new Map<string, MessageRecord>()
            const moved: Array<MessageRecord> = []
            for (let i = 0; i < batch.length; i++) {
              if (!stored[i]) continue
              const p = batch[i]!
              const raws = early.get(p.messageId) ?? []
              const applied = advance(records[i]!, raws, iso(p.nowMs))
              recorded.set(p.messageId, applied.message)
              if (raws.length === 0) continue
              moved.push(applied.message)
              const conversation = conversationOf.get(pairKey(p.config.id, contactFor(p).id))
              events.push(...yield* statusEvents(p.config, applied.changes, () => conversation, iso(p.nowMs)))
            }
            yield* messages.setStatuses(moved)
            yield* outbox.appendMany(events)
            return {
              opened,
              outcomes: batch.map((p, i): Exit.Exit<OutboundRecorded, Unprocessable> =>
                stored[i]
                  ? Exit.succeed({
                    message: recorded.get(p.messageId)!,
                    conversation: conversationOf.get(pairKey(p.config.id, contactFor(p).id))!
                  })
                  : Exit.fail(unprocessable(`A message with id ${p.input.network_id} is already recorded`)))
            }
          }))
          // One timer per conversation, armed when it opens: a timer that fires early re-arms itself (MessagingJobs).
          yield* Effect.forEach(result.opened, arm, { discard: true })
          return result.outcomes
        })

      const submitOutbound = yield* GroupCommit.make<PendingOutbound, OutboundRecorded, Unprocessable>({
        max: BATCH_MAX,
        writers: BATCH_WRITERS,
        many: recordOutboundBatch,
        one: (p) => Effect.flatMap(recordOutboundBatch([p]), (outcomes) => outcomes[0]!)
      })

      const recordOutbound = Effect.fn("Messaging.recordOutbound")(function*(config: MessageConfigRecord, input: OutboundInput) {
        const envelope = input.envelope
        if (str(envelope["status"]) === "read") return yield* unprocessable("A mark-read envelope is not a message")
        const to = str(envelope["to"])
        const waId = to === undefined ? undefined : phoneDigits(to) || undefined
        const userId = waId === undefined ? str(envelope["recipient"]) : undefined
        if (waId === undefined && userId === undefined) return yield* unprocessable("The envelope names no recipient (to or recipient)")
        const messageId = input.id ?? (yield* ids.uuid)
        return yield* submitOutbound({ config, input, waId, userId, messageId, nowMs: yield* Clock.currentTimeMillis })
      })

      const findMessage = (projectId: string, id: string) =>
        messages.findById(projectId, id).pipe(
          Effect.flatMap(Option.match({ onNone: () => Effect.fail(notFound("Message")), onSome: Effect.succeed }))
        )

      /** A recorded send the network accepted, waiting for its transaction. */
      interface PendingAssignment {
        readonly config: MessageConfigRecord
        readonly message: MessageRecord
        readonly networkId: string
        readonly nowMs: number
      }

      /**
       * Gives recorded sends their network ids in one transaction: the
       * conversations that still point at them take the id, and status
       * reports that overtook a send apply now.
       */
      const assignBatch = (batch: ReadonlyArray<PendingAssignment>) =>
        tx.withTransaction(Effect.gen(function*() {
          yield* locks.lockAll(batch.map((p) => `message:${p.message.phone_number_id}:${p.networkId}`))
          const early = new Map<string, Array<unknown>>()
          for (const group of groupBy(batch, (p) => p.message.phone_number_id)) {
            for (const e of yield* messages.statusEvents(group[0]!.message.phone_number_id, group.map((p) => p.networkId))) {
              early.set(e.network_id, [...(early.get(e.network_id) ?? []), e.raw])
            }
          }
          const assigned = batch.map((p) => {
            const now = iso(p.nowMs)
            return { p, applied: advance({ ...p.message, network_id: p.networkId, updated_at: now }, early.get(p.networkId) ?? [], now) }
          })
          // Most sends only take their id; one a report overtook changed more and is written whole.
          const overtaken = (p: PendingAssignment) => early.has(p.networkId)
          yield* messages.setNetworkIds(assigned.filter(({ p }) => !overtaken(p)).map(({ p }) => ({
            projectId: p.message.project_id,
            id: p.message.id,
            networkId: p.networkId,
            at: iso(p.nowMs)
          })))
          yield* messages.updateMany(assigned.filter(({ p }) => overtaken(p)).map(({ applied }) => applied.message))
          yield* conversations.setLastMessageIds(batch.map((p) => ({
            projectId: p.message.project_id,
            id: p.message.conversation_id,
            timestamp: p.message.timestamp,
            networkId: p.networkId,
            at: iso(p.nowMs)
          })))
          // Reports that overtook a send changed its status: their events carry its conversation, read now.
          const changed = assigned.filter(({ applied }) => applied.changes.length > 0)
          const events: Array<DomainEvent> = []
          for (const group of groupBy(changed, ({ p }) => p.message.project_id)) {
            const byId = yield* conversationsById(group[0]!.p.message.project_id, group.map(({ p }) => p.message.conversation_id))
            for (const { applied, p } of group) {
              events.push(...yield* statusEvents(p.config, applied.changes, (m) => byId.get(m.conversation_id), iso(p.nowMs)))
            }
          }
          yield* outbox.appendMany(events)
          return assigned.map(({ applied }) => Exit.succeed(applied.message))
        }))

      const submitAssignment = yield* GroupCommit.make<PendingAssignment, MessageRecord, never>({
        max: BATCH_MAX,
        writers: BATCH_WRITERS,
        many: assignBatch,
        one: (p) => Effect.flatMap(assignBatch([p]), (exits) => exits[0]!)
      })

      const assignNetworkId = Effect.fn("Messaging.assignNetworkId")(
        function*(config: MessageConfigRecord, message: MessageRecord, networkId: string) {
          return yield* submitAssignment({ config, message, networkId, nowMs: yield* Clock.currentTimeMillis })
        }
      )

      /** The config a message was recorded on, for its domain events; a disconnected number reports nothing. */
      const configOf = (message: MessageRecord) => configs.findLiveById(message.msg_config_id)

      const failOutbound = Effect.fn("Messaging.failOutbound")(function*(projectId: string, messageId: string, error: Json) {
        const nowMs = yield* Clock.currentTimeMillis
        const now = iso(nowMs)
        return yield* tx.withTransaction(Effect.gen(function*() {
          const current = yield* findMessage(projectId, messageId)
          const config = yield* configOf(current)
          const raw = { id: current.network_id, status: "failed", timestamp: epochSeconds(nowMs), errors: [error] }
          if (Option.isNone(config)) return current
          return yield* applyToMessage(config.value, current, [raw], now)
        }))
      })

      const markInboundRead = Effect.fn("Messaging.markInboundRead")(function*(config: MessageConfigRecord, networkId: string) {
        const now = iso(yield* Clock.currentTimeMillis)
        return yield* tx.withTransaction(Effect.gen(function*() {
          const target = yield* messages.findByNetworkId(config.phone_number_id, networkId)
          if (Option.isNone(target) || target.value.direction !== "inbound") return 0
          let marked = 0
          let window: ListWindow = { mode: "cursor", limit: 100 }
          while (true) {
            const page: ListSlice<MessageRecord> = yield* messages.list(config.project_id, {
              conversation_id: target.value.conversation_id,
              direction: "inbound",
              status: "delivered",
              until: target.value.created_at
            }, window)
            for (const m of page.items) {
              yield* messages.update({ ...m, status: "read", updated_at: now })
              marked++
            }
            const last: MessageRecord | undefined = page.items[page.items.length - 1]
            if (!page.hasMore || last === undefined) return marked
            window = { mode: "cursor", limit: 100, after: { sortKey: last.created_at, id: last.id } }
          }
        }))
      })

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
        Effect.gen(function*() {
          const ended: ConversationRecord = { ...current, status: "ended", end_reason: reason, ended_at: now, updated_at: now }
          yield* conversations.update(ended)
          const config = yield* configs.findLiveById(current.msg_config_id)
          if (Option.isSome(config)) {
            yield* domainEvent(current.project_id, MSG_CONVERSATION_ENDED, conversationEventPayload(config.value, ended, reason), now)
          }
          return ended
        })

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
          const outcome = yield* tx.withTransaction(Effect.gen(function*() {
            const first = yield* conversations.findById(projectId, id)
            if (Option.isNone(first)) return yield* notFound("Conversation")
            yield* locks.lock(`conversation:${first.value.msg_config_id}:${first.value.contact_id}`)
            const found = yield* conversations.findById(projectId, id)
            if (Option.isNone(found)) return yield* notFound("Conversation")
            const current: ConversationRecord = change.metadata === undefined
              ? found.value
              : { ...found.value, metadata: change.metadata, updated_at: now }
            if (change.status === "ended" && current.status === "active") {
              return { conversation: yield* endLocked(current, "manual", now), reopened: false }
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
              return { conversation: reopened, reopened: true }
            }
            if (current !== found.value) yield* conversations.update(current)
            return { conversation: current, reopened: false }
          }))
          if (outcome.reopened) {
            yield* armInactivity(
              jobs,
              outcome.conversation,
              `inactivity:${outcome.conversation.id}:${Date.parse(outcome.conversation.last_active_at)}`
            ).pipe(Effect.catchCause((cause) => Effect.logWarning("Could not arm a conversation's inactivity timer", cause)))
          }
          return outcome.conversation
        }
      )

      const numberOf = (projectId: string, phoneNumberId: string) =>
        liveNumbers.byPhoneNumberId(phoneNumberId).pipe(
          Effect.map(Option.filter((config) => config.project_id === projectId && config.deleted_at === null))
        )

      const getConversation = (projectId: string, id: string) =>
        conversations.findById(projectId, id).pipe(
          Effect.flatMap(Option.match({ onNone: () => Effect.fail(notFound("Conversation")), onSome: Effect.succeed }))
        )

      const getMessage = Effect.fn("Messaging.getMessage")(function*(projectId: string, phoneNumberId: string, id: string) {
        const byNetwork = yield* messages.findByNetworkId(phoneNumberId, id)
        if (Option.isSome(byNetwork) && byNetwork.value.project_id === projectId) return byNetwork.value
        const byId = yield* messages.findById(projectId, id)
        if (Option.isSome(byId) && byId.value.phone_number_id === phoneNumberId) return byId.value
        return yield* notFound("Message")
      })

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
        return yield* notFound("Contact")
      })

      return Messaging.of({
        recordInbound,
        applyStatuses,
        recordOutbound,
        assignNetworkId,
        failOutbound,
        markInboundRead,
        endConversation: (projectId, conversationId, reason) => endConversation(projectId, conversationId, reason),
        endIfIdle: (projectId, conversationId) => endConversation(projectId, conversationId, "inactivity", true),
        listMessages: (projectId, filter, window) => messages.list(projectId, filter, window),
        getMessage,
        listConversations: (projectId, filter, window) => conversations.list(projectId, filter, window),
        getConversation,
        updateConversation,
        numberOf,
        listContacts: (projectId, filter, window) => contacts.list(projectId, filter, window),
        getContact
      })
    })
  )
}
