/**
 * Fixed-window counters shared by every host on one store (decisions 8.1: the
 * general per-key limit, the execution start burst, the public invoke limit),
 * so a limit holds across hosts instead of per process. Windows last at most a
 * minute.
 */
import { Context, type Effect } from "effect"

export interface RateLimitTake {
  /** False when the window already held `limit` takes: nothing was counted. */
  readonly admitted: boolean
  /** Takes counted in the window after this one (`limit` when refused). */
  readonly count: number
}

export interface RateLimitLease {
  /** Takes granted: `min(wanted, limit - count before)`, 0 when the window was full (nothing counted then). */
  readonly granted: number
  /** Takes counted in the window after this grant (`limit` when nothing was granted). */
  readonly count: number
}

export class RateLimits extends Context.Service<RateLimits, {
  /**
   * Counts one take of `key` in the window starting at `windowStart` (an ISO instant) unless it already holds
   * `limit`; atomic across processes sharing the store. A window's first take drops the windows (of any key) that
   * started more than a minute before it, so the store holds about a minute of windows.
   */
  readonly take: (key: string, windowStart: string, limit: number) => Effect.Effect<RateLimitTake>
  /**
   * Counts up to `wanted` takes at once (a host's share of the window, admitted from memory afterwards): as many as
   * the window has left under `limit`, atomically across processes, so the shares granted never add up past it.
   * Prunes old windows as `take` does; `take` is a lease of one.
   */
  readonly lease: (key: string, windowStart: string, limit: number, wanted: number) => Effect.Effect<RateLimitLease>
}>()("@parley/core/ports/RateLimits") {}
