/**
 * Recording what Parley sends (decisions 2.10, 4.10): the message recorded
 * before it goes out (`pending`, linked to its conversation, which opens when
 * there is none), then given its network id or marked `failed`. Records and
 * ids of concurrent sends share their transactions (`GroupCommit`).
 */
import { Clock, Data, Effect, Exit, Option } from "effect"
import { MessageConfigsRepo } from "./numbers/MessageConfigsRepo.ts"
import { ContactsRepo, ConversationsRepo, MessagesRepo, MessagingLocks } from "./MessagingRepo.ts"
import { type DomainEvent, Outbox } from "../ports/Outbox.ts"
import { Transactor } from "../ports/Transactor.ts"
import { type NotFound, notFound, type Unprocessable, unprocessable } from "../shared/ApiError.ts"
import { groupBy } from "../shared/Collections.ts"
import * as GroupCommit from "../shared/GroupCommit.ts"
import { Ids } from "../shared/Ids.ts"
import type { MessageConfigRecord } from "./numbers/MessageConfig.ts"
import { phoneDigits } from "./numbers/MessageConfig.ts"
import { renderOutbound } from "./Content.ts"
import type { Withheld } from "../guardrails/Guardrail.ts"
import {
  conversationEventPayload,
  conversationActivityPayload,
  MSG_CONVERSATION_ACTIVITY,
  MSG_CONVERSATION_CREATED
} from "./DomainEvents.ts"
import { type ContactRecord, type ConversationRecord, type MessageOrigin, type MessageRecord, type SentBy } from "./Message.ts"
import {
  advance,
  countMessage,
  envelopeTexts,
  epochSeconds,
  iso,
  type Json,
  newContact,
  newConversation,
  type Recording,
  renditionFields,
  silentBy
} from "./Recording.ts"

export interface OutboundInput {
  /** The send envelope as it goes to the network (parsed). */
  readonly envelope: Json
  /** The Parley id to record the message under; by default a new one. */
  readonly id?: string | undefined
  /** Known when the network already answered. */
  readonly network_id?: string | undefined
  readonly origin?: MessageOrigin | undefined
  /** Kept in `ext_data.sent_by`. */
  readonly sent_by?: SentBy | undefined
  /**
   * The contact the caller expects the recipient to be (a run knows its own): its conversation is read beside the
   * contact instead of after it, one round trip fewer. A wrong guess costs a retry, never a wrong record.
   */
  readonly contact_id?: string | undefined
}

const withSentBy = <A extends { readonly ext_data: Readonly<Record<string, unknown>> }>(fields: A, sentBy: SentBy | undefined): A =>
  sentBy === undefined ? fields : { ...fields, ext_data: { ...fields.ext_data, sent_by: sentBy } }

/** The guardrails held a send back in its recording's transaction: nothing was recorded. */
export class SendWithheld extends Data.TaggedError("SendWithheld")<{ readonly withheld: Withheld }> {}

/** The guardrails' check of a send (`SendPolicy.check`): None when it may go. */
export type SendCheck = Effect.Effect<Option.Option<Withheld>>

/** The most outbound records or network ids written in one transaction. */
const BATCH_MAX = 256
/** Such transactions running at once: their round trips overlap. */
const BATCH_WRITERS = 4
/**
 * And one more for sends inside conversations only (issue 30 §2): those go before a broadcast's records and ids, so a
 * reply during a broadcast waits for neither its queue nor its batches (a batch of new recipients takes far longer).
 */
const URGENT_WRITERS = 1
/**
 * Writers that record a broadcast's sends (or give them their ids) at once. A broadcast's sends come steadily, paced:
 * with every writer free to take them, each took a send or a few (5 a transaction at 200 msg/s), paying the batch's
 * locks and reads for those few (issue 30 §2). One at a time, the batch is what came during the last one.
 */
const BULK_WRITERS = 1
/** A broadcast's sends are the bulk; every other send (a run's, the proxy's, an inbox user's) goes first. */
const priorityOf = (origin: MessageOrigin | null | undefined) => origin === "broadcast" ? undefined : "urgent" as const
/** Recipients whose contact a process remembers, the least recently sent to forgotten first (memory, not correctness). */
const KNOWN_CONTACTS_MAX = 10_000

