/**
 * Project events (spec "Project event") and their definitions (decisions 2.8)
 * in stored and wire form, and the per-project plan settings that gate them.
 */
import { Schema } from "effect"
import { described } from "../shared/Described.ts"

/** A property value: the spec allows only flat scalars. */
export type EventPropertyValue = string | number | boolean | null
export type EventProperties = Readonly<Record<string, EventPropertyValue>>

/** The stored record of one emitted event. */
export interface EventRecord {
  readonly id: string
  readonly project_id: string
  readonly name: string
  readonly occurred_at: string
  readonly conversation_id: string | null
  readonly properties: EventProperties
  /** When Parley recorded it (emission time); `occurred_at` is the caller's. */
  readonly created_at: string
}

export const EventPropertyValue = Schema.Union([Schema.String, Schema.Finite, Schema.Boolean, Schema.Null])

/** The spec's words for a project event's fields ("Project event"). */
const PROJECT_EVENT_FIELDS = {
  id: "The event's id (uuid)",
  name: "Lowercase, at most 128 characters",
  occurred_at: "When it happened (ISO 8601); now when not given",
  conversation_id: "The conversation it belongs to, if any",
  properties: "A flat JSON object: values are strings, numbers, booleans or null",
  created_at: "When it was recorded (ISO 8601)"
} as const

export const ProjectEvent = Schema.Struct(described({
  id: Schema.String,
  name: Schema.String,
  occurred_at: Schema.String,
  conversation_id: Schema.NullOr(Schema.String),
  properties: Schema.Record(Schema.String, EventPropertyValue),
  created_at: Schema.String
}, PROJECT_EVENT_FIELDS))
export type ProjectEvent = typeof ProjectEvent.Type

export const toProjectEvent = (e: EventRecord): ProjectEvent => ({
  id: e.id,
  name: e.name,
  occurred_at: e.occurred_at,
  conversation_id: e.conversation_id,
  properties: e.properties,
  created_at: e.created_at
})

/**
 * Body of `POST /events` (no envelope). EventProperties are kept loose here so the
 * service can answer the spec's own refusal for a nested value, naming its key.
 */
export const EventInput = Schema.Struct({
  name: Schema.String,
  occurred_at: Schema.optionalKey(Schema.NullOr(Schema.String)),
  conversation_id: Schema.optionalKey(Schema.NullOr(Schema.String)),
  properties: Schema.optionalKey(Schema.NullOr(Schema.Record(Schema.String, Schema.Unknown)))
})
export type EventInput = typeof EventInput.Type

/** Filters of `GET /events`; both time bounds inclusive, `name` exact. */
export interface EventFilter {
  readonly name?: string | undefined
  readonly conversation_id?: string | undefined
  readonly occurred_after?: string | undefined
  readonly occurred_before?: string | undefined
}

/** An event's position in lists, newest first by occurrence. */
export const eventCursorKeyOf = (e: { readonly occurred_at: string; readonly id: string }) => ({
  sortKey: e.occurred_at,
  id: e.id
})

export const EventPropertyType = Schema.Literals(["string", "number", "boolean"])
export type EventPropertyType = typeof EventPropertyType.Type

/** What a definition expects of one property. */
export const EventPropertySpec = Schema.Struct({
  type: EventPropertyType,
  description: Schema.optionalKey(Schema.String)
})
export type EventPropertySpec = typeof EventPropertySpec.Type

export const EventPropertySchema = Schema.Record(Schema.String, EventPropertySpec)
export type EventPropertySchema = typeof EventPropertySchema.Type

/** Write form of a property schema: a null description means none. */
export const EventPropertySchemaInput = Schema.Record(
  Schema.String,
  Schema.Struct({ type: EventPropertyType, description: Schema.optionalKey(Schema.NullOr(Schema.String)) })
)
export type EventPropertySchemaInput = typeof EventPropertySchemaInput.Type

export const EventDefinitionSource = Schema.Literals(["manual", "auto"])
export type EventDefinitionSource = typeof EventDefinitionSource.Type

export interface EventDefinitionRecord {
  readonly id: string
  readonly project_id: string
  readonly name: string
  readonly description: string | null
  readonly property_schema: EventPropertySchema
  readonly source: EventDefinitionSource
  readonly archived_at: string | null
  readonly last_seen_at: string | null
  /** Set by DELETE: the definition and its events are being removed; it is invisible meanwhile. */
  readonly deletion_requested_at: string | null
  readonly created_at: string
  readonly updated_at: string
}

export const EventDefinition = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  description: Schema.NullOr(Schema.String),
  property_schema: EventPropertySchema,
  source: EventDefinitionSource,
  archived_at: Schema.NullOr(Schema.String),
  last_seen_at: Schema.NullOr(Schema.String),
  created_at: Schema.String,
  updated_at: Schema.String
})
export type EventDefinition = typeof EventDefinition.Type

export const toEventDefinition = (d: EventDefinitionRecord): EventDefinition => ({
  id: d.id,
  name: d.name,
  description: d.description,
  property_schema: d.property_schema,
  source: d.source,
  archived_at: d.archived_at,
  last_seen_at: d.last_seen_at,
  created_at: d.created_at,
  updated_at: d.updated_at
})

const definitionFields = {
  description: Schema.optionalKey(Schema.NullOr(Schema.String)),
  property_schema: Schema.optionalKey(EventPropertySchemaInput),
  archived: Schema.optionalKey(Schema.Boolean)
}

/** Body of `POST /event-definitions` (no envelope). */
export const EventDefinitionInput = Schema.Struct({ name: Schema.String, ...definitionFields })
export type EventDefinitionInput = typeof EventDefinitionInput.Type

/** Body of `PATCH /event-definitions/<id>`: every field optional. */
export const EventDefinitionUpdateInput = Schema.Struct({ name: Schema.optionalKey(Schema.String), ...definitionFields })
export type EventDefinitionUpdateInput = typeof EventDefinitionUpdateInput.Type

/** Answer of `DELETE /event-definitions/<id>` (decisions 4.5). */
export const EventDefinitionDeletion = Schema.Struct({ id: Schema.String, status: Schema.Literal("deletion_pending") })

/** Project events on a project's plan (decisions 7.1, 7.2). */
export interface EventPlan {
  /** Project events (emission, definition writes) are part of the plan. */
  readonly events_enabled: boolean
  /** Events a project may emit per calendar month (UTC). */
  readonly monthly_allowance: number
  /** Emission past the allowance is allowed (and counted) instead of refused. */
  readonly metered_overage: boolean
  /** Events older than this many days are refused on emission and purged daily. */
  readonly retention_days: number
}

export interface EventPlanRecord extends EventPlan {
  readonly project_id: string
  readonly updated_at: string
}

/** The domain event written with every recorded project event (see `ports/Outbox.ts`). */
export const PROJECT_EVENT_RECORDED = "project_event.recorded"

export interface ProjectEventRecordedPayload {
  readonly event: ProjectEvent
  readonly definition_id: string
  /** Set when an event-triggered run emitted it: the hops behind that run (decisions 10.1). */
  readonly chain_depth?: number | undefined
}
