/**
 * The broadcast sender on memory ports and the test clock (decisions 3.4,
 * 8.2): a schedule starts it at its time (or completes an emptied broadcast),
 * the messaging limit holds recipients pending until it allows them, a
 * template paused while sending and a disconnected number stop it, and sends a
 * restart left in doubt are settled by the network's reports or sent again;
 * replies on the broadcast's number go first, within its throughput, and are
 * counted while in flight (the sender's window yields to them).
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Effect, Fiber, Option } from "effect"
import { TestClock } from "effect/testing"
import { recipientSendKey } from "../src/broadcasts/Broadcast.ts"
import { Broadcasts } from "../src/broadcasts/Broadcasts.ts"
import { Messaging } from "../src/messaging/Messaging.ts"
import { Outbound } from "../src/messaging/Outbound.ts"
import { SendPace } from "../src/messaging/numbers/SendPace.ts"
import { ConversationalSends } from "../src/messaging/ConversationalSends.ts"
import { MessageConfigs } from "../src/messaging/numbers/MessageConfigs.ts"
import { Templates } from "../src/messaging/templates/Templates.ts"
import { UpstreamSettings } from "../src/messaging/Upstream.ts"
import { MessagingNetwork } from "../src/network/MessagingNetwork.ts"
import { BroadcastsRepo } from "../src/broadcasts/BroadcastsRepo.ts"
import { MessageConfigsRepo } from "../src/messaging/numbers/MessageConfigsRepo.ts"
import { MessagesRepo } from "../src/messaging/MessagingRepo.ts"
import { layerMemoryParley, sandboxProject } from "../src/testing/index.ts"
import { Simulator } from "../src/simulators/index.ts"

const steps = Effect.yieldNow.pipe(Effect.repeat({ times: 50 }))
/** Lets `ms` of test time pass in 10 ms steps, everything due running as it goes. */
const pass = (ms: number) =>
  Effect.gen(function*() {
    for (let t = 0; t < ms; t += 10) yield* Effect.andThen(TestClock.adjust("10 millis"), steps)
  })

const given = Effect.gen(function*() {
  const { msgConfigId, phoneNumberId, principal } = yield* sandboxProject("Acme")
  const simulator = yield* Simulator.running
  const config = Option.getOrThrow(yield* (yield* MessageConfigsRepo).findById(principal.project.id, msgConfigId))
  const created = yield* (yield* MessagingNetwork).createTemplate({ accessToken: config.access_token }, config.business_account_id, {
    name: "spring_sale",
    language: "en_US",
    category: "MARKETING",
    components: [{ type: "BODY", text: "Hi {{1}}, the sale is on!", example: { body_text: [["Ada"]] } }]
  })
  yield* simulator.setTemplateStatus(created.value.id, "APPROVED")
  const listed = yield* (yield* Templates).list(principal, { phone_number_id: phoneNumberId, name: "spring_sale" }, { mode: "page", page: 1, perPage: 10 })
  const broadcasts = yield* Broadcasts
  const make = (count: number, prefix: string) =>
    Effect.gen(function*() {
      const { broadcast } = yield* broadcasts.create(principal, { name: "Sale", msg_config_id: msgConfigId, msg_template_id: listed.items[0]!.id })
      if (count > 0) {
        yield* broadcasts.addRecipients(principal, broadcast.id, Array.from({ length: count }, (_, i) => ({ phone_number: `${prefix}${String(i).padStart(4, "0")}`, template_parameters: ["Ada"] })))
      }
      return broadcast.id
    })
  const sends = Effect.map(simulator.outbox(phoneNumberId), (all) => all.filter((m) => m.type === "template").length)
  return { principal, phoneNumberId, config, simulator, broadcasts, make, sends, templateUpstreamId: created.value.id }
})