export interface OutboundRecording {
  /**
   * Records a message Parley sends (`ext.status` pending, `origin` as given, `api` by default) and
   * links it to its conversation. Concurrent records share one transaction.
   */
  readonly recordOutbound: (
    config: MessageConfigRecord,
    input: OutboundInput
  ) => Effect.Effect<{ readonly message: MessageRecord; readonly conversation: ConversationRecord }, Unprocessable>
  /**
   * `recordOutbound` of a send the guardrails check first: `check` runs in the recording's transaction, beside its
   * first reads (one round trip fewer than checking before it), and a send it withholds records nothing and fails
   * with `SendWithheld`. An envelope that cannot be recorded is checked alone, so the guardrails still answer first.
   */
  readonly recordChecked: (
    config: MessageConfigRecord,
    input: OutboundInput,
    check: SendCheck
  ) => Effect.Effect<{ readonly message: MessageRecord; readonly conversation: ConversationRecord }, Unprocessable | SendWithheld>
  /**
   * The network accepted a recorded send (`recordOutbound`'s message): its id,
   * and any status reports that came first. Concurrent assignments share one
   * transaction.
   */
  readonly assignNetworkId: (config: MessageConfigRecord, message: MessageRecord, networkId: string) => Effect.Effect<MessageRecord>
  /** The network refused a recorded send: `failed`, with the error as its status entry. */
  readonly failOutbound: (projectId: string, messageId: string, error: Json) => Effect.Effect<MessageRecord, NotFound>
}

