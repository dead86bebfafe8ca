/**
 * What recording inbound and outbound messages shares (decisions 2.10, 3.5):
 * the records a new contact, conversation and message start as, how a message
 * counts in its conversation, the status rank rule, and the domain events of
 * status changes.
 */
import { Effect, Option, Predicate, Schema } from "effect"
import { OptionalText } from "../shared/Json.ts"
import { PublicUrl } from "../shared/PublicUrl.ts"
import { ConversationsRepo, MessagesRepo } from "./MessagingRepo.ts"
import { CONVERSATION_IDLE_MS } from "./Queues.ts"
import { type DomainEvent, Outbox } from "../ports/Outbox.ts"
import { DomainEventInterest } from "../outbox/Interest.ts"
import { Ids } from "../shared/Ids.ts"
import type { MessageConfigRecord } from "./numbers/MessageConfig.ts"
import type { Rendition } from "./Content.ts"
import { conversationEventPayload, messageEventPayload, MSG_CONVERSATION_ENDED, msgMessageStatusEvent } from "./DomainEvents.ts"
import {
  type ContactRecord,
  type ConversationEndReason,
  type ConversationRecord,
  MEDIA_TYPES,
  type MessageRecord,
  type MessageStatus
} from "./Message.ts"

export type Json = Record<string, unknown>

/** What recording reads of a network message object, each field absent when empty or not a string. */
export const InboundMessageTexts = Schema.Struct({
  id: OptionalText,
  type: OptionalText,
  from: OptionalText,
  from_user_id: OptionalText,
  from_parent_user_id: OptionalText,
  timestamp: OptionalText
})
export const inboundMessageTexts = Schema.decodeUnknownSync(InboundMessageTexts)
/** What recording reads of a network status object. */
export const StatusTexts = Schema.Struct({ id: OptionalText, status: OptionalText, timestamp: OptionalText })
export const statusTexts = Schema.decodeUnknownSync(StatusTexts)
/** What recording and sending read of an envelope Parley sends (the rest goes to the network as it is). */
export const EnvelopeTexts = Schema.Struct({
  type: OptionalText,
  to: OptionalText,
  recipient: OptionalText,
  status: OptionalText,
  /** A mark-read's. */
  message_id: OptionalText
})
const decodeEnvelopeTexts = Schema.decodeUnknownSync(EnvelopeTexts)
// A send's envelope is read at every step of its way (the proxy, `Outbound`, the recording): decoded once (~5 µs each
// time otherwise). An envelope is not changed once made.
const envelopesRead = new WeakMap<object, typeof EnvelopeTexts.Type>()
export const envelopeTexts = (envelope: object): typeof EnvelopeTexts.Type => {
  let texts = envelopesRead.get(envelope)
  if (texts === undefined) {
    texts = decodeEnvelopeTexts(envelope)
    envelopesRead.set(envelope, texts)
  }
  return texts
}

/** A status as the network reports it, in rank order (decisions 3.5); `played` counts as `read`. */
const RANK: Readonly<Record<string, number>> = { pending: 0, sent: 1, delivered: 2, read: 3 }

/** The domain event type of a message's status change. */
const statusEventType = (m: MessageRecord) => msgMessageStatusEvent(m.status as Exclude<MessageStatus, "pending">)

/** The status a report moves a message to, or undefined when it changes nothing (decisions 3.5). */
export const nextStatus = (current: MessageStatus, reported: string): MessageStatus | undefined => {
  const status = reported === "played" ? "read" : reported
  if (status === "failed") return current === "delivered" || current === "read" || current === "failed" ? undefined : "failed"
  if (status !== "sent" && status !== "delivered" && status !== "read") return undefined
  if (current === "failed") return status
  return RANK[status]! > RANK[current]! ? status : undefined
}

export const epochSeconds = (ms: number) => String(Math.floor(ms / 1000))
export const iso = (ms: number) => new Date(ms).toISOString()
export const later = (a: string | null, b: string) => (a === null || Date.parse(b) > Date.parse(a) ? b : a)

export interface Identity {
  readonly waId: string | undefined
  readonly userId: string | undefined
  readonly parentUserId?: string | undefined
  readonly username?: string | undefined
  readonly name?: string | undefined
}