describe("the broadcast sender", () => {
  it.effect("starts a schedule at its time; a schedule emptied meanwhile completes with no_recipients", () =>
    Effect.gen(function*() {
      const g = yield* given
      const id = yield* g.make(3, "1555100")
      const empty = yield* g.make(1, "1555110")
      const at = new Date((yield* Clock.currentTimeMillis) + 120_000).toISOString()
      yield* g.broadcasts.schedule(g.principal, id, at)
      yield* g.broadcasts.schedule(g.principal, empty, at)
      yield* g.broadcasts.clearRecipients(g.principal, empty)
      yield* pass(1000)
      assert.strictEqual((yield* g.broadcasts.get(g.principal, id)).broadcast.status, "scheduled")
      assert.strictEqual(yield* g.sends, 0)
      yield* TestClock.adjust("2 minutes")
      yield* pass(2000)
      const done = yield* g.broadcasts.get(g.principal, id)
      assert.deepStrictEqual([done.broadcast.status, done.counts.sent], ["completed", 3])
      assert.isNotNull(done.broadcast.started_at)
      assert.strictEqual(yield* g.sends, 3)
      const emptied = (yield* g.broadcasts.get(g.principal, empty)).broadcast
      assert.deepStrictEqual([emptied.status, emptied.stop_reason], ["completed", "no_recipients"])
    }).pipe(Effect.provide(layerMemoryParley)), 60_000)

  it.effect("keeps recipients beyond the messaging limit pending until the limit allows them", () =>
    Effect.gen(function*() {
      const g = yield* given
      yield* g.simulator.updateNumber(g.phoneNumberId, { messagingLimitTier: "TIER_50" })
      const id = yield* g.make(60, "1555200")
      yield* g.broadcasts.send(g.principal, id)
      yield* pass(3000)
      const held = yield* g.broadcasts.get(g.principal, id)
      assert.deepStrictEqual([held.broadcast.status, held.counts.sent, held.counts.pending], ["sending", 50, 10])
      // The portfolio's limit goes up: the sender reads it within 10 s.
      yield* g.simulator.updateNumber(g.phoneNumberId, { messagingLimitTier: "TIER_250" })
      yield* pass(11_000)
      const done = yield* g.broadcasts.get(g.principal, id)
      assert.deepStrictEqual([done.broadcast.status, done.counts.sent], ["completed", 60])
    }).pipe(Effect.provide(layerMemoryParley)), 60_000)

  it.effect("stops when the template is paused while sending (the network refuses 132015), the rest pending", () =>
    Effect.gen(function*() {
      const g = yield* given
      const id = yield* g.make(300, "1555300")
      yield* g.broadcasts.send(g.principal, id)
      yield* pass(500)
      yield* g.simulator.setTemplateStatus(g.templateUpstreamId, "PAUSED")
      yield* pass(3000)
      const stopped = yield* g.broadcasts.get(g.principal, id)
      assert.deepStrictEqual([stopped.broadcast.status, stopped.broadcast.stop_reason], ["stopped", "template_paused"])
      assert.isAbove(stopped.counts.pending, 0)
      assert.strictEqual(stopped.counts.failed, 0)
      assert.strictEqual(stopped.counts.sent + stopped.counts.pending, 300)
    }).pipe(Effect.provide(layerMemoryParley)), 60_000)

  it.effect("stops when the number is disconnected while sending", () =>
    Effect.gen(function*() {
      const g = yield* given
      const id = yield* g.make(1000, "1555400")
      yield* g.broadcasts.send(g.principal, id)
      yield* pass(500)
      yield* (yield* MessageConfigs).disconnect(g.principal, g.phoneNumberId)
      yield* pass(11_000)
      const stopped = yield* g.broadcasts.get(g.principal, id)
      assert.deepStrictEqual([stopped.broadcast.status, stopped.broadcast.stop_reason], ["stopped", "number_disconnected"])
      assert.isAbove(stopped.counts.pending, 0)
    }).pipe(Effect.provide(layerMemoryParley)), 60_000)

  it.effect("sends replies on the broadcast's number at once, ahead of its waiting sends, within the number's throughput", () =>
    Effect.gen(function*() {
      const g = yield* given
      const outbound = yield* Outbound
      // The sandbox number's throughput: 80 messages a second.
      const id = yield* g.make(300, "1555600")
      yield* g.broadcasts.send(g.principal, id)
      yield* pass(100)
      const replyTo = Array.from({ length: 10 }, (_, i) => `1555690${String(i).padStart(4, "0")}`)
      for (const to of replyTo) {
        // A workflow's reply inside a conversation: it reaches the network without waiting for the broadcast.
        const before = yield* Clock.currentTimeMillis
        const outcome = yield* outbound.send(g.config, {
          messaging_product: "whatsapp",
          to,
          type: "template",
          template: { name: "spring_sale", language: { code: "en_US" }, components: [{ type: "body", parameters: [{ type: "text", text: "Ada" }] }] }
        }, { origin: "workflow" })
        assert.strictEqual(outcome._tag, "Accepted")
        assert.strictEqual((yield* Clock.currentTimeMillis) - before, 0, "the reply waited for nothing")
        yield* pass(50)
      }
      // 100 ms before the replies and 500 ms of them, then the rest of two seconds: the broadcast gave the replies
      // their slots, so the number sent no more than its throughput allows.
      yield* pass(1400)
      const sent = (yield* g.simulator.outbox(g.phoneNumberId)).filter((m) => m.type === "template")
      assert.strictEqual(sent.filter((m) => replyTo.includes(m.to ?? "")).length, 10)
      assert.isAtMost(sent.length, 160, `${sent.length} sends in 2 s at 80/s`)
      yield* pass(4000)
      const done = yield* g.broadcasts.get(g.principal, id)
      assert.deepStrictEqual([done.broadcast.status, done.counts.sent], ["completed", 300])
    }).pipe(Effect.provide(layerMemoryParley)), 60_000)

  it.effect("a send inside a conversation takes its number's slot from the broadcasts; a broadcast's own send does not", () =>
    Effect.gen(function*() {
      const g = yield* given
      const outbound = yield* Outbound
      const pace = yield* SendPace
      const template = { name: "spring_sale", language: { code: "en_US" }, components: [{ type: "body", parameters: [{ type: "text", text: "Ada" }] }] }
      const send = (to: string, origin: "workflow" | "broadcast") =>
        outbound.send(g.config, { messaging_product: "whatsapp", to, type: "template", template }, { origin })
      const waited = (effect: Effect.Effect<void>) =>
        Effect.gen(function*() {
          const fiber = yield* Effect.forkChild(Effect.andThen(effect, Clock.currentTimeMillis))
          const start = yield* Clock.currentTimeMillis
          yield* pass(500)
          return (yield* Fiber.join(fiber)) - start
        })
      // A broadcast pacing the number at 10 a second takes the slot now; its next is 100 ms on.
      yield* pace.bulk(g.phoneNumberId, 10)
      yield* send("15557000001", "broadcast")
      assert.strictEqual(yield* waited(pace.bulk(g.phoneNumberId, 10)), 100, "a broadcast's own send took no slot of its own")
      yield* pace.bulk(g.phoneNumberId, 10)
      yield* send("15557000002", "workflow")
      assert.strictEqual(yield* waited(pace.bulk(g.phoneNumberId, 10)), 200, "the reply's slot came first")
    }).pipe(Effect.provide(layerMemoryParley)), 60_000)

  it.effect("Outbound counts a send inside a conversation while in flight, for the broadcasts to yield to; a broadcast's own send it does not", () =>
    Effect.gen(function*() {
      const g = yield* given
      const outbound = yield* Outbound
      const conversational = yield* ConversationalSends
      const template = { name: "spring_sale", language: { code: "en_US" }, components: [{ type: "body", parameters: [{ type: "text", text: "Ada" }] }] }
      const send = (to: string, origin: "workflow" | "broadcast") =>
        outbound.send(g.config, { messaging_product: "whatsapp", to, type: "template", template }, { origin })
      yield* send("15557100001", "broadcast")
      assert.deepStrictEqual(yield* conversational.current, { inFlight: 0, lastSeenMs: undefined })
      yield* TestClock.adjust("3 seconds")
      const fiber = yield* Effect.forkChild(send("15557100002", "workflow"))
      yield* Effect.yieldNow
      assert.strictEqual((yield* conversational.current).inFlight, 1)
      assert.strictEqual((yield* Fiber.join(fiber))._tag, "Accepted")
      assert.deepStrictEqual(yield* conversational.current, { inFlight: 0, lastSeenMs: yield* Clock.currentTimeMillis })
    }).pipe(Effect.provide(layerMemoryParley)), 60_000)

  it.effect("after a restart, a send in doubt is settled by the network's report, or sent again once the network stayed silent", () =>
    Effect.gen(function*() {
      const g = yield* given
      const repo = yield* BroadcastsRepo
      const id = yield* g.make(2, "1555500")
      // A host died while sending: both recipients attempted and recorded, no answer stored. The first send reached
      // the network (which reports it, with the recipient's key); the second died before it left.
      const now = new Date(yield* Clock.currentTimeMillis).toISOString()
      const [reached, lost] = yield* repo.pendingBatch(id, now, 10)
      yield* repo.markAttempted(id, [reached!.id, lost!.id], now)
      const envelope = (r: typeof reached) => ({
        messaging_product: "whatsapp",
        to: r!.phone_number,
        type: "template",
        template: { name: "spring_sale", language: { code: "en_US" }, components: [{ type: "body", parameters: [{ type: "text", text: "Ada" }] }] },
        biz_opaque_callback_data: recipientSendKey(r!.id)
      })
      const messaging = yield* Messaging
      for (const r of [reached, lost]) yield* messaging.recordOutbound(g.config, { envelope: envelope(r), origin: "broadcast", id: r!.message_id })
      yield* (yield* MessagingNetwork).send({ accessToken: g.config.access_token }, g.phoneNumberId, envelope(reached))
      yield* pass(1000)

      yield* g.broadcasts.send(g.principal, id)
      yield* pass(2000)
      // Neither is sent again before the grace: the silent one may still be reported.
      assert.strictEqual(yield* g.sends, 1)
      yield* TestClock.adjust("5 minutes")
      yield* pass(2000)

      const done = yield* g.broadcasts.get(g.principal, id)
      assert.deepStrictEqual([done.broadcast.status, done.counts.sent, done.counts.failed], ["completed", 2, 0])
      const outbox = (yield* g.simulator.outbox(g.phoneNumberId)).filter((m) => m.type === "template").map((m) => m.to)
      assert.deepStrictEqual(outbox.sort(), [reached!.phone_number, lost!.phone_number].sort(), "each recipient reached the network once")
      const messages = yield* MessagesRepo
      const first = Option.getOrThrow(yield* messages.findById(g.principal.project.id, reached!.message_id))
      assert.isNotNull(first.network_id, "the reached send took the network id its report named")
      const abandoned = Option.getOrThrow(yield* messages.findById(g.principal.project.id, lost!.message_id))
      assert.strictEqual(abandoned.status, "failed")
      const listed = yield* repo.listRecipients(g.principal.project.id, id, undefined, { mode: "page", page: 1, perPage: 10 })
      const resent = listed.items.find((r) => r.id === lost!.id)!
      assert.notStrictEqual(resent.message_id, lost!.message_id, "the send again went under a new attempt's id")
      assert.isNotNull(resent.network_message_id)
    }).pipe(Effect.provide(layerMemoryParley)), 60_000)
})
