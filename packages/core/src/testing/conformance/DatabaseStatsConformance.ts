/**
 * The behaviour every `DatabaseStats` adapter owes: counts of connections by a bounded client name and a state from the
 * fixed list, each client and state once. `holdsConnections`: the adapter stands for a database this test is using,
 * so it must count at least the connection that asks.
 */
import { assert, layer } from "@effect/vitest"
import { Effect, type Layer } from "effect"
import { CONNECTION_STATES, DatabaseStats } from "../../ports/DatabaseStats.ts"

export const databaseStatsConformance = <E>(
  name: string,
  storage: Layer.Layer<DatabaseStats, E>,
  options: { readonly holdsConnections: boolean }
): void =>
  layer(storage, { excludeTestServices: true })(name, (it) => {
    it.effect("counts connections by client and state, each pair once, within the fixed lists", () =>
      Effect.gen(function*() {
        const connections = yield* (yield* DatabaseStats).connections
        for (const c of connections) {
          assert.include(["parley", "parley-jobs", "other"], c.application)
          assert.include(CONNECTION_STATES, c.state)
          assert.isTrue(Number.isInteger(c.count) && c.count > 0, `${c.application}/${c.state}: ${c.count}`)
        }
        const pairs = connections.map((c) => `${c.application}/${c.state}`)
        assert.strictEqual(new Set(pairs).size, pairs.length, "each client and state once")
        if (options.holdsConnections) {
          assert.isAtLeast(connections.filter((c) => c.state === "active").reduce((n, c) => n + c.count, 0), 1, "the asking one is active")
        } else {
          assert.deepStrictEqual(connections, [])
        }
      }))
  })
