/**
 * What starts and feeds executions, as background work: the relay's
 * `executions-routing` subscriber (inbound messages to routing, every
 * `msg_event` type to observers), its `executions-events` subscriber
 * (`project_event` triggers), `executions.debounce` (a batch's timer) and
 * `executions.debounce-sweep` (every minute, one chain across hosts: batches
 * whose timer was lost). Subscribers must be in place before the relay takes
 * the outbox: `Parley.layerWorkers` provides this layer to the relay.
 */
import { Clock, Effect, Layer } from "effect"
import { MSG_MESSAGE_RECEIVED } from "../messaging/DomainEvents.ts"
import { DomainEventSubscribers } from "../outbox/Relay.ts"
import { decodingPayload, JobQueue, SlotJob } from "../ports/JobQueue.ts"
import { PROJECT_EVENT_RECORDED } from "../events/Event.ts"
import { EventTriggers } from "./EventTriggers.ts"
import { Observers } from "./Observers.ts"
import { DEBOUNCE_QUEUE, DebounceJob, InboundRouting } from "./Routing.ts"
import { EVENT_TRIGGERS_SUBSCRIBER, MSG_EVENT_TYPES, ROUTING_SUBSCRIBER } from "./TriggerIndex.ts"

/** Every minute (`SlotJob`). */
export const DEBOUNCE_SWEEP_QUEUE = "executions.debounce-sweep"

const MINUTE_MS = 60_000

export const layerRoutingWorkers = Layer.effectDiscard(Effect.gen(function*() {
  const jobs = yield* JobQueue
  const subscribers = yield* DomainEventSubscribers
  const routing = yield* InboundRouting
  const observers = yield* Observers
  const eventTriggers = yield* EventTriggers

  yield* subscribers.subscribe(
    ROUTING_SUBSCRIBER,
    MSG_EVENT_TYPES,
    // A received message was routed where it was recorded, unless no router was registered there (then it waits
    // `pending` for this entry); its observers start here either way.
    (entry) => Effect.andThen(observers.start(entry), entry.type === MSG_MESSAGE_RECEIVED ? routing.received(entry) : Effect.void),
    { concurrency: 32 }
  )
  yield* subscribers.subscribe(EVENT_TRIGGERS_SUBSCRIBER, [PROJECT_EVENT_RECORDED], (entry) => Effect.asVoid(eventTriggers.start(entry)), {
    concurrency: 16
  })

  yield* jobs.work(DEBOUNCE_QUEUE, { concurrency: 16 }, decodingPayload(DebounceJob, (p) => routing.release(p)))

  const sweep = Effect.fn("RoutingJobs.sweep")(function*(slot: number) {
    const now = yield* Clock.currentTimeMillis
    const next = Math.max(slot, Math.floor(now / MINUTE_MS)) + 1
    yield* jobs.enqueue(DEBOUNCE_SWEEP_QUEUE, { slot: next }, { runAt: next * MINUTE_MS, dedupeKey: `minute:${next}` })
    yield* routing.sweep
  })
  yield* jobs.work(DEBOUNCE_SWEEP_QUEUE, { concurrency: 1 }, decodingPayload(SlotJob, (p) => sweep(p.slot)))
  const minute = Math.floor((yield* Clock.currentTimeMillis) / MINUTE_MS)
  yield* jobs.enqueue(DEBOUNCE_SWEEP_QUEUE, { slot: minute }, { dedupeKey: `minute:${minute}` })
}))
