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
 *
 * While sends inside conversations are in flight, and for `holdMs` after the last one ended or a contact's message
 * arrived (its reply's routing and step come before its send), the window is at most `whileConversing`: on a busy
 * host the latency does not tell a reply's waits from the broadcast's (every send is slowed alike), so the broadcast
 * yields whenever a reply is under way, and takes its width back once none was for `holdMs` (conversations come in
 * turns: the hold keeps the next reply's way clear). The sends made meanwhile say
 * nothing about the window's own width and are left out of its latency.
 */
import type { Conversing } from "../messaging/ConversationalSends.ts"


export interface SendWindowOptions {
  readonly max: number
  readonly min: number
  /** A send may take this many times its baseline before the window shrinks. */
  readonly tolerance: number
  /** And this many ms more: a send of a millisecond or two may double without anything queued. */
  readonly slackMs: number
  /** Sends allowed in flight while conversational sends are (or were within `holdMs`). */
  readonly whileConversing: number
  readonly holdMs: number
}

export interface SendWindow {
  /** Sends allowed in flight at `nowMs`, given the conversations' sends. */
  readonly limit: (nowMs: number, conversing: Conversing) => number
  /**
   * One send's time (ms, from handing it to `Outbound` to its outcome), ended at `nowMs` with the conversations' sends
   * as they are then; the window that follows.
   */
  readonly observe: (ms: number, nowMs: number, conversing: Conversing) => number
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
  const yielding = (nowMs: number, c: Conversing) =>
    c.inFlight > 0 || (c.lastSeenMs !== undefined && nowMs - c.lastSeenMs < options.holdMs)
  const current = (nowMs: number, c: Conversing) =>
    yielding(nowMs, c) ? Math.min(Math.round(limit), options.whileConversing) : Math.round(limit)
  return {
    limit: current,
    observe: (ms, nowMs, conversing) => {
      if (yielding(nowMs, conversing)) {
        seen = 0
        return current(nowMs, conversing)
      }
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
      return current(nowMs, conversing)
    }
  }
}