export const newContact = (projectId: string, who: Identity, id: string, now: string): ContactRecord => ({
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
export const newConversation = (
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
export const renditionFields = (type: string, rendition: Rendition, contact: ContactRecord, now: string) => ({
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

/** The conversation after one more message. A late (older) message does not replace the latest one. */
export const countMessage = (conversation: ConversationRecord, message: MessageRecord, contact: ContactRecord, activeAt: string, now: string) => {
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

/**
 * A message after raw status objects, in order: each is appended to
 * `ext.statuses`; `steps` is the message after each one, `changes` the
 * steps that moved `ext.status` of an outbound message.
 */
export const advance = (message: MessageRecord, raws: ReadonlyArray<unknown>, now: string) => {
  let current = message
  const steps: Array<MessageRecord> = []
  const changes: Array<MessageRecord> = []
  for (const raw of raws) {
    const reported = Predicate.isObject(raw) ? statusTexts(raw).status ?? "" : ""
    const next = current.direction === "outbound" ? nextStatus(current.status, reported) : undefined
    current = { ...current, statuses: [...current.statuses, raw], status: next ?? current.status, updated_at: now }
    steps.push(current)
    if (next !== undefined) changes.push(current)
  }
  return { message: current, steps, changes }
}

/**
 * Whether an active conversation has been silent 24 hours by `activeAt` (decisions 3.5): it has ended then, whether or
 * not the sweep (every minute) has reached it, so a message of that moment opens a new one.
 */
export const silentBy = (conversation: ConversationRecord, activeAt: string) =>
  Date.parse(conversation.last_active_at) + CONVERSATION_IDLE_MS <= Date.parse(activeAt)

/** The effects both directions of recording share, over the stores they write. */
export const makeRecording = Effect.gen(function*() {
  const conversations = yield* ConversationsRepo
  const messages = yield* MessagesRepo
  const outbox = yield* Outbox
  const ids = yield* Ids
  const publicUrl = yield* PublicUrl
  // Messaging built alone (its tests) has no registry of interests: then every status event is built.
  const interest = yield* Effect.serviceOption(DomainEventInterest)

  const makeEvent = (projectId: string, type: string, payload: unknown, at: string) =>
    Effect.map(ids.uuid, (id): DomainEvent => ({ id, project_id: projectId, type, payload, created_at: at }))
  const domainEvent = (projectId: string, type: string, payload: unknown, at: string) =>
    Effect.flatMap(makeEvent(projectId, type, payload, at), outbox.append)

  /**
   * Ends an active conversation read under its lock, inside the caller's transaction: the record, and
   * `msg.conversation.ended` when its number is known (`config`).
   */
  const end = (
    current: ConversationRecord,
    reason: ConversationEndReason,
    now: string,
    config: MessageConfigRecord | undefined
  ) =>
    Effect.gen(function*() {
      const ended: ConversationRecord = { ...current, status: "ended", end_reason: reason, ended_at: now, updated_at: now }
      yield* conversations.update(ended)
      if (config !== undefined) {
        yield* domainEvent(current.project_id, MSG_CONVERSATION_ENDED, conversationEventPayload(config, ended, reason), now)
      }
      return ended
    })

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
        statusEventType(changed),
        messageEventPayload(publicUrl, config, changed, conversation, false),
        now
      ))

  /**
   * The changes whose `msg.message.<status>` event anyone may want (`DomainEventInterest.mayWant`, once per status):
   * the outbox would not write the others, so neither their payloads are built nor their conversations read. Most of
   * a broadcast's reports are such: a payload and its conversation's row cost ~20 KB of a send's allocation.
   */
  const wantedChanges = (config: MessageConfigRecord, changes: ReadonlyArray<MessageRecord>) =>
    Effect.gen(function*() {
      if (changes.length === 0 || Option.isNone(interest)) return changes
      const scope = { projectId: config.project_id, phoneNumberId: config.phone_number_id }
      const answers = new Map<string, boolean>()
      for (const m of changes) {
        if (!answers.has(m.status)) answers.set(m.status, yield* interest.value.mayWant(statusEventType(m), scope))
      }
      return changes.filter((m) => answers.get(m.status) === true)
    })

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
      const changes = yield* wantedChanges(config, applied.changes)
      const byId = yield* conversationsById(message.project_id, changes.length > 0 ? [message.conversation_id] : [])
      yield* outbox.appendMany(yield* statusEvents(config, changes, (m) => byId.get(m.conversation_id), now))
      return applied.message
    })

  return { makeEvent, domainEvent, end, statusEvents, wantedChanges, conversationsById, applyToMessage }
})

export type Recording = Effect.Success<typeof makeRecording>
