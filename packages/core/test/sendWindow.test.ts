/**
 * The broadcast's send window (issue 30 §2): it narrows while sends take longer than their baseline (they queue inside
 * a saturated host, where replies would wait behind them), widens back once they do not, and stays wide for a network
 * that is slow but steady; it yields to sends inside conversations while they are in flight and for a hold after.
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Deferred, Effect, Exit, Fiber } from "effect"
import { TestClock } from "effect/testing"
import { makeSendWindow } from "../src/broadcasts/SendWindow.ts"
import { ConversationalSends, type Conversing } from "../src/messaging/ConversationalSends.ts"

const options = { max: 128, min: 8, tolerance: 2, slackMs: 5, whileConversing: 8, holdMs: 1000 }
const quiet: Conversing = { inFlight: 0, lastSeenMs: undefined }

/**
 * Feeds `rounds` windows' worth of sends taking `ms` each, the window's sends side by side (a round lasts one send);
 * the window after.
 */
const feed = (window: ReturnType<typeof makeSendWindow>, rounds: number, ms: (i: number) => number, conversing = quiet) => {
  for (let round = 0; round < rounds; round++) {
    const sends = window.limit(now, conversing)
    for (let i = 0; i < sends; i++) {
      now += ms(i) / sends
      window.observe(ms(i), now, conversing)
    }
  }
  return window.limit(now, conversing)
}
let now = 0

describe("SendWindow", () => {
  it("stays at its widest while sends take what they took", () => {
    const window = makeSendWindow(options)
    assert.strictEqual(feed(window, 20, () => 20), 128)
  })

  it("stays wide for a slow network: every send long, none longer than usual", () => {
    const window = makeSendWindow(options)
    assert.strictEqual(feed(window, 20, (i) => 400 + (i % 7) * 10), 128)
  })

  it("narrows while sends queue (take far longer than their baseline), then widens back", () => {
    const window = makeSendWindow(options)
    feed(window, 3, () => 20)
    const saturated = feed(window, 20, () => 400)
    assert.isAtMost(saturated, 16, `narrowed to ${saturated}`)
    assert.isAtLeast(saturated, 8)
    assert.strictEqual(feed(window, 40, () => 20), 128)
  })

  it("a clock that does not move (sends of 0 ms) keeps it wide", () => {
    const window = makeSendWindow(options)
    assert.strictEqual(feed(window, 10, () => 0), 128)
  })

  it("yields to conversational sends in flight, holds for a while after the last one, then widens back", () => {
    const window = makeSendWindow(options)
    assert.strictEqual(feed(window, 5, () => 20), 128)
    assert.strictEqual(window.limit(now, { inFlight: 1, lastSeenMs: undefined }), 8)
    assert.strictEqual(window.observe(20, now, { inFlight: 2, lastSeenMs: now - 5000 }), 8)
    const ended = now
    assert.strictEqual(window.observe(20, ended + 999, { inFlight: 0, lastSeenMs: ended }), 8)
    assert.strictEqual(window.observe(20, ended + 1000, { inFlight: 0, lastSeenMs: ended }), 128)
  })

  it("never widens a window that sends queueing narrowed below the yield", () => {
    const window = makeSendWindow({ ...options, whileConversing: 64 })
    feed(window, 3, () => 20)
    const saturated = feed(window, 20, () => 400)
    assert.isBelow(saturated, 64)
    assert.strictEqual(window.limit(now, { inFlight: 1, lastSeenMs: undefined }), saturated)
  })

  it("leaves the sends made while it yields out of its latency: the narrow window's faster sends set no lower baseline", () => {
    const window = makeSendWindow(options)
    feed(window, 5, () => 20)
    // Yielding for a long while: 8 sends in flight take 2 ms each.
    feed(window, 200, () => 2, { inFlight: 1, lastSeenMs: undefined })
    // Back at 20 ms once no conversation is under way: what the wide window took before, not 10x a 2 ms baseline.
    assert.strictEqual(feed(window, 20, () => 20), 128)
  })
})

describe("ConversationalSends", () => {
  it.effect("counts a send in flight until it ends, however it ends, and when the last one ended (the Clock's time)", () =>
    Effect.gen(function*() {
      const sends = yield* ConversationalSends
      assert.deepStrictEqual(yield* sends.current, { inFlight: 0, lastSeenMs: undefined })
      const release = yield* Deferred.make<void>()
      const held = yield* Effect.forkChild(sends.track(Deferred.await(release)))
      const failing = yield* Effect.forkChild(sends.track(Effect.andThen(Deferred.await(release), Effect.fail("refused"))))
      const interrupted = yield* Effect.forkChild(sends.track(Effect.never))
      yield* Effect.yieldNow
      assert.deepStrictEqual(yield* sends.current, { inFlight: 3, lastSeenMs: undefined })
      yield* TestClock.adjust("1500 millis")
      yield* Fiber.interrupt(interrupted)
      assert.deepStrictEqual(yield* sends.current, { inFlight: 2, lastSeenMs: 1500 })
      yield* TestClock.adjust("500 millis")
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(held)
      assert.isTrue(Exit.isFailure(yield* Fiber.await(failing)))
      assert.deepStrictEqual(yield* sends.current, { inFlight: 0, lastSeenMs: 2000 })
    }).pipe(Effect.provide(ConversationalSends.layer)))

  it.effect("a contact's message makes the window yield from its arrival, for the hold, before any send of its reply", () =>
    Effect.gen(function*() {
      const sends = yield* ConversationalSends
      const window = makeSendWindow(options)
      yield* TestClock.adjust("10 seconds")
      const at = yield* Clock.currentTimeMillis
      assert.strictEqual(window.limit(at, yield* sends.current), 128)
      yield* sends.arrived
      assert.deepStrictEqual(yield* sends.current, { inFlight: 0, lastSeenMs: at })
      assert.strictEqual(window.limit(at, yield* sends.current), 8)
      assert.strictEqual(window.limit(at + 999, yield* sends.current), 8)
      assert.strictEqual(window.limit(at + 1000, yield* sends.current), 128)
    }).pipe(Effect.provide(ConversationalSends.layer)))
})
