/**
 * Memory implementations of the project events ports (`EventsRepo`,
 * `EventDefinitionsRepo`, `EventPlansRepo`) and of the `Outbox`, over the
 * shared `MemoryStore`. They keep the rules of the Postgres schema (foreign
 * keys to projects, the unique definition name per project, timestamps and
 * JSON as the database gives them back); the events storage conformance suite
 * holds both adapters to the same behaviour.
 */
import { Effect, Layer, Option } from "effect"
import type { EventDefinitionRecord, EventFilter, EventPlanRecord, EventRecord } from "./Event.ts"
import { EVENT_TOTAL_CAP, EventDefinitionsRepo, EventPlansRepo, EventsRepo } from "./EventsRepo.ts"
import { type DomainEvent, Outbox } from "../ports/Outbox.ts"
import { Duplicate } from "../ports/StorageError.ts"
import type { Project } from "../projects/Project.ts"
import type { CursorKey, ListSlice, ListWindow } from "../shared/Pagination.ts"
import { MemoryStore, type MemoryTable, memoryTable, type MemoryTables } from "../ports/MemoryStore.ts"
import { byteOrder, compareKeys, instant, json, nullableTimestamp, timestamp, violation } from "../ports/MemoryRows.ts"

const Projects = memoryTable<Project>("projects")
const Events = memoryTable<EventRecord>("events")
const Definitions = memoryTable<EventDefinitionRecord>("event_definitions")
const Plans = memoryTable<EventPlanRecord>("project_plans")
const Usage = memoryTable<{ readonly project_id: string; readonly period: string; readonly count: number }>("event_usage")
const DomainEvents = memoryTable<DomainEvent>("domain_events")

const eventKey = (e: EventRecord): CursorKey => ({ sortKey: e.occurred_at, id: e.id })

const requireProject = (db: MemoryTables, projectId: string) => {
  if (db.get(Projects, projectId) === undefined) violation(`no project ${projectId}`)
}

const storedEvent = (e: EventRecord): EventRecord => ({
  ...e,
  occurred_at: timestamp(e.occurred_at),
  created_at: timestamp(e.created_at),
  properties: json(e.properties)
})

const storedDefinition = (d: EventDefinitionRecord): EventDefinitionRecord => ({
  ...d,
  property_schema: json(d.property_schema),
  archived_at: nullableTimestamp(d.archived_at),
  last_seen_at: nullableTimestamp(d.last_seen_at),
  deletion_requested_at: nullableTimestamp(d.deletion_requested_at),
  created_at: timestamp(d.created_at),
  updated_at: timestamp(d.updated_at)
})

/** Newest-first rows through a window; page totals counted up to the cap. */
const sliceEvents = (newestFirst: ReadonlyArray<EventRecord>, window: ListWindow): ListSlice<EventRecord> => {
  if (window.mode === "page") {
    const start = (window.page - 1) * window.perPage
    const items = newestFirst.slice(start, start + window.perPage)
    return {
      items,
      hasMore: start + items.length < newestFirst.length,
      total: Math.min(newestFirst.length, EVENT_TOTAL_CAP)
    }
  }
  const { after, before, limit } = window
  const inRange = newestFirst.filter((e) =>
    (after === undefined || compareKeys(eventKey(e), after) < 0) &&
    (before === undefined || compareKeys(eventKey(e), before) > 0)
  )
  const travel = before !== undefined ? [...inRange].reverse() : inRange
  const page = travel.slice(0, limit)
  return { items: before !== undefined ? page.reverse() : page, hasMore: travel.length > limit, total: 0 }
}

const matches = (projectId: string, filter: EventFilter) => (e: EventRecord) =>
  e.project_id === projectId &&
  (filter.name === undefined || e.name === filter.name) &&
  (filter.conversation_id === undefined || e.conversation_id === filter.conversation_id) &&
  (filter.occurred_after === undefined || instant(e.occurred_at) >= instant(filter.occurred_after)) &&
  (filter.occurred_before === undefined || instant(e.occurred_at) <= instant(filter.occurred_before))

/** Removes up to `limit` rows that `pick` selects; answers how many. */
const removeSome = <A extends { readonly id: string }>(
  db: MemoryTables,
  table: MemoryTable<A>,
  pick: (row: A) => boolean,
  limit: number
) => {
  let removed = 0
  for (const row of db.all(table)) {
    if (removed >= limit) break
    if (pick(row)) {
      db.remove(table, row.id)
      removed++
    }
  }
  return removed
}

