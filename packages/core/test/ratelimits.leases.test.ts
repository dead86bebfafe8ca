/**
 * The general limit counted in shares leased from the shared store (`LeasedCounters` under `ApiRateLimits`), with
 * two `ApiRateLimits` over one store standing for two hosts: never past the limit in all, refused at most
 * `leaseSize` takes early per other host, a store write per share instead of per request. Time is the TestClock's.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { ApiRateLimits, ApiRateLimitSettings, leaseSize } from "../src/projects/ApiRateLimits.ts"
import { layerMemoryRateLimits } from "../src/ports/MemoryRateLimits.ts"
import { MemoryStore } from "../src/ports/MemoryStore.ts"
import { RateLimits } from "../src/ports/RateLimits.ts"

/** A host's `ApiRateLimits` over the shared store, counting the store writes it makes. */
const host = (store: Context.Context<MemoryStore>, writes: { count: number }) =>
  Layer.build(ApiRateLimits.layer.pipe(
    Layer.provide(Layer.effect(
      RateLimits,
      Effect.map(Effect.service(RateLimits), (limits) =>
        RateLimits.of({
          take: (...args) => Effect.andThen(Effect.sync(() => writes.count++), limits.take(...args)),
          lease: (...args) => Effect.andThen(Effect.sync(() => writes.count++), limits.lease(...args))
        }))
    ).pipe(Layer.provide(layerMemoryRateLimits))),
    Layer.provide(Layer.succeedContext(store))
  )).pipe(Effect.map((context) => Context.get(context, ApiRateLimits)))

const twoHosts = Effect.gen(function*() {
  const store = yield* Layer.build(MemoryStore.layer)
  const writes = [{ count: 0 }, { count: 0 }]
  return { hosts: [yield* host(store, writes[0]!), yield* host(store, writes[1]!)], writes }
})

const limited = (perMinute: number) => Effect.provideService(ApiRateLimitSettings, { perMinute, startsPerSecond: 1 })

describe("rate limits in leased shares", () => {
  it.effect("two hosts admit at most the limit together, at most a share early per other host", () =>
    Effect.gen(function*() {
      const { hosts, writes } = yield* twoHosts
      const limit = 1_000
      const share = leaseSize(limit)
      assert.strictEqual(share, 20)
      // 1,500 requests of one key, spread over both hosts, many at once.
      const answers = yield* Effect.forEach(
        Array.from({ length: 1_500 }),
        (_, i) => hosts[i % 2]!.admitRequest("key_1"),
        { concurrency: 64 }
      )
      const admitted = answers.filter((a) => a.admitted).length
      assert.isAtMost(admitted, limit)
      assert.isAtLeast(admitted, limit - share * (hosts.length - 1))
      // A write per share (and one per host finding the window full), not per request.
      const total = writes[0]!.count + writes[1]!.count
      assert.isAtMost(total, Math.ceil(limit / share) + hosts.length)
      // Refused from memory once a host found the window full: no more writes.
      yield* hosts[0]!.admitRequest("key_1")
      yield* hosts[1]!.admitRequest("key_1")
      assert.strictEqual(writes[0]!.count + writes[1]!.count, total)
      // The next minute admits again.
      yield* TestClock.adjust("1 minute")
      assert.isTrue((yield* hosts[1]!.admitRequest("key_1")).admitted)
    }).pipe(limited(1_000), Effect.scoped))

  it.effect("takes of a host wait on its one lease in flight; headers count the other host's shares as used", () =>
    Effect.gen(function*() {
      const { hosts, writes } = yield* twoHosts
      const first = yield* Effect.forEach(Array.from({ length: 10 }), () => hosts[0]!.admitRequest("key_2"), {
        concurrency: "unbounded"
      })
      assert.strictEqual(writes[0]!.count, 1)
      assert.deepStrictEqual(first.map((a) => a.remaining).sort((a, b) => b - a), [499, 498, 497, 496, 495, 494, 493, 492, 491, 490])
      // The other host's share starts after the first's ten.
      assert.strictEqual((yield* hosts[1]!.admitRequest("key_2")).remaining, 489)
      const reset = first[0]!.reset
      assert.strictEqual(reset % 60, 0)
    }).pipe(limited(500), Effect.scoped))

  it.effect("a small limit leases one take at a time: exact, as before leases", () =>
    Effect.gen(function*() {
      const { hosts, writes } = yield* twoHosts
      const answers = []
      for (let i = 0; i < 6; i++) answers.push(yield* hosts[i % 2]!.admitRequest("key_3"))
      assert.deepStrictEqual(answers.map((a) => [a.admitted, a.remaining]), [
        [true, 4], [true, 3], [true, 2], [true, 1], [true, 0], [false, 0]
      ])
      assert.strictEqual(writes[0]!.count + writes[1]!.count, 6)
      assert.strictEqual(answers[5]!.retryAfter, 60)
    }).pipe(limited(5), Effect.scoped))
})
