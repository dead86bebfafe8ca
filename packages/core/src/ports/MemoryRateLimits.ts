/** `RateLimits` in memory: one counter per (key, window) in the shared `MemoryStore`. */
import { Effect, Layer } from "effect"
import { type RateLimitLease, RateLimits } from "./RateLimits.ts"
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
    const lease = Effect.fn("RateLimits.lease")((key: string, windowStart: string, limit: number, wanted: number) =>
      store.run((db): RateLimitLease => {
        const start = Date.parse(windowStart)
        const id = `${key}\u0000${start}`
        const current = db.get(Windows, id)
        const count = current?.count ?? 0
        const granted = Math.max(0, Math.min(wanted, limit - count))
        if (granted === 0) return { granted: 0, count: limit }
        if (current === undefined) {
          // A window's first take drops those over a minute older (as the Postgres adapter).
          for (const row of db.all(Windows)) {
            if (row.window_start < start - 60_000) db.remove(Windows, `${row.key}\u0000${row.window_start}`)
          }
        }
        db.put(Windows, id, { key, window_start: start, count: count + granted })
        return { granted, count: count + granted }
      })
    )
    return RateLimits.of({
      lease,
      take: (key, windowStart, limit) =>
        Effect.map(lease(key, windowStart, limit, 1), (l) => ({ admitted: l.granted === 1, count: l.count }))
    })
  })
)