export const layerMemoryEventsRepo = Layer.effect(
  EventsRepo,
  Effect.gen(function*() {
    const store = yield* MemoryStore
    return EventsRepo.of({
      insert: Effect.fn("EventsRepo.insert")((event: EventRecord) =>
        store.run((db) => {
          requireProject(db, event.project_id)
          if (db.get(Events, event.id) !== undefined) violation(`duplicate event id ${event.id}`)
          db.put(Events, event.id, storedEvent(event))
        })
      ),
      insertMany: Effect.fn("EventsRepo.insertMany")((events: ReadonlyArray<EventRecord>) =>
        store.run((db) => {
          for (const event of events) {
            requireProject(db, event.project_id)
            if (db.get(Events, event.id) !== undefined) violation(`duplicate event id ${event.id}`)
            db.put(Events, event.id, storedEvent(event))
          }
        })
      ),
      list: Effect.fn("EventsRepo.list")((projectId: string, filter: EventFilter, window: ListWindow) =>
        store.run((db) => {
          const rows = db.all(Events).filter(matches(projectId, filter))
          return sliceEvents([...rows].sort((a, b) => compareKeys(eventKey(b), eventKey(a))), window)
        })
      ),
      nameUsed: Effect.fn("EventsRepo.nameUsed")((projectId: string, name: string) =>
        store.run((db) => db.all(Events).some((e) => e.project_id === projectId && e.name === name))
      ),
      deleteByName: Effect.fn("EventsRepo.deleteByName")((projectId: string, name: string, limit: number) =>
        store.run((db) => removeSome(db, Events, (e) => e.project_id === projectId && e.name === name, limit))
      ),
      deleteOccurredBefore: Effect.fn("EventsRepo.deleteOccurredBefore")((projectId: string, before: string, limit: number) =>
        store.run((db) =>
          removeSome(
            db,
            Events,
            (e) => e.project_id === projectId && instant(e.occurred_at) < instant(before),
            limit
          )
        )
      )
    })
  })
)

export const layerMemoryEventDefinitionsRepo = Layer.effect(
  EventDefinitionsRepo,
  Effect.gen(function*() {
    const store = yield* MemoryStore
    const byName = (db: MemoryTables, projectId: string, name: string) =>
      db.all(Definitions).find((d) => d.project_id === projectId && d.name === name)

    return EventDefinitionsRepo.of({
      insert: Effect.fn("EventDefinitionsRepo.insert")(function*(definition: EventDefinitionRecord) {
        const duplicate = yield* store.run((db) => {
          requireProject(db, definition.project_id)
          if (db.get(Definitions, definition.id) !== undefined) violation(`duplicate definition id ${definition.id}`)
          if (byName(db, definition.project_id, definition.name) !== undefined) return true
          db.put(Definitions, definition.id, storedDefinition(definition))
          return false
        })
        if (duplicate) return yield* new Duplicate({ field: "name" })
      }),
      // Transactions run one at a time here, so holding a row is implied.
      findById: Effect.fn("EventDefinitionsRepo.findById")((projectId: string, id: string) =>
        store.run((db) => Option.filter(Option.fromNullishOr(db.get(Definitions, id)), (d) => d.project_id === projectId))
      ),
      findByName: Effect.fn("EventDefinitionsRepo.findByName")((projectId: string, name: string) =>
        store.run((db) => Option.fromNullishOr(byName(db, projectId, name)))
      ),
      list: Effect.fn("EventDefinitionsRepo.list")((projectId: string, options: { readonly includeArchived: boolean }) =>
        store.run((db) =>
          db.all(Definitions)
            .filter((d) =>
              d.project_id === projectId && d.deletion_requested_at === null &&
              (options.includeArchived || d.archived_at === null)
            )
            .sort((a, b) => byteOrder(a.name, b.name))
        )
      ),
      update: Effect.fn("EventDefinitionsRepo.update")(function*(definition: EventDefinitionRecord) {
        const result = yield* store.run((db) => {
          const current = db.get(Definitions, definition.id)
          if (current === undefined || current.project_id !== definition.project_id) return Option.none<EventDefinitionRecord>()
          const holder = byName(db, definition.project_id, definition.name)
          if (holder !== undefined && holder.id !== definition.id) return new Duplicate({ field: "name" })
          // Identity, origin and creation time are not the caller's to change.
          const updated = storedDefinition({
            ...definition,
            project_id: current.project_id,
            source: current.source,
            created_at: current.created_at
          })
          db.put(Definitions, definition.id, updated)
          return Option.some(updated)
        })
        if (result instanceof Duplicate) return yield* result
        return result
      }),
      recordSeen: Effect.fn("EventDefinitionsRepo.recordSeen")((auto: EventDefinitionRecord, seenAt: string) =>
        store.run((db) => {
          const current = byName(db, auto.project_id, auto.name)
          if (current === undefined) {
            requireProject(db, auto.project_id)
            const created = storedDefinition({ ...auto, last_seen_at: seenAt })
            db.put(Definitions, created.id, created)
            return created
          }
          let schema = current.property_schema
          let updatedAt = current.updated_at
          if (current.source === "auto") {
            const learned = Object.keys(auto.property_schema).filter((key) => !Object.hasOwn(current.property_schema, key))
            if (learned.length > 0) {
              schema = { ...auto.property_schema, ...current.property_schema }
              updatedAt = auto.updated_at
            }
          }
          const lastSeen = current.last_seen_at === null || instant(seenAt) > instant(current.last_seen_at)
            ? seenAt
            : current.last_seen_at
          const updated = storedDefinition({ ...current, property_schema: schema, last_seen_at: lastSeen, updated_at: updatedAt })
          db.put(Definitions, current.id, updated)
          return updated
        })
      ),
      delete: Effect.fn("EventDefinitionsRepo.delete")((projectId: string, id: string) =>
        store.run((db) => {
          const current = db.get(Definitions, id)
          return current !== undefined && current.project_id === projectId && db.remove(Definitions, id)
        })
      ),
      listPendingDeletion: store.run((db) =>
        db.all(Definitions)
          .filter((d) => d.deletion_requested_at !== null)
          .sort((a, b) => instant(a.deletion_requested_at!) - instant(b.deletion_requested_at!) || byteOrder(a.id, b.id))
      ).pipe(Effect.withSpan("EventDefinitionsRepo.listPendingDeletion"))
    })
  })
)

