/**
 * Fixed-window counters kept in the host and settled with a shared store by leases: a key's first take in a window
 * leases a share of it (`lease`: at most `leaseSize(limit)` takes, never past the limit in all), and the takes after
 * it are admitted from memory until the share is spent, then the next share is leased. A request pays a store write
 * once per share instead of once per take. Because the store never grants past the limit, every host together
 * admits at most `limit` takes a window; the price is the shares other hosts hold unspent: a key can be refused
 * while up to `leaseSize(limit)` takes per other host were leased and not (yet) used (decisions "Rate limits without
 * a write per request").
 *
 * Concurrent takes of one key share one lease in flight; a window found full is refused from memory for the rest of
 * it. Time is the `Clock`'s.
 */
import { Clock, Deferred, Effect } from "effect"

export interface LeasedTake {
  readonly admitted: boolean
  /** The take's number in the window (takes leased by every host before it count), `limit` when refused. */
  readonly count: number
  /** The instant the take was judged at (epoch ms). */
  readonly now: number
}

export interface LeasedCounters {
  /** One take of `key` in its window of `windowMs` under `limit`. */
  readonly take: (key: string, windowMs: number, limit: number) => Effect.Effect<LeasedTake>
}

interface Share {
  readonly windowStart: number
  readonly windowEnd: number
  readonly limit: number
  /** The next take's number, and the last one leased: the share is spent when next > last. */
  next: number
  last: number
  full: boolean
  leasing: Deferred.Deferred<void> | undefined
}

export const make = (options: {
  /** Asks the store for up to `wanted` takes of the window starting at `windowStart` (epoch ms). */
  readonly lease: (key: string, windowStart: number, limit: number, wanted: number) => Effect.Effect<{
    readonly granted: number
    readonly count: number
  }>
  readonly leaseSize: (limit: number) => number
}): Effect.Effect<LeasedCounters> =>
  Effect.sync(() => {
    const shares = new Map<string, Share>()
    let sweptAt = 0

    /** Drops the shares of windows that ended; at most once a minute, on a lease (a store round trip anyway). */
    const sweep = (now: number) => {
      if (now - sweptAt < 60_000) return
      sweptAt = now
      for (const [key, share] of shares) if (share.windowEnd <= now) shares.delete(key)
    }

    const shareOf = (key: string, windowMs: number, limit: number, now: number): Share => {
      const windowStart = Math.floor(now / windowMs) * windowMs
      const current = shares.get(key)
      if (current !== undefined && current.windowStart === windowStart && current.limit === limit) return current
      const fresh: Share = {
        windowStart,
        windowEnd: windowStart + windowMs,
        limit,
        next: 1,
        last: 0,
        full: false,
        leasing: undefined
      }
      shares.set(key, fresh)
      return fresh
    }

    /**
     * Leases the next share. The share is marked as leasing in the same synchronous step that found it spent, so a
     * host never has two leases of one key in flight (the second would replace the first's takes); uninterruptible,
     * so a request that goes away never strands the takes waiting on it.
     */
    const leaseFor = (key: string, share: Share, now: number) => {
      const done = Deferred.makeUnsafe<void>()
      share.leasing = done
      sweep(now)
      return options.lease(key, share.windowStart, share.limit, Math.max(1, options.leaseSize(share.limit))).pipe(
        Effect.tap((granted) =>
          Effect.sync(() => {
            if (granted.granted === 0) share.full = true
            else {
              share.next = granted.count - granted.granted + 1
              share.last = granted.count
            }
          })
        ),
        Effect.ensuring(Effect.sync(() => {
          share.leasing = undefined
          Deferred.doneUnsafe(done, Effect.void)
        })),
        Effect.uninterruptible
      )
    }

    /** The take judged from memory at `now`, or the wait (a lease, or another take's) after which to judge again. */
    const judge = (key: string, windowMs: number, limit: number, now: number): LeasedTake | Effect.Effect<void> => {
      const share = shareOf(key, windowMs, limit, now)
      if (share.next <= share.last) return { admitted: true, count: share.next++, now }
      if (share.full || limit <= 0) return { admitted: false, count: limit, now }
      return share.leasing !== undefined ? Deferred.await(share.leasing) : leaseFor(key, share, now)
    }

    // Almost every take is judged from memory: one read of the clock, no generator (every API request takes one).
    const take = (key: string, windowMs: number, limit: number): Effect.Effect<LeasedTake> =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const judged = judge(key, windowMs, limit, now)
        return Effect.isEffect(judged) ? Effect.andThen(judged, take(key, windowMs, limit)) : Effect.succeed(judged)
      })

    return { take }
  })
