/**
 * The pace of a number's sends in this process (decisions 8.2, issue 30 §2): bulk sends (broadcasts) wait for the
 * number's next free slot below its throughput; a send inside a conversation (a workflow's reply, the proxy's, an
 * inbox user's) never waits here and takes its slot first, pushing the bulk sends' next slot back by one. So
 * replies are never queued behind a broadcast on their number, and both together stay within its throughput.
 */
import { Clock, Context, Effect, Layer } from "effect"

interface Bucket {
  /** The next slot a bulk send may take (ms). */
  next: number
  /** The gap between two slots at the pace bulk senders asked for (ms). */
  gap: number
}

export class SendPace extends Context.Service<SendPace, {
  /** Waits for the number's next slot at `perSecond`, after every conversational send taken meanwhile. */
  readonly bulk: (phoneNumberId: string, perSecond: number) => Effect.Effect<void>
  /** A conversational send's slot: taken at once; bulk sends of the number move back by one slot. */
  readonly conversational: (phoneNumberId: string) => Effect.Effect<void>
}>()("@parley/core/messaging/numbers/SendPace") {
  static readonly layer = Layer.sync(SendPace, () => {
    // Only numbers a bulk sender paced have a bucket: with none, a conversational send has nothing to push back.
    const buckets = new Map<string, Bucket>()
    return SendPace.of({
      bulk: (phoneNumberId, perSecond) =>
        Effect.gen(function*() {
          const now = yield* Clock.currentTimeMillis
          const gap = 1000 / perSecond
          const bucket = buckets.get(phoneNumberId) ?? { next: now, gap }
          bucket.gap = gap
          const slot = Math.max(now, bucket.next)
          bucket.next = slot + gap
          buckets.set(phoneNumberId, bucket)
          if (slot > now) yield* Effect.sleep(slot - now)
        }),
      conversational: (phoneNumberId) =>
        Effect.gen(function*() {
          const bucket = buckets.get(phoneNumberId)
          if (bucket === undefined) return
          const now = yield* Clock.currentTimeMillis
          // A bucket idle for a while is forgotten, so the map holds the numbers bulk senders use now.
          if (bucket.next < now - 60_000) {
            buckets.delete(phoneNumberId)
            return
          }
          bucket.next = Math.max(now, bucket.next) + bucket.gap
        })
    })
  })
}