const usageId = (projectId: string, period: string) => `${projectId}\u0000${period}`

export const layerMemoryEventPlansRepo = Layer.effect(
  EventPlansRepo,
  Effect.gen(function*() {
    const store = yield* MemoryStore
    return EventPlansRepo.of({
      find: Effect.fn("EventPlansRepo.find")((projectId: string) =>
        store.run((db) => Option.fromNullishOr(db.get(Plans, projectId)))
      ),
      save: Effect.fn("EventPlansRepo.save")((plan: EventPlanRecord) =>
        store.run((db) => {
          requireProject(db, plan.project_id)
          db.put(Plans, plan.project_id, { ...plan, updated_at: timestamp(plan.updated_at) })
        })
      ),
      countEmission: Effect.fn("EventPlansRepo.countEmission")((projectId: string, period: string, by = 1) =>
        store.run((db) => {
          requireProject(db, projectId)
          const id = usageId(projectId, period)
          const count = (db.get(Usage, id)?.count ?? 0) + by
          db.put(Usage, id, { project_id: projectId, period, count })
          return count
        })
      ),
      usage: Effect.fn("EventPlansRepo.usage")((projectId: string, period: string) =>
        store.run((db) => db.get(Usage, usageId(projectId, period))?.count ?? 0)
      )
    })
  })
)

const oldestFirst = (a: DomainEvent, b: DomainEvent) => instant(a.created_at) - instant(b.created_at) || byteOrder(a.id, b.id)

export const layerMemoryOutbox = Layer.effect(
  Outbox,
  Effect.gen(function*() {
    const store = yield* MemoryStore
    return Outbox.of({
      append: Effect.fn("Outbox.append")((event: DomainEvent) =>
        store.run((db) => {
          if (event.project_id !== null) requireProject(db, event.project_id)
          if (db.get(DomainEvents, event.id) !== undefined) violation(`duplicate domain event id ${event.id}`)
          db.put(DomainEvents, event.id, { ...event, payload: json(event.payload), created_at: timestamp(event.created_at) })
        })
      ),
      appendMany: Effect.fn("Outbox.appendMany")((events: ReadonlyArray<DomainEvent>) =>
        store.run((db) => {
          for (const event of events) {
            if (event.project_id !== null) requireProject(db, event.project_id)
            if (db.get(DomainEvents, event.id) !== undefined) violation(`duplicate domain event id ${event.id}`)
            db.put(DomainEvents, event.id, { ...event, payload: json(event.payload), created_at: timestamp(event.created_at) })
          }
        })
      ),
      take: Effect.fn("Outbox.take")((types: ReadonlyArray<string>, limit: number) =>
        store.run((db) => {
          const taken = db.all(DomainEvents).filter((e) => types.includes(e.type)).sort(oldestFirst).slice(0, limit)
          for (const e of taken) db.remove(DomainEvents, e.id)
          return taken
        })
      ),
      prune: Effect.fn("Outbox.prune")((before: string) =>
        store.run((db) =>
          removeSome(db, DomainEvents, (e) => instant(e.created_at) < instant(before), Number.MAX_SAFE_INTEGER)
        )
      ),
      eraseMentions: Effect.fn("Outbox.eraseMentions")((projectId: string, terms: ReadonlyArray<string>, limit: number) =>
        store.run((db) =>
          removeSome(db, DomainEvents, (e) => e.project_id === projectId && terms.some((t) => JSON.stringify(e.payload).includes(t)), limit)
        )
      )
    })
  })
)

/** Every project events port and the outbox in memory, over the `MemoryStore` in context. */
export const layerMemoryEventsStorage = Layer.mergeAll(
  layerMemoryEventsRepo,
  layerMemoryEventDefinitionsRepo,
  layerMemoryEventPlansRepo,
  layerMemoryOutbox
)
