/** The behaviour every `RateLimits` adapter owes (shared fixed windows, decisions 8.1), written once. */
import { assert, layer } from "@effect/vitest"
import { Effect, type Layer } from "effect"
import { RateLimits } from "../../ports/RateLimits.ts"
import { at, uniqueId } from "./fixtures.ts"

const minute = 60_000

export const rateLimitsConformance = <E>(name: string, storage: Layer.Layer<RateLimits, E>): void =>
  layer(storage, { excludeTestServices: true })(name, (it) => {
    it.effect("admits up to the limit in a window, then refuses without counting", () =>
      Effect.gen(function*() {
        const limits = yield* RateLimits
        const key = uniqueId("fn")
        const takes = []
        for (let i = 0; i < 4; i++) takes.push(yield* limits.take(key, at(0), 3))
        assert.deepStrictEqual(takes, [
          { admitted: true, count: 1 },
          { admitted: true, count: 2 },
          { admitted: true, count: 3 },
          { admitted: false, count: 3 }
        ])
        // Another key and the next window count on their own.
        assert.deepStrictEqual(yield* limits.take(uniqueId("fn"), at(0), 3), { admitted: true, count: 1 })
        assert.deepStrictEqual(yield* limits.take(key, at(minute), 3), { admitted: true, count: 1 })
        assert.deepStrictEqual(yield* limits.take(key, at(minute), 3), { admitted: true, count: 2 })
      }))

    it.effect("a limit raised within a window admits from the count reached", () =>
      Effect.gen(function*() {
        const limits = yield* RateLimits
        const key = uniqueId("fn")
        yield* limits.take(key, at(0), 1)
        assert.deepStrictEqual(yield* limits.take(key, at(0), 1), { admitted: false, count: 1 })
        assert.deepStrictEqual(yield* limits.take(key, at(0), 2), { admitted: true, count: 2 })
      }))

    it.effect("concurrent takes never admit more than the limit", () =>
      Effect.gen(function*() {
        const limits = yield* RateLimits
        const key = uniqueId("fn")
        const takes = yield* Effect.forEach(Array.from({ length: 40 }), () => limits.take(key, at(0), 25), { concurrency: "unbounded" })
        const admitted = takes.filter((t) => t.admitted)
        assert.strictEqual(admitted.length, 25)
        // Every admitted take saw its own count: none was counted twice.
        assert.deepStrictEqual(admitted.map((t) => t.count).sort((a, b) => a - b), Array.from({ length: 25 }, (_, i) => i + 1))
        assert.isTrue(takes.filter((t) => !t.admitted).every((t) => t.count === 25))
      }))

    it.effect("a lease grants what the window has left under the limit, shared with single takes", () =>
      Effect.gen(function*() {
        const limits = yield* RateLimits
        const key = uniqueId("api")
        assert.deepStrictEqual(yield* limits.lease(key, at(0), 25, 10), { granted: 10, count: 10 })
        assert.deepStrictEqual(yield* limits.take(key, at(0), 25), { admitted: true, count: 11 })
        assert.deepStrictEqual(yield* limits.lease(key, at(0), 25, 10), { granted: 10, count: 21 })
        // Only 4 are left: the lease is cut to them, then the full window grants nothing and counts nothing.
        assert.deepStrictEqual(yield* limits.lease(key, at(0), 25, 10), { granted: 4, count: 25 })
        assert.deepStrictEqual(yield* limits.lease(key, at(0), 25, 10), { granted: 0, count: 25 })
        assert.deepStrictEqual(yield* limits.take(key, at(0), 25), { admitted: false, count: 25 })
        // A raised limit grants from the count reached; a first lease larger than the limit is cut to it.
        assert.deepStrictEqual(yield* limits.lease(key, at(0), 30, 10), { granted: 5, count: 30 })
        assert.deepStrictEqual(yield* limits.lease(uniqueId("api"), at(0), 3, 10), { granted: 3, count: 3 })
        assert.deepStrictEqual(yield* limits.lease(uniqueId("api"), at(0), 0, 10), { granted: 0, count: 0 })
      }))

    it.effect("concurrent leases never grant more than the limit in all", () =>
      Effect.gen(function*() {
        const limits = yield* RateLimits
        const key = uniqueId("api")
        const leases = yield* Effect.forEach(
          Array.from({ length: 30 }),
          (_, i) => limits.lease(key, at(0), 100, 1 + (i % 7)),
          { concurrency: "unbounded" }
        )
        assert.strictEqual(leases.reduce((sum, l) => sum + l.granted, 0), 100)
        // Each grant is a distinct range of the window's takes: the counts after each, less the grant, never overlap.
        const ranges = leases.filter((l) => l.granted > 0).map((l) => [l.count - l.granted, l.count] as const)
          .sort((a, b) => a[0] - b[0])
        ranges.forEach(([from], i) => assert.strictEqual(from, i === 0 ? 0 : ranges[i - 1]![1]))
      }))

    it.effect("a window's first take drops the windows of every key that started over a minute before it", () =>
      Effect.gen(function*() {
        const limits = yield* RateLimits
        const key = uniqueId("fn")
        yield* limits.take(key, at(2 * minute), 1)
        assert.deepStrictEqual(yield* limits.take(key, at(2 * minute), 1), { admitted: false, count: 1 })
        // Shorter windows (a second) opening inside that minute leave it alone.
        yield* limits.take(uniqueId("burst"), at(2 * minute + 5_000), 1)
        yield* limits.take(uniqueId("burst"), at(3 * minute), 1)
        assert.deepStrictEqual(yield* limits.take(key, at(2 * minute), 1), { admitted: false, count: 1 })
        yield* limits.take(uniqueId("fn"), at(3 * minute + 1), 1)
        // Only a host whose clock lags would take an old window again: it starts from nothing.
        assert.deepStrictEqual(yield* limits.take(key, at(2 * minute), 1), { admitted: true, count: 1 })
      }))
  })
