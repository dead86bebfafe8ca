import { MessagingLocks, routeLock, RouteLocks } from "@parley/core"
import { routeLocksConformance, uniqueId, waitsForHolder } from "@parley/core/testing/conformance"
import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { layerStorage } from "../src/Storage.ts"
import { layerTestDatabase } from "./pg.ts"

const storage = layerStorage.pipe(Layer.provideMerge(layerTestDatabase))

routeLocksConformance("route locks (postgres)", storage)

// A rolling upgrade runs hosts that took route keys through `MessagingLocks` beside hosts taking `RouteLocks`:
// one pair must be one lock for both.
describe("route locks beside hosts of the version before RouteLocks (postgres)", () => {
  layer(storage, { excludeTestServices: true })("one pair, one lock", (it) => {
    const read = Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql`SELECT 1`
    }).pipe(Effect.orDie)

    it.effect("a route key taken through MessagingLocks excludes RouteLocks' lock of the pair, and the other way round", () =>
      Effect.gen(function*() {
        const route = yield* RouteLocks
        const messaging = yield* MessagingLocks
        const [config, contact] = [uniqueId("cfg"), uniqueId("ct")]
        const before = messaging.lock(routeLock(config, contact))
        const after = route.lock(config, contact)
        assert.isTrue(yield* waitsForHolder(before, after, read), "RouteLocks waited for the earlier version's holder")
        assert.isTrue(yield* waitsForHolder(after, before, read), "the earlier version waited for RouteLocks' holder")
      }))

    it.effect("another pair is another lock: no wait", () =>
      Effect.gen(function*() {
        const route = yield* RouteLocks
        const [config, contact] = [uniqueId("cfg"), uniqueId("ct")]
        assert.isFalse(
          yield* waitsForHolder(route.lock(config, contact), route.lock(config, uniqueId("ct")), read),
          "a transaction on another pair went on while the first held its pair"
        )
      }))
  })
})
