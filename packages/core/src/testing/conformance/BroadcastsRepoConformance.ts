/** The behaviour every `BroadcastsRepo` adapter owes (decisions 2.14, 3.4), written once. */
import { assert, layer } from "@effect/vitest"
import { Effect, type Layer, Option } from "effect"
import { ANONYMISED_PHONE, type BroadcastRecord, type RecipientRecord, recipientMessageId } from "../../broadcasts/Broadcast.ts"
import type { ConversationRecord, MessageRecord } from "../../messaging/Message.ts"
import { BroadcastsRepo } from "../../broadcasts/BroadcastsRepo.ts"
import { MessageConfigsRepo } from "../../messaging/numbers/MessageConfigsRepo.ts"
import { ContactsRepo, ConversationsRepo, MessagesRepo } from "../../messaging/MessagingRepo.ts"
import type { ProjectsRepo } from "../../projects/ProjectsRepo.ts"
import { at, givenProject, uniqueId } from "./fixtures.ts"
import { makeConfig, makeContact, makeConversation, makeMessage } from "./MessagingStorageConformance.ts"

export const makeBroadcast = (projectId: string, overrides: Partial<BroadcastRecord> = {}): BroadcastRecord => ({
  id: crypto.randomUUID(),
  project_id: projectId,
  name: "Spring sale",
  status: "draft",
  msg_config_id: uniqueId("cfg"),
  msg_template_id: crypto.randomUUID(),
  template: { id: "t", name: "spring_sale", language_code: "en_US", category: "MARKETING", status: "approved" },
  scheduled_at: null,
  started_at: null,
  completed_at: null,
  stopped_at: null,
  stop_reason: null,
  lease_owner: null,
  lease_until: null,
  created_at: at(0),
  updated_at: at(0),
  ...overrides
})

export const makeRecipient = (b: BroadcastRecord, phone: string, overrides: Partial<RecipientRecord> = {}): RecipientRecord => {
  const id = overrides.id ?? crypto.randomUUID()
  return {
    id,
    broadcast_id: b.id,
    project_id: b.project_id,
    phone_number: phone,
    contact_id: null,
    status: "pending",
    message_id: recipientMessageId(id, 0),
    attempts: 0,
    retry_at: null,
    attempted_at: null,
    template_parameters: ["Ada"],
    sent_at: null,
    failed_at: null,
    error_message: null,
    error_details: null,
    created_at: at(0),
    updated_at: at(0),
    ...overrides
  }
}

const page = { mode: "page", page: 1, perPage: 100 } as const
const seconds = (ms: number) => String(Math.floor(Date.parse(at(ms)) / 1000))
const HOUR = 3_600_000

type Ports = BroadcastsRepo | ProjectsRepo | MessageConfigsRepo | ContactsRepo | ConversationsRepo | MessagesRepo

