/**
 * Fixed-window counters shared by every host on one store (decisions 8.1: the
 * public invoke limit), so a limit holds across hosts instead of per process.
 */
import { Context, type Effect } from "effect"

export interface RateLimitTake {
  /** False when the window already held `limit` takes: nothing was counted. */
  readonly admitted: boolean
  /** Takes counted in the window after this one (`limit` when refused). */
  readonly count: number
}

export class RateLimits extends Context.Service<RateLimits, {
  /**
   * Counts one take of `key` in the window starting at `windowStart` (an ISO instant) unless it already holds
   * `limit`; atomic across processes sharing the store. A window's first take drops every window older than it (of any key), so the store holds about one window.
   */
  readonly take: (key: string, windowStart: string, limit: number) => Effect.Effect<RateLimitTake>
}>()("@parley/core/ports/RateLimits") {}
