/**
 * Recording what the network reports (decisions 2.10, 3.5, 10.1 step 1):
 * inbound messages once per network id, with their contact found or created
 * by phone number or business-scoped id and their conversation found or
 * opened; status reports applied by the rank rule; inbound messages marked
 * read. Every change that webhooks report writes its domain event in the same
 * transaction.
 */
import { Clock, Effect, Exit, Option } from "effect"
import { InboundRouter, type RouteLook, type Routed, type Router } from "./InboundRouter.ts"
import { MessagingNetwork, type NetworkAccess, type NetworkAnswer, type NetworkError } from "../network/MessagingNetwork.ts"
import type { SuccessAnswer } from "../network/NetworkObjects.ts"
import { keywordText, OptOuts } from "../guardrails/OptOuts.ts"
import { createHash } from "node:crypto"
import { PublicUrl } from "../shared/PublicUrl.ts"
import { ContactsRepo, ConversationsRepo, type InboundReadMark, MediaRepo, MessagesRepo, MessagingLocks } from "./MessagingRepo.ts"
import { Outbox } from "../ports/Outbox.ts"
import { Transactor } from "../ports/Transactor.ts"
import { groupBy } from "../shared/Collections.ts"
import * as GroupCommit from "../shared/GroupCommit.ts"
import { Ids } from "../shared/Ids.ts"
import type { MessageConfigRecord } from "./numbers/MessageConfig.ts"
import { renderInbound } from "./Content.ts"
import {
  conversationEventPayload,
  messageEventPayload,
  conversationActivityPayload,
  MSG_CONVERSATION_ACTIVITY,
  MSG_CONVERSATION_CREATED,
  MSG_MESSAGE_RECEIVED
} from "./DomainEvents.ts"
import {
  type ContactRecord,
  type ConversationRecord,
  mediaUrl,
  type MessageRecord,
  type StatusEventRecord,
  type StoredMedia
} from "./Message.ts"
import type { WebhookContact } from "../network/Webhook.ts"
import {
  advance,
  countMessage,
  epochSeconds,
  type Identity,
  type InboundMessageTexts,
  inboundMessageTexts,
  iso,
  type Json,
  newContact,
  newConversation,
  type Recording,
  renditionFields,
  silentBy,
  statusTexts
} from "./Recording.ts"
import { observeRecording } from "./MessagingTelemetry.ts"

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
  /** What recording reads of it, when ingestion decoded it already (decoded here otherwise). */
  readonly texts?: typeof InboundMessageTexts.Type | undefined
  /** The `contacts[]` member of the change that names the sender, if any. */
  readonly contact?: WebhookContact | undefined
  readonly media?: FetchedMedia | undefined
}

export type InboundOutcome =
  | { readonly _tag: "Recorded"; readonly message: MessageRecord; readonly conversation: ConversationRecord }
  | { readonly _tag: "Duplicate" }
  /** Neither a phone number nor a business-scoped id names the sender, or the message has no id. */
  | { readonly _tag: "Unaddressable" }

export type StatusOutcome =
  | { readonly _tag: "Applied"; readonly message: MessageRecord; readonly changed: boolean }
  | { readonly _tag: "Duplicate" }
  /** Kept: it applies when the message is recorded (a report that overtook the send). */
  | { readonly _tag: "Pending" }

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

export interface InboundRecording {
  /** One message in a transaction of its own, routed in it (`InboundRouter`). */
  readonly recordInbound: (config: MessageConfigRecord, input: InboundInput) => Effect.Effect<InboundOutcome>
  /**
   * Messages of one number (oldest first) in one transaction, after `before` (ingestion's acknowledgement) and
   * routed in it; then what routing does once it committed. Fails, and records nothing, when routing fails.
   */
  readonly recordInboundAll: (
    config: MessageConfigRecord,
    inputs: ReadonlyArray<InboundInput>,
    before?: Effect.Effect<void, unknown>
  ) => Effect.Effect<ReadonlyArray<InboundOutcome>, unknown>
  /**
   * Applies network status objects (`{ id, status, timestamp, errors?, ... }`)
   * of the number's messages, in order, in one transaction after `before` (ingestion's acknowledgement); one
   * outcome each. Fails, and applies nothing, only when `before` fails.
   */
  readonly applyStatuses: <E = never>(
    config: MessageConfigRecord,
    statuses: ReadonlyArray<Json>,
    before?: Effect.Effect<void, E>
  ) => Effect.Effect<ReadonlyArray<StatusOutcome>, E>
  /**
   * The one mark-read (the proxy's and read mode's): the network's mark-read of an inbound message (with the typing
   * indicator when asked), then, when the network accepted it, the message and the earlier inbound messages of its
   * conversation stored `read` (no webhook, decisions 6.1). Answers the network's answer.
   */
  readonly markRead: (
    config: MessageConfigRecord,
    access: NetworkAccess,
    input: { readonly messageId: string; readonly typingIndicator?: boolean | undefined }
  ) => Effect.Effect<NetworkAnswer<SuccessAnswer>, NetworkError>
}