export const makeOutboundRecording = Effect.fnUntraced(function*(recording: Recording) {
  const configs = yield* MessageConfigsRepo
  const contacts = yield* ContactsRepo
  const conversations = yield* ConversationsRepo
  const messages = yield* MessagesRepo
  const locks = yield* MessagingLocks
  const outbox = yield* Outbox
  const tx = yield* Transactor
  const ids = yield* Ids
  const { applyToMessage, conversationsById, end, makeEvent, statusEvents } = recording

  /** A send no guardrail checks: nothing withholds it. */
  const unchecked: SendCheck = Effect.succeed(Option.none())

  /** A batch recorded on its callers' guesses of their contacts found another contact: it is recorded again without. */
  class ContactGuessMissed extends Data.TaggedError("ContactGuessMissed") {}

  /** An outbound record waiting for its transaction. */
  interface PendingOutbound {
    readonly config: MessageConfigRecord
    readonly input: OutboundInput
    readonly waId: string | undefined
    readonly userId: string | undefined
    readonly messageId: string
    readonly nowMs: number
    readonly check: SendCheck | undefined
  }
  type OutboundRecorded = { readonly message: MessageRecord; readonly conversation: ConversationRecord }

  /**
   * Records outbound messages in one transaction: locks (message ids, then
   * contacts, then conversations), contacts and active conversations read
   * in one step each and the missing ones created, messages inserted,
   * conversations counted, status reports that overtook a send applied,
   * and every domain event appended at once.
   */
  const recordOutboundBatch = (batch: ReadonlyArray<PendingOutbound>) => {
    // Nothing guessed, no guess can miss.
    const plain = Effect.orDie(recordBatch(batch, false))
    // With every caller's contact known (a run's send to its contact), contacts and conversations are read in one step.
    return batch.every((p) => p.input.contact_id !== undefined && p.waId !== undefined)
      ? recordBatch(batch, true).pipe(Effect.catchTag("ContactGuessMissed", () => plain))
      : plain
  }

  const recordBatch = (all: ReadonlyArray<PendingOutbound>, guessed: boolean) =>
    Effect.gen(function*() {
      const contactKey = (p: PendingOutbound) => `${p.config.project_id}:${p.waId ?? p.userId}`
      return yield* tx.withTransaction(Effect.gen(function*() {
        yield* locks.lockAll(all.flatMap((p) =>
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
        const pairKey = (msgConfigId: string, contactId: string) => `${msgConfigId}:${contactId}`
        // The sends' guardrail checks go out with the first reads (their statements share its round trip); a send they
        // withhold is recorded not at all, as if checked before the transaction.
        const checks = Effect.forEach(all, (p) => p.check ?? unchecked, { concurrency: "unbounded" })
        // Guessed contacts: their conversations locked and read beside the contacts (the same round trip); a contact
        // found to differ from its guess (or missing) undoes the transaction, and the batch is recorded without guesses.
        const [guessedActive, verdicts] = guessed
          ? yield* Effect.gen(function*() {
            yield* locks.lockAll(all.map((p) => `conversation:${pairKey(p.config.id, p.input.contact_id!)}`))
            const [, found, verdicts] = yield* Effect.all([
              findByPhone(all),
              conversations.findActiveMany(all.map((p) => ({ msgConfigId: p.config.id, contactId: p.input.contact_id! }))),
              checks
            ], { concurrency: "unbounded" })
            if (all.some((p) => contactOf.get(contactKey(p))?.id !== p.input.contact_id)) return yield* new ContactGuessMissed()
            return [found, verdicts] as const
          })
          : [undefined, (yield* Effect.all([
            // Every contact is read under its lock (the lock goes out with the read: one round trip), so a missing one
            // is made at once: no other writer can be making it. Reading first unlocked and the missing ones again under
            // their locks cost a broadcast to new recipients a round trip more per transaction.
            Effect.andThen(locks.lockAll(all.map((p) => `contact:${contactKey(p)}`)), findByPhone(all)),
            checks
          ], { concurrency: "unbounded" }))[1]] as const
        const batch = all.filter((_, i) => Option.isNone(verdicts[i]!))
        const missing = batch.filter((p) => !contactOf.has(contactKey(p)))
        const created: Array<ContactRecord> = []
        if (missing.length > 0) {
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
        // A contact made by this transaction has no conversation, and no other writer can know its id before the
        // commit: only stored contacts' conversations are locked and read (none, for a broadcast to new recipients).
        const madeHere = new Set(created.map((c) => c.id))
        const known = batch.filter((p) => !madeHere.has(contactFor(p).id))
        const active = guessedActive ?? (known.length === 0 ? [] : yield* Effect.andThen(
          locks.lockAll(known.map((p) => `conversation:${pairKey(p.config.id, contactFor(p).id)}`)),
          conversations.findActiveMany(known.map((p) => ({ msgConfigId: p.config.id, contactId: contactFor(p).id })))
        ))
        const conversationOf = new Map(active.map((c) => [pairKey(c.msg_config_id, c.contact_id), c]))
        const opened: Array<ConversationRecord> = []
        const events: Array<DomainEvent> = []
        for (const p of batch) {
          const key = pairKey(p.config.id, contactFor(p).id)
          const now = iso(p.nowMs)
          const current = conversationOf.get(key)
          if (current !== undefined && !silentBy(current, now)) continue
          if (current !== undefined) yield* end(current, "inactivity", now, p.config)
          const conversation = newConversation(p.config, contactFor(p), yield* ids.uuid, now, now)
          conversationOf.set(key, conversation)
          opened.push(conversation)
          const payload = conversationEventPayload(p.config, conversation)
          events.push(yield* makeEvent(p.config.project_id, MSG_CONVERSATION_CREATED, payload, now))
        }
        const records = batch.map((p) => {
          const { messaging_product: _product, type: _type, ...fields } = p.input.envelope
          const rendition = renderOutbound(p.input.envelope)
          const type = envelopeTexts(p.input.envelope).type ?? "text"
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
            ...withSentBy(renditionFields(type, rendition, contact, now), p.input.sent_by),
            media: null
          } satisfies MessageRecord
        })
        // Each conversation with this batch's messages counted in, as if every one is stored: one opened here goes in so
        // (not inserted, then updated at once: a second row version of every new conversation, for a broadcast to new
        // recipients). A message whose id was already recorded is not stored; then the counts are taken again.
        const uncounted = new Map(conversationOf)
        const countedIf = (stored: (i: number) => boolean) => {
          const counted = new Map(uncounted)
          for (let i = 0; i < batch.length; i++) {
            if (!stored(i)) continue
            const p = batch[i]!
            const key = pairKey(p.config.id, contactFor(p).id)
            const now = iso(p.nowMs)
            counted.set(key, countMessage(counted.get(key)!, records[i]!, contactFor(p), now, now))
          }
          return counted
        }
        const asIfStored = countedIf(() => true)
        const openedKeys = new Set(opened.map((c) => pairKey(c.msg_config_id, c.contact_id)))
        yield* conversations.insertMany(opened.map((c) => asIfStored.get(pairKey(c.msg_config_id, c.contact_id))!))
        const stored = yield* messages.insertMany(records)
        const allStored = stored.every((s) => s)
        for (const [key, conversation] of allStored ? asIfStored : countedIf((i) => stored[i]!)) conversationOf.set(key, conversation)
        // Opened ones were inserted counted: updated only when a message of the batch was not stored after all.
        const touched = new Set<string>(allStored ? [] : openedKeys)
        for (let i = 0; i < batch.length; i++) {
          if (!stored[i]) continue
          const p = batch[i]!
          const key = pairKey(p.config.id, contactFor(p).id)
          const now = iso(p.nowMs)
          if (!(allStored && openedKeys.has(key))) touched.add(key)
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
        const exits = new Map(batch.map((p, i): [PendingOutbound, Exit.Exit<OutboundRecorded, Unprocessable>] => [
          p,
          stored[i]
            ? Exit.succeed({
              message: recorded.get(p.messageId)!,
              conversation: conversationOf.get(pairKey(p.config.id, contactFor(p).id))!
            })
            : Exit.fail(unprocessable(`A message with id ${p.input.network_id} is already recorded`))
        ]))
        return all.map((p, i): Exit.Exit<OutboundRecorded, Unprocessable | SendWithheld> => {
          const verdict = verdicts[i]!
          return Option.isSome(verdict) ? Exit.fail(new SendWithheld({ withheld: verdict.value })) : exits.get(p)!
        })
      }))
    })

  const submitOutbound = yield* GroupCommit.make<PendingOutbound, OutboundRecorded, Unprocessable | SendWithheld>({
    max: BATCH_MAX,
    writers: BATCH_WRITERS,
    urgentWriters: URGENT_WRITERS,
    bulkWriters: BULK_WRITERS,
    many: recordOutboundBatch,
    one: (p) => Effect.flatMap(recordOutboundBatch([p]), (outcomes) => outcomes[0]!)
  })

  // The contact last recorded for a project's phone number: a send that names no contact guesses it, so its
  // conversation is read beside the contact (one round trip fewer). A contact keeps its id and phone number; an erased
  // one makes the guess miss, which costs a retry, never a wrong record.
  const knownContacts = new Map<string, string>()
  const rememberContact = (key: string, contactId: string) => {
    knownContacts.delete(key)
    if (knownContacts.size >= KNOWN_CONTACTS_MAX) knownContacts.delete(knownContacts.keys().next().value!)
    knownContacts.set(key, contactId)
  }

  /** An envelope that cannot be recorded: `check` (when given) answers first, as it would have in the recording. */
  const refuse = (error: Unprocessable, check: SendCheck | undefined): Effect.Effect<never, Unprocessable | SendWithheld> =>
    check === undefined ? Effect.fail(error) : Effect.flatMap(check, (verdict): Effect.Effect<never, Unprocessable | SendWithheld> =>
      Option.isSome(verdict) ? Effect.fail(new SendWithheld({ withheld: verdict.value })) : Effect.fail(error))

  const record = Effect.fn("Messaging.recordOutbound")(function*(config: MessageConfigRecord, input: OutboundInput, check: SendCheck | undefined) {
    const envelope = input.envelope
    const texts = envelopeTexts(envelope)
    if (texts.status === "read") return yield* refuse(unprocessable("A mark-read envelope is not a message"), check)
    const to = texts.to
    const waId = to === undefined ? undefined : phoneDigits(to) || undefined
    const userId = waId === undefined ? texts.recipient : undefined
    if (waId === undefined && userId === undefined) {
      return yield* refuse(unprocessable("The envelope names no recipient (to or recipient)"), check)
    }
    const messageId = input.id ?? (yield* ids.uuid)
    const contactKey = waId === undefined ? undefined : `${config.project_id}:${waId}`
    const guess = input.contact_id ?? (contactKey === undefined ? undefined : knownContacts.get(contactKey))
    const recorded = yield* submitOutbound({
      config,
      input: guess === input.contact_id ? input : { ...input, contact_id: guess },
      waId,
      userId,
      messageId,
      nowMs: yield* Clock.currentTimeMillis,
      check
    }, priorityOf(input.origin))
    // Not a broadcast's recipient: sent once, in batches that read their contacts together; 10,000 of them would only
    // push out the contacts of conversations, and hold ~2 MB while a large broadcast sends.
    if (contactKey !== undefined && input.origin !== "broadcast") rememberContact(contactKey, recorded.message.contact_id)
    return recorded
  })

  // Without a check nothing is withheld.
  const recordOutbound = (config: MessageConfigRecord, input: OutboundInput) =>
    Effect.catchTag(record(config, input, undefined), "SendWithheld", Effect.die)
  const recordChecked = (config: MessageConfigRecord, input: OutboundInput, check: SendCheck) => record(config, input, check)

  const findMessage = (projectId: string, id: string) =>
    messages.findById(projectId, id).pipe(
      Effect.flatMap(Option.match({ onNone: () => Effect.fail(notFound("Message", id)), onSome: Effect.succeed }))
    )

  /** A recorded send the network accepted, waiting for its transaction. */
  interface PendingAssignment {
    readonly config: MessageConfigRecord
    readonly message: MessageRecord
    readonly networkId: string
    readonly nowMs: number
  }

  /**
   * Gives recorded sends their network ids, and the conversations that still point at them the id, in one
   * transaction of one round trip: the ids' statement rides with the commit (its answer read after), setting the id of
   * each send no status report overtook. A send a report overtook (the network answered after reporting it) is given
   * its id with those reports applied in a second transaction (`applyOvertaken`); a crash between the two leaves it as
   * a crash before the assignment does.
   */
  const assignBatch = (batch: ReadonlyArray<PendingAssignment>) =>
    Effect.gen(function*() {
      const answer = yield* tx.withTransaction(Effect.gen(function*() {
        yield* locks.lockAll(batch.map((p) => `message:${p.message.phone_number_id}:${p.networkId}`))
        const set = yield* messages.setNetworkIdsUnlessReported(batch.map((p) => ({
          projectId: p.message.project_id,
          id: p.message.id,
          phoneNumberId: p.message.phone_number_id,
          networkId: p.networkId,
          at: iso(p.nowMs)
        })))
        yield* conversations.setLastMessageIds(batch.map((p) => ({
          projectId: p.message.project_id,
          id: p.message.conversation_id,
          timestamp: p.message.timestamp,
          networkId: p.networkId,
          at: iso(p.nowMs)
        })))
        return set
      }))
      const set = new Set(yield* answer)
      const overtaken = batch.filter((p) => !set.has(p.message.id))
      const applied = overtaken.length === 0 ? new Map<string, MessageRecord>() : yield* applyOvertaken(overtaken)
      return batch.map((p) =>
        Exit.succeed(applied.get(p.message.id) ?? { ...p.message, network_id: p.networkId, updated_at: iso(p.nowMs) })
      )
    })

  /** Sends status reports overtook: given their ids with the reports applied (and their domain events). */
  const applyOvertaken = (batch: ReadonlyArray<PendingAssignment>) =>
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
      yield* messages.updateMany(assigned.map(({ applied }) => applied.message))
      // The reports changed the sends' statuses: their events carry the conversation, read now.
      const changed = assigned.filter(({ applied }) => applied.changes.length > 0)
      const events: Array<DomainEvent> = []
      for (const group of groupBy(changed, ({ p }) => p.message.project_id)) {
        const byId = yield* conversationsById(group[0]!.p.message.project_id, group.map(({ p }) => p.message.conversation_id))
        for (const { applied, p } of group) {
          events.push(...yield* statusEvents(p.config, applied.changes, (m) => byId.get(m.conversation_id), iso(p.nowMs)))
        }
      }
      yield* outbox.appendMany(events)
      return new Map(assigned.map(({ applied, p }) => [p.message.id, applied.message]))
    }))

  const submitAssignment = yield* GroupCommit.make<PendingAssignment, MessageRecord, never>({
    max: BATCH_MAX,
    writers: BATCH_WRITERS,
    urgentWriters: URGENT_WRITERS,
    bulkWriters: BULK_WRITERS,
    many: assignBatch,
    one: (p) => Effect.flatMap(assignBatch([p]), (exits) => exits[0]!)
  })

  const assignNetworkId = Effect.fn("Messaging.assignNetworkId")(
    function*(config: MessageConfigRecord, message: MessageRecord, networkId: string) {
      return yield* submitAssignment({ config, message, networkId, nowMs: yield* Clock.currentTimeMillis }, priorityOf(message.origin))
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

  return { recordOutbound, recordChecked, assignNetworkId, failOutbound } satisfies OutboundRecording
})
