/**
 * How many broadcast sends a host keeps in flight (issue 30 §2): as many as keep its sends moving without queueing
 * inside the host. A send's time is its work plus its waits; once the host (its event loop, its connections, the
 * database beside it on the same cores) is saturated, more sends in flight add only waits — and every reply inside a
 * conversation then waits behind them at each of its own steps. So the window follows the sends' latency: it shrinks
 * while a send takes more than `tolerance` times the least it took lately (plus `slackMs`), and grows back (to
 * `max`) while it does not. A slow network alone (every send long, none longer than usual) keeps it wide: the pace stays the number's.
 *
 * Once per round (as many sends as the window holds), like a gradient limit: the new window is the old one scaled by
 * the ratio of the latency allowed to the latency seen (between 0.5 and 1), plus its square root as headroom to grow,
 * half-way smoothed.
 */

export interface SendWindowOptions {
  readonly max: number
  readonly min: number
  /** A send may take this many times its baseline before the window shrinks. */
  readonly tolerance: number
  /** And this many ms more: a send of a millisecond or two may double without anything queued. */
  readonly slackMs: number
}

export interface SendWindow {
  /** Sends allowed in flight now. */
  readonly limit: () => number
  /** One send's time (ms, from handing it to `Outbound` to its outcome), ended at `nowMs`; the window that follows. */
  readonly observe: (ms: number, nowMs: number) => number
}

/** Weight of one send in the recent latency: about the last 10 sends. */
const RECENT = 0.1
/**
 * How fast the baseline (the least recent latency seen) rises to a latency that stays higher: by a share of the gap
 * per this many ms, so a network that became slower for good is followed within a minute or so, while the window
 * stays narrow for as long as a saturated host's sends wait (they would wait again at once if it widened).
 */
const DRIFT_MS = 30_000

export const makeSendWindow = (options: SendWindowOptions): SendWindow => {
  let limit = options.max
  let recent: number | undefined
  let baseline: number | undefined
  let seen = 0
  let lastMs: number | undefined
  return {
    limit: () => Math.round(limit),
    observe: (ms, nowMs) => {
      recent = recent === undefined ? ms : recent + (ms - recent) * RECENT
      const drift = lastMs === undefined ? 0 : Math.min(1, Math.max(0, nowMs - lastMs) / DRIFT_MS)
      lastMs = nowMs
      baseline = baseline === undefined ? recent : Math.min(recent, baseline + (recent - baseline) * drift)
      if (++seen >= limit) {
        seen = 0
        const allowed = options.tolerance * baseline + options.slackMs
        const gradient = Math.min(1, Math.max(0.5, allowed / Math.max(recent, allowed)))
        const next = limit * gradient + Math.sqrt(limit)
        limit = Math.min(options.max, Math.max(options.min, (limit + next) / 2))
      }
      return Math.round(limit)
    }
  }
}
