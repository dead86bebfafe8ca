/**
 * The background work of webhooks, on the `JobQueue`:
 *
 * - the relay's `webhooks` subscriber (`outbox.webhooks`): the deliveries of
 *   each domain event webhooks consume;
 * - `webhooks.delivery`: one attempt of one delivery;
 * - `webhooks.buffer-flush`: a buffer's batch, once due;
 * - the relay's `webhooks-inactivity` subscriber and `webhooks.inactivity`:
 *   the `msg.conversation.inactive` timers (`Inactivity.ts`);
 * - `webhooks.maintenance`, daily at 00:00 UTC and once when a host starts:
 *   drops deliveries older than the log's 30 days (one chain across hosts,
 *   the dedupe key names the day, as for events);
 * - `webhooks.sweep`, every minute (one chain the same way): queues again
 *   attempts and flushes whose job was lost between a commit and its enqueue.
 */
import { Clock, Effect, Layer } from "effect"
import { decodingPayload, JobQueue, SlotJob } from "../ports/JobQueue.ts"
import { DomainEventSubscribers } from "../outbox/Relay.ts"
import { AttemptJob, BUFFER_FLUSH_QUEUE, DELIVERY_QUEUE, FlushJob, WebhookDeliveries } from "./Deliveries.ts"
import { WEBHOOK_SOURCE_TYPES } from "./Payloads.ts"
import { INACTIVITY_QUEUE, INACTIVITY_SUBSCRIBER, InactivityJob, makeWebhookInactivity } from "./Inactivity.ts"
import { MSG_CONVERSATION_ACTIVITY } from "../messaging/DomainEvents.ts"

/** Daily and every minute (`SlotJob`). */
export const WEBHOOKS_MAINTENANCE_QUEUE = "webhooks.maintenance"
export const WEBHOOKS_SWEEP_QUEUE = "webhooks.sweep"
export const WEBHOOKS_SUBSCRIBER = "webhooks"

const DAY_MS = 24 * 3_600_000
const MINUTE_MS = 60_000

export interface WebhooksWorkersOptions {
  /**
   * Attempts running at once in this process; default 128: they mostly wait, on the network and on the
   * statements they share with each other (the more wait together, the fewer statements).
   */
  readonly deliveryConcurrency?: number | undefined
}

/** Subscribes webhooks to the relay and works their queues for the life of the layer. */
export const layerWebhooksWorkers = (options: WebhooksWorkersOptions = {}) =>
  Layer.effectDiscard(Effect.gen(function*() {
    const jobs = yield* JobQueue
    const subscribers = yield* DomainEventSubscribers
    const deliveries = yield* WebhookDeliveries

    // Many at once: a dispatch mostly waits, on its first attempts and on the delivery insert it shares with the
    // others (fewer statements); as many as first attempts may be in flight.
    // What each subscriber wants is declared with the services (`Interest.ts`).
    yield* subscribers.subscribe(WEBHOOKS_SUBSCRIBER, WEBHOOK_SOURCE_TYPES, deliveries.dispatch, { concurrency: 512 })

    // `msg.conversation.inactive`: timers armed by every stored message (see `Inactivity.ts`).
    const inactivity = yield* makeWebhookInactivity
    yield* subscribers.subscribe(INACTIVITY_SUBSCRIBER, [MSG_CONVERSATION_ACTIVITY], inactivity.arm, { concurrency: 8 })
    yield* jobs.work(INACTIVITY_QUEUE, { concurrency: 8 }, decodingPayload(InactivityJob, (payload) => inactivity.fire(payload)))

    yield* jobs.work(
      DELIVERY_QUEUE,
      { concurrency: options.deliveryConcurrency ?? 128 },
      decodingPayload(AttemptJob, (payload) => deliveries.attempt(payload))
    )

    yield* jobs.work(BUFFER_FLUSH_QUEUE, { concurrency: 4 }, decodingPayload(FlushJob, (payload) => deliveries.flush(payload)))

    const maintenance = Effect.fn("WebhooksJobs.maintenance")(function*(slot: number) {
      const now = yield* Clock.currentTimeMillis
      const next = Math.max(slot, Math.floor(now / DAY_MS)) + 1
      yield* jobs.enqueue(WEBHOOKS_MAINTENANCE_QUEUE, { slot: next }, { runAt: next * DAY_MS, dedupeKey: `slot:${next}` })
      const pruned = yield* deliveries.prune
      yield* Effect.logDebug("Webhooks maintenance done").pipe(Effect.annotateLogs({ pruned }))
    })

    yield* jobs.work(WEBHOOKS_MAINTENANCE_QUEUE, { concurrency: 1 }, decodingPayload(SlotJob, (payload) => maintenance(payload.slot)))

    const sweep = Effect.fn("WebhooksJobs.sweep")(function*(slot: number) {
      const now = yield* Clock.currentTimeMillis
      const next = Math.max(slot, Math.floor(now / MINUTE_MS)) + 1
      yield* jobs.enqueue(WEBHOOKS_SWEEP_QUEUE, { slot: next }, { runAt: next * MINUTE_MS, dedupeKey: `minute:${next}` })
      yield* deliveries.sweep
    })

    yield* jobs.work(WEBHOOKS_SWEEP_QUEUE, { concurrency: 1 }, decodingPayload(SlotJob, (payload) => sweep(payload.slot)))

    const now = yield* Clock.currentTimeMillis
    const today = Math.floor(now / DAY_MS)
    yield* jobs.enqueue(WEBHOOKS_MAINTENANCE_QUEUE, { slot: today }, { dedupeKey: `slot:${today}` })
    const minute = Math.floor(now / MINUTE_MS)
    yield* jobs.enqueue(WEBHOOKS_SWEEP_QUEUE, { slot: minute }, { dedupeKey: `minute:${minute}` })
  }))
