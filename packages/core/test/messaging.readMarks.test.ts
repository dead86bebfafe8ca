/**
 * Read mode's mark-readers (`messaging/ReadMarks.ts`): a mark is handed off and the caller goes on at once, whatever
 * the network does; marks of one conversation waiting together collapse to the newest, and a conversation has one
 * mark-read in flight; other conversations' marks go side by side; a refusal is logged and the readers go on; past
 * `WAITING_MAX` conversations waiting, a new conversation's mark is dropped.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Redacted } from "effect"
import type { InboundRecording } from "../src/messaging/InboundRecording.ts"
import { emptyFacts, type MessageConfigRecord } from "../src/messaging/numbers/MessageConfig.ts"
import { CALLS, makeReadMarks, type ReadMark, WAITING_MAX } from "../src/messaging/ReadMarks.ts"
import { NetworkUnavailable } from "../src/network/MessagingNetwork.ts"

const config: MessageConfigRecord = {
  id: "0b7c4a3e-8d2f-4c1a-9e5b-6f7a8b9c0d1e",
  project_id: "5f0c6a2e-1b3d-4e5f-8a9b-0c1d2e3f4a5b",
  name: "Support",
  display_name: "Support",
  kind: "production",
  phone_number_id: "100000000000001",
  business_account_id: "200000000000001",
  display_phone_number: "+1 555 000 0001",
  display_phone_number_normalized: "15550000001",
  customer_id: null,
  inbound_processing_enabled: true,
  access_token: Redacted.make("token"),
  webhook_verify_token: null,
  app_secret: null,
  webhook_destination_url: null,
  facts: emptyFacts,
  refreshed_at: null,
  webhook_verified_at: null,
  provisioned: false,
  deleted_at: null,
  created_at: "2026-11-28T00:00:00.000Z",
  updated_at: "2026-11-28T00:00:00.000Z"
}

const mark = (conversationId: string, messageId: string, second: number, typingIndicator = true): ReadMark => ({
  config,
  conversationId,
  messageId,
  receivedAt: `2026-11-28T10:00:${String(second).padStart(2, "0")}.000Z`,
  typingIndicator
})

/** A network whose mark-reads wait for `open` (once opened, every later one answers at once); each call written down. */
const heldNetwork = Effect.gen(function*() {
  const open = yield* Deferred.make<void>()
  const calls: Array<{ readonly messageId: string; readonly typing: boolean }> = []
  const answered: Array<string> = []
  const markRead: InboundRecording["markRead"] = (_config, _access, input) =>
    Effect.gen(function*() {
      calls.push({ messageId: input.messageId, typing: input.typingIndicator === true })
      yield* Deferred.await(open)
      answered.push(input.messageId)
      return { status: 200, contentType: "application/json", body: new Uint8Array(), value: { success: true } }
    })
  return { open, calls, answered, markRead }
})

/** Lets the mark-readers run until nothing is left to do. */
const settle = Effect.yieldNow.pipe(Effect.repeat({ times: 20 }))

describe("read mode's mark-readers", () => {
  it.effect("hand a mark off at once, even when the network never answers", () =>
    Effect.gen(function*() {
      const network = yield* heldNetwork
      const { markReadLater } = yield* makeReadMarks(network.markRead)
      yield* markReadLater(mark("c1", "wamid.1", 1))
      yield* settle
      assert.deepStrictEqual(network.calls, [{ messageId: "wamid.1", typing: true }], "called, still unanswered")
      assert.deepStrictEqual(network.answered, [])
    }))

  it.effect("a conversation's marks waiting together collapse to the newest; one mark-read in flight per conversation", () =>
    Effect.gen(function*() {
      const network = yield* heldNetwork
      const { markReadLater } = yield* makeReadMarks(network.markRead)
      yield* markReadLater(mark("c1", "wamid.1", 1))
      yield* settle
      // While wamid.1's call is in flight, three more of c1 come (one older than the one waiting), and one of c2.
      yield* markReadLater(mark("c1", "wamid.2", 2))
      yield* markReadLater(mark("c1", "wamid.4", 4, false))
      yield* markReadLater(mark("c1", "wamid.3", 3))
      yield* markReadLater(mark("c2", "wamid.5", 5))
      yield* settle
      assert.deepStrictEqual(network.calls.map((c) => c.messageId), ["wamid.1", "wamid.5"], "c1 waits for its call in flight; c2 goes")
      yield* Deferred.succeed(network.open, undefined)
      yield* settle
      assert.deepStrictEqual(network.calls, [
        { messageId: "wamid.1", typing: true },
        { messageId: "wamid.5", typing: true },
        { messageId: "wamid.4", typing: false }
      ], "only c1's newest mark went, as it was asked")
      assert.deepStrictEqual([...network.answered].sort(), ["wamid.1", "wamid.4", "wamid.5"])
    }))

  it.effect("marks of different conversations go side by side, up to CALLS at once", () =>
    Effect.gen(function*() {
      const network = yield* heldNetwork
      const { markReadLater } = yield* makeReadMarks(network.markRead)
      for (let i = 0; i < CALLS + 5; i++) yield* markReadLater(mark(`c${i}`, `wamid.${i}`, 1))
      yield* settle
      assert.lengthOf(network.calls, CALLS, "the rest wait for a free call")
      yield* Deferred.succeed(network.open, undefined)
      yield* settle
      assert.lengthOf(network.answered, CALLS + 5)
    }))

  it.effect("a refused mark-read is logged and the readers go on", () =>
    Effect.gen(function*() {
      const calls: Array<string> = []
      const { markReadLater } = yield* makeReadMarks((_config, _access, input) =>
        Effect.andThen(
          Effect.sync(() => calls.push(input.messageId)),
          input.messageId === "wamid.bad"
            ? Effect.fail(new NetworkUnavailable({ reason: "Transport", detail: "connection refused" }))
            : Effect.succeed({ status: 200, contentType: "application/json", body: new Uint8Array(), value: { success: true } })
        )
      )
      yield* markReadLater(mark("c1", "wamid.bad", 1))
      yield* settle
      yield* markReadLater(mark("c1", "wamid.good", 2))
      yield* settle
      assert.deepStrictEqual(calls, ["wamid.bad", "wamid.good"])
    }))

  it.effect("past WAITING_MAX conversations waiting, a new conversation's mark is dropped; a waiting one's is still replaced", () =>
    Effect.gen(function*() {
      const network = yield* heldNetwork
      const { markReadLater } = yield* makeReadMarks(network.markRead)
      // CALLS in flight, then WAITING_MAX waiting behind them.
      for (let i = 0; i < CALLS + WAITING_MAX; i++) yield* markReadLater(mark(`c${i}`, `wamid.${i}`, 1))
      yield* settle
      yield* markReadLater(mark("late", "wamid.late", 2))
      yield* markReadLater(mark(`c${CALLS}`, `wamid.newer`, 2))
      yield* Deferred.succeed(network.open, undefined)
      for (let i = 0; i < 20; i++) yield* settle
      assert.lengthOf(network.calls, CALLS + WAITING_MAX)
      assert.notInclude(network.calls.map((c) => c.messageId), "wamid.late", "dropped")
      assert.include(network.calls.map((c) => c.messageId), "wamid.newer", "replaced the waiting mark of its conversation")
      assert.notInclude(network.calls.map((c) => c.messageId), `wamid.${CALLS}`)
    }))
})
