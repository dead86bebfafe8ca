/**
 * Storage of project events, their definitions and the plan settings that
 * gate them, always scoped by project.
 */
import { Context, type Effect, type Option } from "effect"
import type {
  EventDefinitionRecord,
  EventFilter,
  EventPlanRecord,
  EventRecord
} from "./Event.ts"
import type { ListSlice, ListWindow } from "../shared/Pagination.ts"
import type { Duplicate } from "../ports/StorageError.ts"

/** Page-mode totals of event lists are counted up to this many (decisions 1.3: bounded estimates). */
export const EVENT_TOTAL_CAP = 10_000

export class EventsRepo extends Context.Service<EventsRepo, {
  readonly insert: (event: EventRecord) => Effect.Effect<void>
  /** Inserts the events in one step (batched emissions). */
  readonly insertMany: (events: ReadonlyArray<EventRecord>) => Effect.Effect<void>
  /**
   * Newest first by (occurred_at, id). Cursor keys are occurrence times; page
   * totals count at most `EVENT_TOTAL_CAP` (every page stays reachable).
   */
  readonly list: (projectId: string, filter: EventFilter, window: ListWindow) => Effect.Effect<ListSlice<EventRecord>>
  /** Whether any event of the project has this name. */
  readonly nameUsed: (projectId: string, name: string) => Effect.Effect<boolean>
  /** Removes up to `limit` events with the name; answers how many went. */
  readonly deleteByName: (projectId: string, name: string, limit: number) => Effect.Effect<number>
  /** Removes up to `limit` events that occurred strictly before `before`; answers how many went. */
  readonly deleteOccurredBefore: (projectId: string, before: string, limit: number) => Effect.Effect<number>
}>()("@parley/core/ports/EventsRepo") {}

export class EventDefinitionsRepo extends Context.Service<EventDefinitionsRepo, {
  /** Fails with Duplicate("name") when the project already has a definition with the name (any state). */
  readonly insert: (definition: EventDefinitionRecord) => Effect.Effect<void, Duplicate>
  /**
   * Any state, pending deletion included. `forUpdate` holds the row until the
   * surrounding transaction ends, so checks made after it stay true.
   */
  readonly findById: (
    projectId: string,
    id: string,
    options?: { readonly forUpdate?: boolean | undefined }
  ) => Effect.Effect<Option.Option<EventDefinitionRecord>>
  readonly findByName: (
    projectId: string,
    name: string,
    options?: { readonly forUpdate?: boolean | undefined }
  ) => Effect.Effect<Option.Option<EventDefinitionRecord>>
  /** Ordered by name (byte order); never those pending deletion; archived ones only when asked. */
  readonly list: (
    projectId: string,
    options: { readonly includeArchived: boolean }
  ) => Effect.Effect<ReadonlyArray<EventDefinitionRecord>>
  /**
   * Replaces the editable fields (name, description, property_schema,
   * archived_at, last_seen_at, deletion_requested_at, updated_at); None when
   * the definition is gone. Duplicate("name") on a taken name.
   */
  readonly update: (definition: EventDefinitionRecord) => Effect.Effect<Option.Option<EventDefinitionRecord>, Duplicate>
  /**
   * An event named `auto.name` was recorded at `seenAt`: creates `auto` when
   * the project has no definition with the name; otherwise moves last_seen_at
   * forward and, for an `auto` definition, adds the keys of `auto`'s schema it
   * lacks (existing keys keep their type; updated_at moves only then).
   * Answers the definition as stored, whatever its state: the caller refuses
   * a name pending deletion, which rolls this back with its transaction.
   * Atomic: concurrent first emissions of a name create one definition.
   */
  readonly recordSeen: (auto: EventDefinitionRecord, seenAt: string) => Effect.Effect<EventDefinitionRecord>
  readonly delete: (projectId: string, id: string) => Effect.Effect<boolean>
  /** Every definition pending deletion, across projects, oldest request first. */
  readonly listPendingDeletion: Effect.Effect<ReadonlyArray<EventDefinitionRecord>>
}>()("@parley/core/ports/EventDefinitionsRepo") {}

export class EventPlansRepo extends Context.Service<EventPlansRepo, {
  /** None when the project never had its plan set (the defaults apply). */
  readonly find: (projectId: string) => Effect.Effect<Option.Option<EventPlanRecord>>
  /** Inserts or replaces the project's plan. */
  readonly save: (plan: EventPlanRecord) => Effect.Effect<void>
  /**
   * Counts one more emission in `period` (e.g. `2026-03`), or `by` more, and
   * answers the new count. Concurrent callers get distinct counts; the count
   * is undone with the surrounding transaction.
   */
  readonly countEmission: (projectId: string, period: string, by?: number) => Effect.Effect<number>
  /** Emissions counted in `period` so far. */
  readonly usage: (projectId: string, period: string) => Effect.Effect<number>
}>()("@parley/core/ports/EventPlansRepo") {}
