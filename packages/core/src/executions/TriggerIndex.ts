/**
 * Which triggers can fire (decisions 2.6): active triggers of active
 * workflows (a `draft` or `archived` workflow's triggers are kept but never
 * fire), by what they match. Acting code reads them fresh; the
 * `DomainEventInterest` declarations of routing and event triggers (asked
 * for every append of their types) read them through a cache kept for a few
 * seconds per (project, type), so a trigger created a moment before an event
 * may miss it, as a webhook created a moment before would.
 */
import { Context, Effect, Layer, Option, Predicate, Schema, Stream } from "effect"
import { type EventProperties, PROJECT_EVENT_RECORDED } from "../events/Event.ts"
import {
  MSG_CONVERSATION_CREATED,
  MSG_CONVERSATION_ENDED,
  MSG_MESSAGE_RECEIVED,
  msgMessageStatusEvent
} from "../messaging/DomainEvents.ts"
import { InboundRouter } from "../messaging/InboundRouter.ts"
import { DomainEventInterest, type InterestScope } from "../outbox/Interest.ts"
import type { DomainEvent } from "../ports/Outbox.ts"
import { StoredWorkflows } from "../workflows/StoredWorkflows.ts"
import * as SignalledCache from "../shared/SignalledCache.ts"
import type { TriggerRecord, TriggerType } from "../workflows/Trigger.ts"

/** The relay subscriber that routes inbound messages and starts observers. */
export const ROUTING_SUBSCRIBER = "executions-routing"
/** The relay subscriber that starts `project_event` runs. */
export const EVENT_TRIGGERS_SUBSCRIBER = "executions-events"

/** The `msg_event` events a trigger may name (decisions 2.6). */
export const MSG_EVENT_TYPES: ReadonlyArray<string> = [
  MSG_MESSAGE_RECEIVED,
  msgMessageStatusEvent("sent"),
  msgMessageStatusEvent("failed"),
  MSG_CONVERSATION_CREATED,
  MSG_CONVERSATION_ENDED
]

/** How long the interest declarations remember a project's triggers of a type. */
const CACHE_TTL_MS = 5_000

/** An active `msg_event` trigger for `event` on the number, or on every number. */
export const matchesMsgEvent = (t: TriggerRecord, event: string, phoneNumberId: string) => {
  const number = t.triggerable["phone_number_id"]
  return t.triggerable["event"] === event && (number === undefined || number === null || number === phoneNumberId)
}

const numeric = (u: unknown): number | undefined => {
  if (Predicate.isNumber(u)) return Number.isFinite(u) ? u : undefined
  if (Predicate.isString(u) && u.trim().length > 0) {
    const n = Number(u)
    return Number.isFinite(n) ? n : undefined
  }
  return undefined
}

/**
 * The property filter of a `project_event` trigger (decisions 2.6): a missing
 * key never matches; `eq` compares numerically when both sides parse as
 * numbers, else their string forms; ordering operators compare numerically
 * and never match non-numeric values. No filter matches every event.
 */
export const matchesFilter = (triggerable: TriggerRecord["triggerable"], properties: EventProperties) => {
  const key = triggerable["property_key"]
  const operator = triggerable["operator"]
  const expected = triggerable["property_value"]
  if (!Predicate.isString(key) || !Predicate.isString(operator) || expected === undefined || expected === null) return true
  if (!Object.hasOwn(properties, key)) return false
  const actual = properties[key]
  const a = numeric(actual)
  const b = numeric(expected)
  if (operator === "eq") return a !== undefined && b !== undefined ? a === b : String(actual) === String(expected)
  if (a === undefined || b === undefined) return false
  switch (operator) {
    case "lt":
      return a < b
    case "lte":
      return a <= b
    case "gt":
      return a > b
    case "gte":
      return a >= b
    default:
      return false
  }
}

export const matchesEvent = (t: TriggerRecord, name: string, properties: EventProperties) =>
  t.triggerable["event_name"] === name && matchesFilter(t.triggerable, properties)

