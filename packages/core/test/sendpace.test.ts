/** A number's send pace (issue 30 §2): broadcasts wait for slots below its throughput, replies go first. */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import { SendPace } from "../src/messaging/numbers/SendPace.ts"

const steps = Effect.yieldNow.pipe(Effect.repeat({ times: 20 }))

describe("SendPace", () => {
  it.effect("spaces bulk sends at the pace asked; a conversational send waits for none and moves the waiting ones back one slot", () =>
    Effect.gen(function*() {
      const pace = yield* SendPace
      const start = yield* Clock.currentTimeMillis
      const times: Array<string> = []
      const bulk = (name: string) =>
        Effect.forkChild(Effect.andThen(pace.bulk("pn-1", 10), Effect.map(Clock.currentTimeMillis, (t) => void times.push(`${name}@${t - start}`))))
      // Three bulk sends at 10/s take the slots 0, 100 and 200 ms.
      const fibers = [yield* bulk("b1"), yield* bulk("b2"), yield* bulk("b3")]
      yield* steps
      // A reply now: taken at once, however many bulk sends wait.
      yield* pace.conversational("pn-1")
      times.push(`reply@${(yield* Clock.currentTimeMillis) - start}`)
      // The bulk sends still waiting move back one slot each, and so does the next one.
      fibers.push(yield* bulk("b4"))
      yield* steps
      for (let t = 0; t < 500; t += 50) yield* Effect.andThen(TestClock.adjust("50 millis"), steps)
      yield* Fiber.joinAll(fibers)
      assert.deepStrictEqual(times, ["b1@0", "reply@0", "b2@200", "b3@300", "b4@400"])
    }).pipe(Effect.provide(SendPace.layer)))

  it.effect("leaves numbers no bulk sender paces alone", () =>
    Effect.gen(function*() {
      const pace = yield* SendPace
      yield* pace.conversational("pn-2")
      yield* pace.conversational("pn-2")
      const start = yield* Clock.currentTimeMillis
      // The first bulk send of the number is not held back by replies before it.
      yield* pace.bulk("pn-2", 10)
      assert.strictEqual((yield* Clock.currentTimeMillis) - start, 0)
    }).pipe(Effect.provide(SendPace.layer)))
})
