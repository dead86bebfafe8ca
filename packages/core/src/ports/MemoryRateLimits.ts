/** `RateLimits` in memory: one counter per (key, window) in the shared `MemoryStore`. */
import { Effect, Layer } from "effect"
import { RateLimits } from "./RateLimits.ts"
import { MemoryStore, memoryTable } from "./MemoryStore.ts"

interface RateLimitRow {
  readonly key: string
  readonly window_start: number
  readonly count: number
}

const Windows = memoryTable<RateLimitRow>("rate_limits")

export const layerMemoryRateLimits = Layer.effect(
  RateLimits,
  Effect.gen(function*() {
    const store = yield* MemoryStore
    return RateLimits.of({
      take: Effect.fn("RateLimits.take")((key: string, windowStart: string, limit: number) =>
        store.run((db) => {
          const start = Date.parse(windowStart)
          const id = `${key}\u0000${start}`
          const current = db.get(Windows, id)
          if (current === undefined) {
            // A window's first take drops those over a minute older (as the Postgres adapter).
            for (const row of db.all(Windows)) {
              if (row.window_start < start - 60_000) db.remove(Windows, `${row.key}\u0000${row.window_start}`)
            }
          }
          const count = current?.count ?? 0
          if (count >= limit) return { admitted: false, count: limit }
          db.put(Windows, id, { key, window_start: start, count: count + 1 })
          return { admitted: true, count: count + 1 }
        })
      )
    })
  })
)