export class ActiveTriggers extends Context.Service<ActiveTriggers, {
  /** The project's triggers of the type that can fire, read now, oldest first. */
  readonly list: (projectId: string, type: TriggerType) => Effect.Effect<ReadonlyArray<TriggerRecord>>
  /** The same, remembered for a few seconds (interest declarations). */
  readonly remembered: (projectId: string, type: TriggerType) => Effect.Effect<ReadonlyArray<TriggerRecord>>
}>()("@parley/core/executions/ActiveTriggers") {
  static readonly layer = Layer.effect(
    ActiveTriggers,
    Effect.gen(function*() {
      const workflows = yield* StoredWorkflows
      const list = (projectId: string, type: TriggerType) =>
        Effect.map(workflows.triggersByType(projectId, type), (rows) =>
          rows.filter((r) => r.trigger.active && r.workflowStatus === "active").map((r) => r.trigger))
      const cache = yield* SignalledCache.make({
        lookup: (key: { readonly projectId: string; readonly type: TriggerType }) => list(key.projectId, key.type),
        keyOf: (key) => `${key.projectId}:${key.type}`,
        changes: Stream.never,
        ttlMs: CACHE_TTL_MS,
        max: 10_000
      })
      return ActiveTriggers.of({ list, remembered: (projectId, type) => cache.get({ projectId, type }) })
    })
  )
}

/** What the interest declarations read of a `msg.*` entry. */
const MsgEntry = Schema.Struct({
  data: Schema.Struct({
    phone_number_id: Schema.optionalKey(Schema.String),
    message: Schema.optionalKey(Schema.Struct({ ext: Schema.optionalKey(Schema.Struct({ processing_status: Schema.optionalKey(Schema.String) })) }))
  }),
  msg_config: Schema.Struct({ phone_number_id: Schema.String })
})
const decodeMsgEntry = Schema.decodeUnknownOption(MsgEntry)

const EventEntry = Schema.Struct({
  event: Schema.Struct({ name: Schema.String, properties: Schema.Record(Schema.String, Schema.Union([Schema.String, Schema.Finite, Schema.Boolean, Schema.Null])) })
})
const decodeEventEntry = Schema.decodeUnknownOption(EventEntry)

/**
 * Routing wants the inbound messages recorded `pending` where no router was
 * registered (a process without executions: routed later from the entry), and
 * every `msg.*` entry an observer trigger listens to; event triggers want the
 * events a trigger matches.
 */
export const layerExecutionsInterest = Layer.effectDiscard(Effect.gen(function*() {
  const interest = yield* DomainEventInterest
  const triggers = yield* ActiveTriggers
  const routers = yield* InboundRouter
  const msgWanted = (entry: DomainEvent) =>
    Effect.gen(function*() {
      const decoded = decodeMsgEntry(entry.payload)
      if (Option.isNone(decoded) || entry.project_id === null) return false
      if (
        entry.type === MSG_MESSAGE_RECEIVED && decoded.value.data.message?.ext?.processing_status === "pending" &&
        Option.isNone(yield* routers.current)
      ) return true
      const phoneNumberId = decoded.value.msg_config.phone_number_id
      return (yield* triggers.remembered(entry.project_id, "msg_event")).some((t) => matchesMsgEvent(t, entry.type, phoneNumberId))
    })
  const eventWanted = (entry: DomainEvent) => {
    const decoded = decodeEventEntry(entry.payload)
    if (Option.isNone(decoded) || entry.project_id === null) return Effect.succeed(false)
    const { name, properties } = decoded.value.event
    return Effect.map(triggers.remembered(entry.project_id, "project_event"), (ts) => ts.some((t) => matchesEvent(t, name, properties)))
  }
  // A received message may be wanted whatever the triggers (routing it later); any other type by a trigger on it.
  const msgInScope = (type: string, scope: InterestScope) =>
    type === MSG_MESSAGE_RECEIVED
      ? Effect.succeed(true)
      : Effect.map(triggers.remembered(scope.projectId, "msg_event"), (ts) => ts.some((t) => matchesMsgEvent(t, type, scope.phoneNumberId)))
  yield* interest.declare(ROUTING_SUBSCRIBER, MSG_EVENT_TYPES, msgWanted, msgInScope)
  yield* interest.declare(EVENT_TRIGGERS_SUBSCRIBER, [PROJECT_EVENT_RECORDED], eventWanted)
}))
