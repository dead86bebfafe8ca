/**
 * `project_event` triggers (decisions 2.6, 10.1): a recorded project event
 * (its `project_event.recorded` domain event, relayed to the
 * `executions-events` subscriber, so a restart loses none) starts one
 * execution per active trigger of an active workflow whose event name and
 * property filter match. The run follows the event's conversation when it
 * has one (its number and contact), else it runs without a channel.
 *
 * Chains: events emitted inside an event-triggered run carry that run's
 * depth (`system.event_chain_depth`); an event at depth 5 starts nothing and
 * the skipped triggers are logged. A repeated delivery starts nothing new
 * (dedupe key per trigger and event).
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { EventPropertyValue } from "../events/Event.ts"
import { Messaging } from "../messaging/Messaging.ts"
import type { DomainEvent } from "../ports/Outbox.ts"
import { StoredWorkflows } from "../workflows/StoredWorkflows.ts"
import { Launcher } from "./Launcher.ts"
import { type Channel, channelOf, launchEach } from "./Observers.ts"
import { ActiveTriggers, matchesEvent } from "./TriggerIndex.ts"

/** Events at this depth start no runs (decisions 10.1). */
export const MAX_EVENT_CHAIN_DEPTH = 5

/** `project_event.recorded` (`events/Event.ts`, `ProjectEventRecordedPayload`). */
const Recorded = Schema.Struct({
  event: Schema.Struct({
    id: Schema.String,
    name: Schema.String,
    occurred_at: Schema.String,
    conversation_id: Schema.NullOr(Schema.String),
    properties: Schema.Record(Schema.String, EventPropertyValue)
  }),
  chain_depth: Schema.optionalKey(Schema.Int)
})
const decodeRecorded = Schema.decodeUnknownOption(Recorded)

export class EventTriggers extends Context.Service<EventTriggers, {
  /** Starts the runs a recorded project event triggers; answers how many started. */
  readonly start: (entry: DomainEvent) => Effect.Effect<number>
}>()("@parley/core/executions/EventTriggers") {
  static readonly layer = Layer.effect(
    EventTriggers,
    Effect.gen(function*() {
      const triggers = yield* ActiveTriggers
      const launcher = yield* Launcher
      const repos = yield* Effect.context<Messaging | StoredWorkflows>()

      const start = Effect.fn("EventTriggers.start")(function*(entry: DomainEvent) {
        const decoded = decodeRecorded(entry.payload)
        if (entry.project_id === null || Option.isNone(decoded)) {
          yield* Effect.logWarning("Dropped a project event entry that does not decode").pipe(Effect.annotateLogs({ entry: entry.id }))
          return 0
        }
        const projectId = entry.project_id
        const { chain_depth: depth = 0, event } = decoded.value
        const matching = (yield* triggers.list(projectId, "project_event")).filter((t) => matchesEvent(t, event.name, event.properties))
        if (matching.length === 0) return 0
        if (depth >= MAX_EVENT_CHAIN_DEPTH) {
          yield* Effect.logWarning("Event chain too deep: its triggers were skipped").pipe(Effect.annotateLogs({
            project_id: projectId,
            event_id: event.id,
            event_name: event.name,
            chain_depth: depth,
            skipped_triggers: matching.map((t) => t.id).join(",")
          }))
          return 0
        }
        const channel = event.conversation_id === null ? Option.none<Channel>() : yield* channelOf(projectId, event.conversation_id)
        return yield* launchEach(launcher, matching, channel, (trigger) => ({
          triggerType: "project_event",
          observer: false,
          system: {
            event: { id: event.id, name: event.name, occurred_at: event.occurred_at, properties: event.properties },
            event_chain_depth: depth + 1
          },
          dedupeKey: `event:${trigger.id}:${event.id}`
        }))
      }, Effect.provideContext(repos))

      return EventTriggers.of({ start })
    })
  )
}