/** The most mark-reads stored in one statement. */
const READ_MARKS_MAX = 64

/** Nothing routed: every message stays as recorded. */
const unrouted: Routed = { after: Effect.void, settled: new Map() }

export const makeInboundRecording = Effect.fnUntraced(function*(recording: Recording) {
  const contacts = yield* ContactsRepo
  const conversations = yield* ConversationsRepo
  const messages = yield* MessagesRepo
  const media = yield* MediaRepo
  const locks = yield* MessagingLocks
  const outbox = yield* Outbox
  const tx = yield* Transactor
  const ids = yield* Ids
  const publicUrl = yield* PublicUrl
  const routers = yield* InboundRouter
  const network = yield* MessagingNetwork
  const { conversationsById, domainEvent, end, statusEvents, wantedChanges } = recording
  const optOuts = yield* OptOuts

  /** The contact by phone number, then by business-scoped id (read only, one statement). */
  const lookContact = (projectId: string, who: Identity) =>
    Effect.map(contacts.findByIdentity(projectId, who.waId, who.userId), ({ byPhone, byUser }) => {
      const known = Option.isSome(byPhone) && (who.userId === undefined || byPhone.value.business_scoped_user_id === who.userId)
      return { byPhone, byUser: known ? Option.none<ContactRecord>() : byUser }
    })

  /** The contact `lookContact` found, with what it learnt filled in; created when there was none. */
  const resolveContact = (
    projectId: string,
    who: Identity,
    { byPhone, byUser }: Effect.Success<ReturnType<typeof lookContact>>,
    now: string
  ) =>
    Effect.gen(function*() {
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
      if (Option.isSome(active)) {
        if (!silentBy(active.value, activeAt)) return { conversation: active.value, created: false }
        yield* end(active.value, "inactivity", now, config)
      }
      const conversation = newConversation(config, contact, yield* ids.uuid, activeAt, now)
      yield* conversations.insert(conversation)
      yield* domainEvent(config.project_id, MSG_CONVERSATION_CREATED, conversationEventPayload(config, conversation), now)
      return { conversation, created: true }
    })

  /**
   * One message, inside the caller's transaction, all but its row: the caller writes it once routing said where it
   * ended up (`InboundRouter`). `recorded`: the network ids recorded before it in the transaction (a POST that
   * repeats one: its rows are not written yet, so the duplicate check cannot see them). Its opt-out keyword check (a
   * read of the guardrail settings for any short text) joins `checks`: the caller runs them beside routing, so their
   * reads share its round trips. `ahead`: the router, and the contacts whose route it looked at already; it looks at
   * this message's contact beside the conversation's lookup (one round trip less).
   */
  const recordIn = Effect.fnUntraced(function*(
    config: MessageConfigRecord,
    input: InboundInput,
    checks: Array<Effect.Effect<void>>,
    recorded: Set<string>,
    ahead: { readonly router: Router; readonly looks: Map<string, RouteLook> } | undefined
  ) {
    const m = input.message
    const texts = input.texts ?? inboundMessageTexts(m)
    const networkId = texts.id
    const type = texts.type ?? "unknown"
    // The contact is decoded already; an empty string reads as absent, as in the message.
    const who: Identity = {
      waId: texts.from ?? (input.contact?.wa_id || undefined),
      userId: texts.from_user_id ?? (input.contact?.user_id || undefined),
      parentUserId: texts.from_parent_user_id ?? (input.contact?.parent_user_id || undefined),
      username: input.contact?.profile?.username || undefined,
      name: input.contact?.profile?.name || undefined
    }
    if (networkId === undefined || (who.waId === undefined && who.userId === undefined)) {
      return { _tag: "Unaddressable" } as InboundOutcome
    }
    if (recorded.has(networkId)) return { _tag: "Duplicate" } as InboundOutcome
    const nowMs = yield* Clock.currentTimeMillis
    const now = iso(nowMs)
    const activeAt = iso(activityTime(texts.timestamp, nowMs))
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

    return yield* Effect.gen(function*() {
      // The message's lock and its sender's in one statement: only recording takes an inbound message's key, and always
      // with its sender's, so one set taken in the store's order cycles with nobody (`MessagingLocks.lockAll`).
      yield* locks.lockAll([`message:${config.phone_number_id}:${networkId}`, `contact:${config.project_id}:${who.waId ?? who.userId}`])
      // The contact's look goes out with the duplicate check (one round trip); nothing is written before it.
      const [duplicate, looked] = yield* Effect.all([
        messages.findByNetworkId(config.phone_number_id, networkId),
        lookContact(config.project_id, who)
      ], { concurrency: 2 })
      if (Option.isSome(duplicate)) return { _tag: "Duplicate" } as InboundOutcome
      recorded.add(networkId)
      const contact = yield* resolveContact(config.project_id, who, looked, now)
      const looking = ahead !== undefined && config.inbound_processing_enabled && !ahead.looks.has(contact.id)
        ? Effect.map(ahead.router.look(config, contact.id), (look) => void ahead.looks.set(contact.id, look))
        : Effect.void
      const [{ conversation, created }] = yield* Effect.all([openConversation(config, contact, activeAt, now), looking], { concurrency: 2 })
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
        timestamp: texts.timestamp ?? epochSeconds(nowMs),
        fields: {
          ...rest,
          ...(contact.business_scoped_user_id !== null ? { business_scoped_user_id: contact.business_scoped_user_id } : {}),
          ...(contact.parent_business_scoped_user_id !== null
            ? { parent_business_scoped_user_id: contact.parent_business_scoped_user_id }
            : {}),
          ...(contact.username !== null ? { username: contact.username } : {})
        },
        status: "delivered",
        // Routing (executions/Routing.ts) settles a pending message once it has been debounced and routed (10.1).
        processing_status: config.inbound_processing_enabled ? "pending" : "blocked",
        origin: null,
        ...renditionFields(type, rendition, contact, now),
        media: stored === undefined
          ? null
          : { id: stored.id, filename: stored.filename, content_type: stored.content_type, byte_size: stored.byte_size }
      }
      // An opt-out or resubscribe keyword (guardrails) is recorded with the message that says it.
      const keyword = keywordText(type, message.content)
      const recipientKey = contact.wa_id ?? contact.business_scoped_user_id
      if (keyword !== undefined && recipientKey !== null) {
        checks.push(optOuts.onInbound({ projectId: config.project_id, msgConfigId: config.id }, recipientKey, keyword))
      }
      const counted = countMessage(conversation, message, contact, activeAt, now)
      yield* conversations.update(counted)
      yield* domainEvent(
        config.project_id,
        MSG_MESSAGE_RECEIVED,
        messageEventPayload(publicUrl, config, message, counted, created),
        now
      )
      yield* domainEvent(config.project_id, MSG_CONVERSATION_ACTIVITY, conversationActivityPayload(message, activeAt), now)
      return { _tag: "Recorded", message, conversation: counted } as InboundOutcome
    })
  })

  const recordInboundAll = Effect.fn("Messaging.recordInboundAll")(function*(
    config: MessageConfigRecord,
    inputs: ReadonlyArray<InboundInput>,
    before?: Effect.Effect<void, unknown>
  ) {
    const router = yield* routers.current
    const { after, outcomes } = yield* tx.withTransaction(Effect.gen(function*() {
      if (before !== undefined) yield* before
      const outcomes: Array<InboundOutcome> = []
      const checks: Array<Effect.Effect<void>> = []
      const recorded = new Set<string>()
      // A POST of one message (the common case) has its route looked at ahead; in a batch, the route locks are taken
      // after every message's, in the contacts' order, as before.
      const looks = new Map<string, RouteLook>()
      const ahead = Option.isSome(router) && inputs.length === 1 ? { router: router.value, looks } : undefined
      for (const input of inputs) outcomes.push(yield* recordIn(config, input, checks, recorded, ahead))
      // Recorded `blocked` (the number processes no inbound messages): nothing to route.
      const pending = outcomes.flatMap((o) => o._tag === "Recorded" && o.message.processing_status === "pending" ? [o.message] : [])
      const routing = Option.isSome(router) && pending.length > 0 ? router.value.route(config, pending, looks) : Effect.succeed(unrouted)
      // Opt-out keywords and routing touch different rows: side by side, their statements share round trips.
      const [{ after, settled }] = yield* Effect.all([routing, Effect.all(checks, { discard: true })], { concurrency: 2 })
      const written = outcomes.map((o): InboundOutcome => {
        const status = o._tag === "Recorded" ? settled.get(o.message.id) : undefined
        return o._tag === "Recorded" && status !== undefined ? { ...o, message: { ...o.message, processing_status: status } } : o
      })
      // Their network ids were found free under their locks: the inserts go out with the next statement (the commit).
      for (const o of written) if (o._tag === "Recorded") yield* messages.insertNew(o.message)
      return { after, outcomes: written }
    }))
    yield* after
    return outcomes
  })

  const recordInbound = Effect.fn("Messaging.recordInbound")(function*(config: MessageConfigRecord, input: InboundInput) {
    return (yield* Effect.orDie(recordInboundAll(config, [input])))[0]!
  })

  const applyStatuses = Effect.fn("Messaging.applyStatuses")(
    function*<E = never>(config: MessageConfigRecord, statuses: ReadonlyArray<Json>, before?: Effect.Effect<void, E>) {
      const now = iso(yield* Clock.currentTimeMillis)
      const reports = statuses.flatMap((raw, index) => {
        const texts = statusTexts(raw)
        const networkId = texts.id
        const status = texts.status
        if (networkId === undefined || status === undefined) return []
        const event: StatusEventRecord = {
          phone_number_id: config.phone_number_id,
          network_id: networkId,
          status,
          timestamp: texts.timestamp ?? "",
          raw,
          received_at: now
        }
        return [{ index, raw, event }]
      })
      const outcomes: Array<StatusOutcome> = statuses.map(() => ({ _tag: "Duplicate" }))
      if (reports.length === 0) {
        if (before !== undefined) yield* before
        return outcomes
      }
      yield* tx.withTransaction(Effect.gen(function*() {
        if (before !== undefined) yield* before
        yield* locks.lockAll(reports.map((r) => `message:${config.phone_number_id}:${r.event.network_id}`))
        // The reports kept and their messages read in one round trip (a repeated report's message is read for nothing).
        const [fresh, found] = yield* Effect.all([
          messages.recordStatuses(reports.map((r) => r.event)),
          messages.findByNetworkIds(config.phone_number_id, [...new Set(reports.map((r) => r.event.network_id))])
        ], { concurrency: 2 })
        const kept = reports.filter((_, i) => fresh[i])
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
        const wanted = yield* wantedChanges(config, changes)
        const byId = yield* conversationsById(config.project_id, wanted.map((m) => m.conversation_id))
        yield* outbox.appendMany(yield* statusEvents(config, wanted, (m) => byId.get(m.conversation_id), now))
      }))
      return outcomes
    }
  )

  // Read mode marks every routed message: concurrent marks share one statement (and its commit) instead of one each.
  const submitReadMark = yield* GroupCommit.make<InboundReadMark, void, never>({
    max: READ_MARKS_MAX,
    many: (marks) => Effect.as(messages.markInboundRead(marks), marks.map(() => Exit.void)),
    one: (mark) => Effect.asVoid(messages.markInboundRead([mark]))
  })

  const markRead = Effect.fn("Messaging.markRead")(function*(
    config: MessageConfigRecord,
    access: NetworkAccess,
    input: { readonly messageId: string; readonly typingIndicator?: boolean | undefined }
  ) {
    const answer = yield* network.markRead(access, config.phone_number_id, input)
    if (answer.status >= 200 && answer.status < 300) {
      yield* submitReadMark({
        projectId: config.project_id,
        phoneNumberId: config.phone_number_id,
        networkId: input.messageId,
        at: iso(yield* Clock.currentTimeMillis)
      })
    }
    return answer
  })

  return observeRecording({ recordInbound, recordInboundAll, applyStatuses, markRead })
})