export const broadcastsRepoConformance = <E>(name: string, storage: Layer.Layer<Ports, E>): void =>
  layer(storage, { excludeTestServices: true })(name, (it) => {
    it.effect("stores, finds, lists and moves broadcasts within their project", () =>
      Effect.gen(function*() {
        const repo = yield* BroadcastsRepo
        const a = yield* givenProject()
        const b = yield* givenProject()
        const first = makeBroadcast(a.id, { created_at: at(1), updated_at: at(1) })
        const second = makeBroadcast(a.id, { status: "sending", msg_config_id: "cfg-2", created_at: at(2), updated_at: at(2) })
        yield* repo.insert(first)
        yield* repo.insert(second)
        yield* repo.insert(makeBroadcast(b.id))
        assert.deepStrictEqual(yield* repo.findById(a.id, first.id), Option.some(first))
        assert.isTrue(Option.isNone(yield* repo.findById(b.id, first.id)))
        const all = yield* repo.list(a.id, {}, page)
        assert.deepStrictEqual(all.items.map((x) => x.id), [second.id, first.id])
        assert.strictEqual(all.total, 2)
        assert.deepStrictEqual((yield* repo.list(a.id, { status: "sending" }, page)).items.map((x) => x.id), [second.id])
        assert.deepStrictEqual((yield* repo.list(a.id, { msg_config_id: "cfg-2" }, page)).items.map((x) => x.id), [second.id])
        assert.deepStrictEqual((yield* repo.list(a.id, { msg_template_id: first.msg_template_id }, page)).items.map((x) => x.id), [first.id])
        // Compare-and-set on the status.
        const scheduled = { ...first, status: "scheduled" as const, scheduled_at: at(60_000), updated_at: at(3) }
        assert.isTrue(Option.isNone(yield* repo.transition(scheduled, ["sending"])))
        assert.deepStrictEqual(yield* repo.transition(scheduled, ["draft"]), Option.some(scheduled))
        assert.isTrue(Option.isNone(yield* repo.transition({ ...scheduled, project_id: b.id }, ["scheduled"])))
      }))

    it.effect("adds recipients to drafts only, counting duplicates; clears drafts and scheduled ones", () =>
      Effect.gen(function*() {
        const repo = yield* BroadcastsRepo
        const p = yield* givenProject()
        const b = makeBroadcast(p.id)
        yield* repo.insert(b)
        const added = yield* repo.addRecipients(p.id, b.id, [makeRecipient(b, "15550001"), makeRecipient(b, "15550002"), makeRecipient(b, "15550001")])
        assert.deepStrictEqual(added, Option.some({ added: 2, duplicates: 1 }))
        assert.deepStrictEqual(yield* repo.addRecipients(p.id, b.id, [makeRecipient(b, "15550002"), makeRecipient(b, "15550003")]), Option.some({ added: 1, duplicates: 1 }))
        assert.deepStrictEqual(yield* repo.progress(b.id), { total: 3, pending: 3 })
        const other = yield* givenProject()
        assert.isTrue(Option.isNone(yield* repo.addRecipients(other.id, b.id, [makeRecipient(b, "15550004")])))
        const scheduled = yield* repo.transition({ ...b, status: "scheduled", scheduled_at: at(60_000) }, ["draft"])
        assert.isTrue(Option.isSome(scheduled))
        assert.isTrue(Option.isNone(yield* repo.addRecipients(p.id, b.id, [makeRecipient(b, "15550004")])))
        assert.deepStrictEqual(yield* repo.clearRecipients(p.id, b.id), Option.some(3))
        assert.deepStrictEqual(yield* repo.progress(b.id), { total: 0, pending: 0 })
        yield* repo.transition({ ...b, status: "sending" }, ["scheduled"])
        assert.isTrue(Option.isNone(yield* repo.clearRecipients(p.id, b.id)))
      }))

    it.effect("reads counters and recipient times from the recipients' messages", () =>
      Effect.gen(function*() {
        const repo = yield* BroadcastsRepo
        const messages = yield* MessagesRepo
        const p = yield* givenProject()
        const config = makeConfig(p.id)
        yield* (yield* MessageConfigsRepo).insert(config)
        const b = makeBroadcast(p.id, { msg_config_id: config.id, status: "sending" })
        yield* repo.insert({ ...b, status: "draft" })
        // One contact per recipient, each with its conversation and the broadcast's message in one state.
        const given = (phone: string, message: Partial<MessageRecord> | undefined, replyAfterMs?: number) =>
          Effect.gen(function*() {
            const r = makeRecipient(b, phone)
            if (message === undefined) return r
            const contact = makeContact(p.id, { wa_id: phone })
            yield* (yield* ContactsRepo).insert(contact)
            const conversation = makeConversation(config, contact)
            yield* (yield* ConversationsRepo).insert(conversation)
            yield* messages.insert(makeMessage(conversation, { id: r.message_id, direction: "outbound", origin: "broadcast", created_at: at(0), ...message }))
            if (replyAfterMs !== undefined) {
              yield* messages.insert(makeMessage(conversation, { direction: "inbound", created_at: at(replyAfterMs), updated_at: at(replyAfterMs) }))
            }
            return r
          })
        const sent = yield* given("15551001", { status: "sent", statuses: [{ status: "sent", timestamp: seconds(0) }] })
        const delivered = yield* given("15551002", { status: "delivered", statuses: [{ status: "sent", timestamp: seconds(0) }, { status: "delivered", timestamp: seconds(2000) }] }, HOUR)
        const read = yield* given("15551003", { status: "read", statuses: [{ status: "delivered", timestamp: seconds(1000) }, { status: "read", timestamp: seconds(5000) }] }, 25 * HOUR)
        const failedLater = yield* given("15551004", { status: "failed", statuses: [{ status: "failed", timestamp: seconds(3000) }] })
        const refused = yield* given("15551005", undefined)
        const suppressed = yield* given("15551006", undefined)
        const pending = yield* given("15551007", undefined)
        yield* repo.addRecipients(p.id, b.id, [sent, delivered, read, failedLater, refused, suppressed, pending])
        yield* repo.settle(b.id, [
          ...[sent, delivered, read, failedLater].map((r) => ({ id: r.id, status: "sent" as const, at: at(0), error_message: null, error_details: null })),
          { id: refused.id, status: "failed", at: at(0), error_message: "Message undeliverable", error_details: { error_code: "131026", error_subcode: null } },
          { id: suppressed.id, status: "suppressed", at: at(0), error_message: "The contact is blocked on this number", error_details: { error_code: "blocked", error_subcode: null } }
        ])
        // A recipient no longer pending keeps its outcome.
        yield* repo.settle(b.id, [{ id: sent.id, status: "failed", at: at(9), error_message: "late", error_details: null }])
        assert.deepStrictEqual(yield* repo.counts(p.id, b.id), { total: 7, sent: 3, failed: 3, delivered: 2, read: 1, responded: 1, pending: 1, held: 0 })
        assert.deepStrictEqual(yield* repo.counts((yield* givenProject()).id, b.id), { total: 0, sent: 0, failed: 0, delivered: 0, read: 0, responded: 0, pending: 0, held: 0 })

        const listed = yield* repo.listRecipients(p.id, b.id, undefined, page)
        const view = (id: string) => listed.items.find((r) => r.id === id)!
        assert.strictEqual(listed.total, 7)
        assert.strictEqual(view(delivered.id).delivered_at, at(2000 - (Date.parse(at(0)) % 1000)))
        assert.strictEqual(view(delivered.id).responded_at, at(HOUR))
        assert.isNull(view(delivered.id).read_at)
        assert.strictEqual(view(read.id).read_at, at(5000 - (Date.parse(at(0)) % 1000)))
        assert.isNull(view(read.id).responded_at, "a reply after 24 hours is no response")
        assert.strictEqual(view(failedLater.id).effective_status, "failed")
        assert.strictEqual(view(failedLater.id).failed_at, at(3000 - (Date.parse(at(0)) % 1000)))
        assert.strictEqual(view(sent.id).network_message_id?.startsWith("wamid."), true)
        assert.strictEqual(view(sent.id).sent_at, at(0))
        assert.deepStrictEqual(view(refused.id).error_details, { error_code: "131026", error_subcode: null })
        assert.isNull(view(pending.id).network_message_id)
        const failedOnes = yield* repo.listRecipients(p.id, b.id, "failed", page)
        assert.deepStrictEqual(failedOnes.items.map((r) => r.id).sort(), [failedLater.id, refused.id].sort())
        assert.strictEqual((yield* repo.listRecipients(p.id, b.id, "sent", { mode: "page", page: 2, perPage: 2 })).items.length, 1)
      }))

    it.effect("counts a pending recipient whose message the network accepted as sent, before its sender settles it", () =>
      Effect.gen(function*() {
        const repo = yield* BroadcastsRepo
        const messages = yield* MessagesRepo
        const p = yield* givenProject()
        const config = makeConfig(p.id)
        yield* (yield* MessageConfigsRepo).insert(config)
        const b = makeBroadcast(p.id, { msg_config_id: config.id })
        yield* repo.insert(b)
        const accepted = makeRecipient(b, "15552001")
        const inDoubt = makeRecipient(b, "15552002")
        const refused = makeRecipient(b, "15552003")
        const untouched = makeRecipient(b, "15552004")
        yield* repo.addRecipients(p.id, b.id, [accepted, inDoubt, refused, untouched])
        for (const [r, message] of [
          [accepted, { status: "sent" }],
          [inDoubt, { status: "pending", network_id: null }],
          [refused, { status: "failed", network_id: null }]
        ] as const) {
          const contact = makeContact(p.id, { wa_id: r.phone_number })
          yield* (yield* ContactsRepo).insert(contact)
          const conversation = makeConversation(config, contact)
          yield* (yield* ConversationsRepo).insert(conversation)
          yield* messages.insert(makeMessage(conversation, { id: r.message_id, direction: "outbound", origin: "broadcast", created_at: at(0), ...message }))
        }
        // Recorded and sent, or refused, but not settled: the sender is mid-batch.
        assert.deepStrictEqual(yield* repo.counts(p.id, b.id), { total: 4, sent: 1, failed: 0, delivered: 0, read: 0, responded: 0, pending: 3, held: 0 })
        const sentOnes = yield* repo.listRecipients(p.id, b.id, "sent", page)
        assert.deepStrictEqual(sentOnes.items.map((r) => r.id), [accepted.id])
        assert.strictEqual(sentOnes.items[0]!.network_message_id?.startsWith("wamid."), true)
        assert.lengthOf((yield* repo.listRecipients(p.id, b.id, "pending", page)).items, 3)
      }))

    it.effect("keeps its counters true as answers, reports and replies come one by one after the recipients", () =>
      Effect.gen(function*() {
        const repo = yield* BroadcastsRepo
        const messages = yield* MessagesRepo
        const p = yield* givenProject()
        const config = makeConfig(p.id)
        yield* (yield* MessageConfigsRepo).insert(config)
        const b = makeBroadcast(p.id, { msg_config_id: config.id })
        yield* repo.insert(b)
        // Enough recipients, each changed on its own, that the adapter's sums span many writes.
        const recipients = Array.from({ length: 120 }, (_, i) => makeRecipient(b, `1555300${String(i).padStart(4, "0")}`))
        yield* repo.addRecipients(p.id, b.id, recipients)
        const sent: Array<{ readonly message: MessageRecord; readonly conversation: ConversationRecord }> = []
        for (const r of recipients.slice(0, 100)) {
          const contact = makeContact(p.id, { wa_id: r.phone_number })
          yield* (yield* ContactsRepo).insert(contact)
          const conversation = makeConversation(config, contact)
          yield* (yield* ConversationsRepo).insert(conversation)
          const m = makeMessage(conversation, { id: r.message_id, direction: "outbound", origin: "broadcast", status: "pending", network_id: null, created_at: at(0) })
          yield* messages.insert(m)
          // The network's answer, then the sender's settlement: each its own write.
          yield* messages.setNetworkIdsUnlessReported([{ projectId: p.id, id: m.id, phoneNumberId: m.phone_number_id, networkId: `wamid.${r.id}`, at: at(1) }])
          yield* messages.setStatuses([{ project_id: p.id, id: m.id, status: "sent", statuses: [{ status: "sent", timestamp: seconds(1) }], updated_at: at(1) }])
          yield* repo.settle(b.id, [{ id: r.id, status: "sent", at: at(2), error_message: null, error_details: null }])
          sent.push({ message: m, conversation })
        }
        yield* repo.settle(b.id, recipients.slice(100, 110).map((r) => ({ id: r.id, status: "failed" as const, at: at(2), error_message: "no", error_details: null })))
        assert.deepStrictEqual(yield* repo.counts(p.id, b.id), { total: 120, sent: 100, failed: 10, delivered: 0, read: 0, responded: 0, pending: 10, held: 0 })
        for (const [i, { conversation, message: m }] of sent.entries()) {
          const status = i < 60 ? "read" : i < 90 ? "delivered" : i < 95 ? "sent" : "failed"
          yield* messages.setStatuses([{ project_id: p.id, id: m.id, status, statuses: [], updated_at: at(3) }])
          // Replies of the first 40: within 24 hours of the send for 30 of them, a day later for 10.
          if (i < 40) yield* messages.insert(makeMessage(conversation, { direction: "inbound", created_at: at(i < 30 ? HOUR : 25 * HOUR) }))
        }
        // Reading in between: the sums hold whatever the reads fold.
        assert.deepStrictEqual(yield* repo.counts(p.id, b.id), { total: 120, sent: 95, failed: 15, delivered: 90, read: 60, responded: 30, pending: 10, held: 0 })
        assert.deepStrictEqual(yield* repo.counts(p.id, b.id), { total: 120, sent: 95, failed: 15, delivered: 90, read: 60, responded: 30, pending: 10, held: 0 })
        const listed = yield* repo.listRecipients(p.id, b.id, undefined, { mode: "page", page: 1, perPage: 200 })
        const seen = listed.items.reduce((n, r) => ({
          sent: n.sent + (r.effective_status === "sent" ? 1 : 0),
          delivered: n.delivered + (r.delivered_at !== null ? 1 : 0),
          responded: n.responded + (r.responded_at !== null ? 1 : 0)
        }), { sent: 0, delivered: 0, responded: 0 })
        assert.deepStrictEqual(seen, { sent: 95, delivered: 90, responded: 30 }, "the counters agree with the recipients as listed")
        yield* repo.clearRecipients(p.id, b.id)
        assert.deepStrictEqual(yield* repo.counts(p.id, b.id), { total: 0, sent: 0, failed: 0, delivered: 0, read: 0, responded: 0, pending: 0, held: 0 })
      }))

    it.effect("counts a reply as a response in the broadcast message's conversation only, among the conversation's other messages", () =>
      Effect.gen(function*() {
        const repo = yield* BroadcastsRepo
        const messages = yield* MessagesRepo
        const p = yield* givenProject()
        const config = makeConfig(p.id)
        const other = makeConfig(p.id)
        for (const c of [config, other]) yield* (yield* MessageConfigsRepo).insert(c)
        const b = makeBroadcast(p.id, { msg_config_id: config.id })
        yield* repo.insert(b)
        const r = makeRecipient(b, "15554001")
        yield* repo.addRecipients(p.id, b.id, [r])
        const contact = makeContact(p.id, { wa_id: r.phone_number })
        yield* (yield* ContactsRepo).insert(contact)
        // The broadcast's conversation, and the same contact's conversation on another number that never got one.
        const withBroadcast = makeConversation(config, contact)
        const without = makeConversation(other, contact)
        for (const c of [withBroadcast, without]) yield* (yield* ConversationsRepo).insert(c)
        const chat = (conversation: ConversationRecord, fromMs: number) =>
          Effect.forEach([0, 1, 2, 3], (k) =>
            messages.insert(makeMessage(conversation, {
              direction: k % 2 === 0 ? "inbound" : "outbound",
              origin: k % 2 === 0 ? null : "workflow",
              created_at: at(fromMs + k * 1000),
              updated_at: at(fromMs + k * 1000)
            })), { discard: true })
        // Messages before the broadcast's, in both: no response can precede its message.
        yield* chat(withBroadcast, -HOUR)
        yield* chat(without, -HOUR)
        yield* messages.insert(makeMessage(withBroadcast, { id: r.message_id, direction: "outbound", origin: "broadcast", status: "sent", created_at: at(0) }))
        yield* repo.settle(b.id, [{ id: r.id, status: "sent", at: at(0), error_message: null, error_details: null }])
        // The contact writes on the other number: no response to this broadcast.
        yield* chat(without, HOUR)
        assert.strictEqual((yield* repo.counts(p.id, b.id)).responded, 0)
        // Then in the broadcast's conversation, after the bot's other messages there.
        yield* messages.insert(makeMessage(withBroadcast, { direction: "outbound", origin: "workflow", created_at: at(HOUR), updated_at: at(HOUR) }))
        yield* messages.insert(makeMessage(withBroadcast, { direction: "inbound", created_at: at(2 * HOUR), updated_at: at(2 * HOUR) }))
        assert.deepStrictEqual(yield* repo.counts(p.id, b.id), { total: 1, sent: 1, failed: 0, delivered: 0, read: 0, responded: 1, pending: 0, held: 0 })
        const [listed] = (yield* repo.listRecipients(p.id, b.id, undefined, page)).items
        assert.strictEqual(listed!.responded_at, at(2 * HOUR))
      }))

    it.effect("leases a broadcast to one owner at a time; a lapsed lease is taken over", () =>
      Effect.gen(function*() {
        const repo = yield* BroadcastsRepo
        const p = yield* givenProject()
        const b = makeBroadcast(p.id, { status: "sending" })
        yield* repo.insert(b)
        const held = yield* repo.lease(b.id, "h1", at(0), at(30_000))
        assert.strictEqual(Option.getOrThrow(held).lease_owner, "h1")
        assert.isTrue(Option.isNone(yield* repo.lease(b.id, "h2", at(10_000), at(40_000))))
        assert.isTrue(Option.isSome(yield* repo.lease(b.id, "h1", at(10_000), at(40_000))), "the owner renews")
        assert.isTrue(Option.isNone(yield* repo.lease(b.id, "h2", at(39_000), at(69_000))))
        assert.strictEqual(Option.getOrThrow(yield* repo.lease(b.id, "h2", at(41_000), at(71_000))).lease_until, at(71_000))
        yield* repo.release(b.id, "h1")
        assert.isTrue(Option.isNone(yield* repo.lease(b.id, "h1", at(42_000), at(72_000))), "only the holder releases")
        yield* repo.release(b.id, "h2")
        assert.isTrue(Option.isSome(yield* repo.lease(b.id, "h1", at(42_000), at(72_000))))
        // Moves keep the lease.
        const moved = yield* repo.transition({ ...b, status: "stopped", stopped_at: at(43_000), stop_reason: "manual" }, ["sending"])
        assert.strictEqual(Option.getOrThrow(moved).lease_owner, "h1")
      }))

    it.effect("hands out pending recipients oldest first, due ones only, and records outcomes and retries", () =>
      Effect.gen(function*() {
        const repo = yield* BroadcastsRepo
        const p = yield* givenProject()
        const b = makeBroadcast(p.id)
        yield* repo.insert(b)
        const rs = [0, 1, 2, 3].map((i) => makeRecipient(b, `1555200${i}`, { created_at: at(i), updated_at: at(i) }))
        yield* repo.addRecipients(p.id, b.id, rs)
        assert.deepStrictEqual((yield* repo.pendingBatch(b.id, at(10), 3)).map((r) => r.id), rs.slice(0, 3).map((r) => r.id))
        yield* repo.markAttempted(b.id, [rs[0]!.id, rs[1]!.id], at(10))
        yield* repo.postpone(b.id, [
          { id: rs[0]!.id, message_id: recipientMessageId(rs[0]!.id, 1), attempts: 1, retry_at: at(2000), attempted_at: null },
          { id: rs[1]!.id, message_id: rs[1]!.message_id, attempts: 0, retry_at: at(500), attempted_at: at(10) }
        ])
        yield* repo.settle(b.id, [{ id: rs[2]!.id, status: "sent", at: at(20), error_message: null, error_details: null }])
        assert.deepStrictEqual((yield* repo.pendingBatch(b.id, at(20), 10)).map((r) => r.id), [rs[3]!.id])
        const due = yield* repo.pendingBatch(b.id, at(2000), 10)
        assert.deepStrictEqual(due.map((r) => r.id), [rs[0]!.id, rs[1]!.id, rs[3]!.id])
        assert.deepStrictEqual(due.map((r) => [r.attempts, r.message_id, r.attempted_at]), [
          [1, recipientMessageId(rs[0]!.id, 1), null],
          [0, rs[1]!.message_id, at(10)],
          [0, rs[3]!.message_id, null]
        ])
        assert.deepStrictEqual(yield* repo.progress(b.id), { total: 4, pending: 3 })
        // Held for quiet hours: counted as held while pending; a later retry that is not a hold clears it.
        yield* repo.postpone(b.id, [{ id: rs[3]!.id, message_id: recipientMessageId(rs[3]!.id, 1), attempts: 1, retry_at: at(9000), attempted_at: null, held_until: at(9000) }])
        assert.strictEqual((yield* repo.counts(p.id, b.id)).held, 1)
        yield* repo.postpone(b.id, [{ id: rs[3]!.id, message_id: recipientMessageId(rs[3]!.id, 2), attempts: 2, retry_at: at(9500), attempted_at: null }])
        assert.strictEqual((yield* repo.counts(p.id, b.id)).held, 0)
      }))

    it.effect("lists runnable broadcasts and counts the contacts broadcasts reached", () =>
      Effect.gen(function*() {
        const repo = yield* BroadcastsRepo
        const p = yield* givenProject()
        const cfg = uniqueId("cfg")
        const due = makeBroadcast(p.id, { msg_config_id: cfg })
        const later = makeBroadcast(p.id, { msg_config_id: cfg })
        const sending = makeBroadcast(p.id, { msg_config_id: cfg })
        for (const x of [due, later, sending]) yield* repo.insert(x)
        yield* repo.addRecipients(p.id, sending.id, [makeRecipient(sending, "1555301"), makeRecipient(sending, "1555302"), makeRecipient(sending, "1555303")])
        yield* repo.transition({ ...due, status: "scheduled", scheduled_at: at(1000) }, ["draft"])
        yield* repo.transition({ ...later, status: "scheduled", scheduled_at: at(9_000_000) }, ["draft"])
        yield* repo.transition({ ...sending, status: "sending" }, ["draft"])
        const runnable = (yield* repo.listRunnable(at(2000), 1000)).map((x) => x.id)
        assert.isTrue(runnable.includes(due.id) && runnable.includes(sending.id) && !runnable.includes(later.id))
        const [r1, r2] = yield* repo.pendingBatch(sending.id, at(0), 2)
        yield* repo.settle(sending.id, [
          { id: r1!.id, status: "sent", at: at(HOUR), error_message: null, error_details: null },
          { id: r2!.id, status: "sent", at: at(3 * HOUR), error_message: null, error_details: null }
        ])
        assert.strictEqual(yield* repo.contactsReachedSince([cfg], at(0)), 2)
        assert.strictEqual(yield* repo.contactsReachedSince([cfg], at(2 * HOUR)), 1)
        assert.strictEqual(yield* repo.contactsReachedSince([uniqueId("cfg")], at(0)), 0)
      }))

    it.effect("anonymises a contact's recipients in its project only", () =>
      Effect.gen(function*() {
        const repo = yield* BroadcastsRepo
        const p = yield* givenProject()
        const q = yield* givenProject()
        const b = makeBroadcast(p.id)
        const c = makeBroadcast(q.id)
        yield* repo.insert(b)
        yield* repo.insert(c)
        yield* repo.addRecipients(p.id, b.id, [makeRecipient(b, "15554001"), makeRecipient(b, "15554002")])
        yield* repo.addRecipients(q.id, c.id, [makeRecipient(c, "15554001")])
        assert.strictEqual(yield* repo.anonymiseRecipients(p.id, "15554001"), 1)
        const listed = (yield* repo.listRecipients(p.id, b.id, undefined, page)).items
        const erased = listed.find((r) => r.phone_number === ANONYMISED_PHONE)!
        assert.isNull(erased.template_parameters)
        assert.deepStrictEqual(listed.map((r) => r.phone_number).sort(), ["15554002", ANONYMISED_PHONE].sort())
        assert.deepStrictEqual((yield* repo.listRecipients(q.id, c.id, undefined, page)).items.map((r) => r.phone_number), ["15554001"])
        assert.strictEqual((yield* repo.counts(p.id, b.id)).total, 2, "the counters stay true")
      }))
  })
