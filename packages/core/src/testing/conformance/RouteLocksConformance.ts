/**
 * The behaviour every adapter of executions' `RouteLocks` owes, written once and run against each adapter: the
 * pair's lock lasts as long as the transaction that took it, no longer.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect, type Layer, Option } from "effect"
import { ExecutionsRepo } from "../../executions/ExecutionsRepo.ts"
import { RouteLocks } from "../../executions/RouteLocks.ts"
import { Transactor } from "../../ports/Transactor.ts"
import { uniqueId, waitsForHolder } from "./fixtures.ts"

export type RouteLocksPorts = Transactor | ExecutionsRepo | RouteLocks

/** Any statement: a store may send the lock with the transaction's next one. */
const read = Effect.gen(function*() {
  return yield* (yield* ExecutionsRepo).get(uniqueId("exe"))
})

const pair = () => [uniqueId("cfg"), uniqueId("ct")] as const

export const routeLocksConformance = <E>(name: string, storage: Layer.Layer<RouteLocksPorts, E>): void => {
  describe(name, () => {
    layer(storage, { excludeTestServices: true })("RouteLocks", (it) => {
      it.effect("holds a pair until the transaction that took it ends", () =>
        Effect.gen(function*() {
          const locks = yield* RouteLocks
          const [config, contact] = pair()
          assert.isTrue(
            yield* waitsForHolder(locks.lock(config, contact), locks.lock(config, contact), read),
            "the second taker waited for the first transaction"
          )
        }))

      it.effect("taken again in the same transaction, a pair is still held (no wait on itself)", () =>
        Effect.gen(function*() {
          const locks = yield* RouteLocks
          const [config, contact] = pair()
          const twice = Effect.andThen(locks.lock(config, contact), Effect.andThen(read, locks.lock(config, contact)))
          assert.isTrue(
            yield* waitsForHolder(twice, locks.lock(config, contact), read).pipe(Effect.timeout("5 seconds")),
            "the holder went on after taking its pair twice, and the second taker waited for it"
          )
        }))

      it.effect("outside a transaction holds nothing: a transaction takes the pair at once", () =>
        Effect.gen(function*() {
          const locks = yield* RouteLocks
          const tx = yield* Transactor
          const [config, contact] = pair()
          yield* locks.lock(config, contact)
          yield* read
          const taken = yield* tx.withTransaction(Effect.andThen(locks.lock(config, contact), read)).pipe(
            Effect.timeout("5 seconds"),
            Effect.option
          )
          assert.isTrue(Option.isSome(taken), "the transaction did not wait for a lock taken outside of one")
        }))

      it.effect("many transactions on one pair, each reading then writing what it read, lose no write", () =>
        Effect.gen(function*() {
          const locks = yield* RouteLocks
          const tx = yield* Transactor
          const [config, contact] = pair()
          let counter = 0
          const increment = tx.withTransaction(Effect.gen(function*() {
            yield* locks.lock(config, contact)
            yield* read
            const seen = counter
            yield* Effect.sleep("2 millis")
            counter = seen + 1
          }))
          yield* Effect.all(Array.from({ length: 12 }, () => increment), { concurrency: "unbounded", discard: true })
          assert.strictEqual(counter, 12)
        }))
    })
  })
}
