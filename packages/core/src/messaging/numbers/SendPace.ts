/**
 * The pace of a number's sends in this process (decisions 8.2, issue 30 §2): bulk sends (broadcasts) wait for the
 * number's next free slot below its throughput; a send inside a conversation (a workflow's reply, the proxy's, an
 * inbox user's) never waits here and takes a slot first: every bulk send still waiting, and every later one, moves
 * back by one slot. So replies are never queued behind a broadcast on their number, and both together stay within
 * the pace the broadcast asked for.
 */
import { Clock, Context, Effect, Layer } from "effect"

interface Bucket {
  /** The next slot a bulk send may reserve (ms). */
  next: number
  /** The gap between two slots at the pace bulk senders asked for (ms). */
  gap: number
  /** Time given to conversational sends so far (ms): a waiting bulk send that finds it grew waits that much more. */
  given: number
}

/** A bucket no bulk send used for this long is forgotten, so the map holds the numbers broadcasts use now. */
const IDLE_MS = 60_000

export class SendPace extends Context.Service<SendPace, {
  /** Waits for the number's next slot at `perSecond`, after every conversational send taken meanwhile. */
  readonly bulk: (phoneNumberId: string, perSecond: number) => Effect.Effect<void>
  /** A conversational send's slot: taken at once; the number's bulk sends move back by one slot. */
  readonly conversational: (phoneNumberId: string) => Effect.Effect<void>
}>()("@parley/core/messaging/numbers/SendPace") {
  static readonly layer = Layer.sync(SendPace, () => {
    // Only numbers a bulk sender paces have a bucket: with none, a conversational send has nothing to push back.
    const buckets = new Map<string, Bucket>()
    return SendPace.of({
      bulk: (phoneNumberId, perSecond) =>
        Effect.gen(function*() {
          let now = yield* Clock.currentTimeMillis
          const gap = 1000 / perSecond
          const bucket = buckets.get(phoneNumberId) ?? { next: now, gap, given: 0 }
          bucket.gap = gap
          buckets.set(phoneNumberId, bucket)
          let slot = Math.max(now, bucket.next)
          bucket.next = slot + gap
          let seen = bucket.given
          for (;;) {
            if (slot > now) yield* Effect.sleep(slot - now)
            now = yield* Clock.currentTimeMillis
            if (bucket.given === seen) return
            // Replies took slots while this send waited: it goes that much later.
            slot = now + bucket.given - seen
            seen = bucket.given
          }
        }),
      conversational: (phoneNumberId) =>
        Effect.gen(function*() {
          const bucket = buckets.get(phoneNumberId)
          if (bucket === undefined) return
          const now = yield* Clock.currentTimeMillis
          if (bucket.next < now - IDLE_MS) {
            buckets.delete(phoneNumberId)
            return
          }
          bucket.given += bucket.gap
          bucket.next = Math.max(now, bucket.next) + bucket.gap
        })
    })
  })
}
