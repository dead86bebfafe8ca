/**
 * The behaviour every adapter of the project events ports (`EventsRepo`,
 * `EventDefinitionsRepo`, `EventPlansRepo`) and of the `Outbox` owes, written
 * once and run against each adapter.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Deferred, Effect, Fiber, type Layer, Option } from "effect"
import type { EventDefinitionRecord, EventRecord } from "../../events/Event.ts"
import { EVENT_TOTAL_CAP, EventDefinitionsRepo, EventPlansRepo, EventsRepo } from "../../events/EventsRepo.ts"
import { type DomainEvent, Outbox } from "../../ports/Outbox.ts"
import type { ProjectsRepo } from "../../projects/ProjectsRepo.ts"
import { Duplicate } from "../../ports/StorageError.ts"
import { Transactor } from "../../ports/Transactor.ts"
import type { ListWindow } from "../../shared/Pagination.ts"
import { at, dies, givenProject, uniqueId } from "./fixtures.ts"

export type EventsStoragePorts = Transactor | ProjectsRepo | EventsRepo | EventDefinitionsRepo | EventPlansRepo | Outbox

export const makeEvent = (projectId: string, overrides: Partial<EventRecord> = {}): EventRecord => ({
  id: uniqueId("evt"),
  project_id: projectId,
  name: "order.paid",
  occurred_at: at(0),
  conversation_id: null,
  properties: {},
  created_at: at(0),
  ...overrides
})

export const makeDefinition = (
  projectId: string,
  overrides: Partial<EventDefinitionRecord> = {}
): EventDefinitionRecord => ({
  id: uniqueId("def"),
  project_id: projectId,
  name: `event.${crypto.randomUUID().slice(0, 8)}`,
  description: null,
  property_schema: {},
  source: "manual",
  archived_at: null,
  last_seen_at: null,
  deletion_requested_at: null,
  created_at: at(0),
  updated_at: at(0),
  ...overrides
})

const makeDomainEvent = (projectId: string | null, overrides: Partial<DomainEvent> = {}): DomainEvent => ({
  id: uniqueId("dom"),
  project_id: projectId,
  type: "test.happened",
  payload: { n: 1 },
  created_at: at(0),
  ...overrides
})

const ids = (items: ReadonlyArray<{ readonly id: string }>) => items.map((i) => i.id)

const cursor = (limit: number, edge: { after?: EventRecord; before?: EventRecord } = {}): ListWindow => ({
  mode: "cursor",
  limit,
  after: edge.after && { sortKey: edge.after.occurred_at, id: edge.after.id },
  before: edge.before && { sortKey: edge.before.occurred_at, id: edge.before.id }
})

class Boom {
  readonly _tag = "Boom"
}

export const eventsStorageConformance = <E>(name: string, storage: Layer.Layer<EventsStoragePorts, E>): void => {
  describe(name, () => {
    layer(storage, { excludeTestServices: true })("EventsRepo", (it) => {
      /** Five events of a fresh project, newest first: three share an occurred_at, where the id decides. */
      const givenTimeline = Effect.gen(function*() {
        const repo = yield* EventsRepo
        const project = yield* givenProject()
        const stem = uniqueId("evt")
        const make = (suffix: string, ms: number, overrides: Partial<EventRecord> = {}) =>
          makeEvent(project.id, { id: `${stem}-${suffix}`, occurred_at: at(ms), created_at: at(9000 - ms), ...overrides })
        const e1 = make("1", 1000, { name: "signup" })
        const e2a = make("2a", 2000, { conversation_id: "conv-1" })
        const e2b = make("2b", 2000, { name: "signup", conversation_id: "conv-1" })
        const e2c = make("2c", 2000)
        const e3 = make("3", 3000, { conversation_id: "conv-2" })
        // Inserted out of order, and with creation times in reverse: the order seen comes from occurred_at.
        for (const e of [e2b, e3, e1, e2c, e2a]) yield* repo.insert(e)
        return { project, newestFirst: [e3, e2c, e2b, e2a, e1] as const }
      })

      it.effect("stores an event exactly as given and keeps each project's events to itself", () =>
        Effect.gen(function*() {
          const repo = yield* EventsRepo
          const a = yield* givenProject()
          const b = yield* givenProject()
          const event = makeEvent(a.id, {
            name: "café.ordered",
            occurred_at: at(5),
            created_at: at(7),
            conversation_id: "0f8fad5b-d9cb-469f-a165-70867728950e",
            properties: { total: 12.5, count: 3, paid: true, note: "naïve ☕", missing: null, "": "empty key" }
          })
          yield* repo.insert(event)
          assert.deepStrictEqual((yield* repo.list(a.id, {}, cursor(10))).items, [event])
          assert.deepStrictEqual((yield* repo.list(b.id, {}, cursor(10))).items, [])
          assert.isTrue(yield* repo.nameUsed(a.id, "café.ordered"))
          assert.isFalse(yield* repo.nameUsed(b.id, "café.ordered"))
          assert.isFalse(yield* repo.nameUsed(a.id, "café"))
          assert.strictEqual(yield* repo.deleteByName(b.id, "café.ordered", 10), 0, "B cannot delete A's events")
          assert.strictEqual(yield* repo.deleteOccurredBefore(b.id, at(100), 10), 0)
          assert.strictEqual((yield* repo.list(a.id, {}, cursor(10))).items.length, 1)
        }))

      it.effect("lists newest first by occurred_at, ties by id, with exact filters and inclusive time bounds", () =>
        Effect.gen(function*() {
          const repo = yield* EventsRepo
          const { newestFirst, project } = yield* givenTimeline
          const [e3, e2c, e2b, e2a, e1] = newestFirst
          const list = (filter: Parameters<EventsRepo["Service"]["list"]>[1]) =>
            Effect.map(repo.list(project.id, filter, cursor(10)), (slice) => ids(slice.items))
          assert.deepStrictEqual(yield* list({}), ids(newestFirst))
          assert.deepStrictEqual(yield* list({ name: "signup" }), ids([e2b, e1]))
          assert.deepStrictEqual(yield* list({ name: "SIGNUP" }), [], "names match exactly")
          assert.deepStrictEqual(yield* list({ name: "sign" }), [])
          assert.deepStrictEqual(yield* list({ conversation_id: "conv-1" }), ids([e2b, e2a]))
          assert.deepStrictEqual(yield* list({ conversation_id: "conv-1", name: "signup" }), ids([e2b]))
          assert.deepStrictEqual(yield* list({ occurred_after: at(2000) }), ids([e3, e2c, e2b, e2a]))
          assert.deepStrictEqual(yield* list({ occurred_before: at(2000) }), ids([e2c, e2b, e2a, e1]))
          assert.deepStrictEqual(yield* list({ occurred_after: at(2000), occurred_before: at(2000) }), ids([e2c, e2b, e2a]))
          assert.deepStrictEqual(yield* list({ occurred_after: at(2001) }), ids([e3]))
          assert.deepStrictEqual(yield* list({ occurred_before: at(999) }), [])
        }))

      it.effect("pages with cursors on (occurred_at, id) in both directions", () =>
        Effect.gen(function*() {
          const repo = yield* EventsRepo
          const { newestFirst, project } = yield* givenTimeline
          const [e3, e2c, e2b, e2a, e1] = newestFirst
          const page = (window: ListWindow) =>
            Effect.map(repo.list(project.id, {}, window), (slice) => [ids(slice.items), slice.hasMore])
          assert.deepStrictEqual(yield* page(cursor(2)), [ids([e3, e2c]), true])
          assert.deepStrictEqual(yield* page(cursor(2, { after: e2c })), [ids([e2b, e2a]), true])
          assert.deepStrictEqual(yield* page(cursor(2, { after: e2a })), [ids([e1]), false])
          assert.deepStrictEqual(yield* page(cursor(2, { after: e1 })), [[], false])
          assert.deepStrictEqual(yield* page(cursor(2, { before: e1 })), [ids([e2b, e2a]), true])
          assert.deepStrictEqual(yield* page(cursor(2, { before: e2b })), [ids([e3, e2c]), false])
          assert.deepStrictEqual(yield* page(cursor(5, { after: e3, before: e1 })), [ids([e2c, e2b, e2a]), false])
          const filtered = yield* repo.list(project.id, { name: "signup" }, cursor(1, { after: e2b }))
          assert.deepStrictEqual([ids(filtered.items), filtered.hasMore], [ids([e1]), false])
        }))

      it.effect("pages by number with the matching total, every page reachable", () =>
        Effect.gen(function*() {
          const repo = yield* EventsRepo
          const { newestFirst, project } = yield* givenTimeline
          const [e3, e2c, e2b, e2a, e1] = newestFirst
          const page = (n: number, filter = {}) => repo.list(project.id, filter, { mode: "page", page: n, perPage: 2 })
          const one = yield* page(1)
          assert.deepStrictEqual([ids(one.items), one.total, one.hasMore], [ids([e3, e2c]), 5, true])
          assert.deepStrictEqual(ids((yield* page(2)).items), ids([e2b, e2a]))
          const three = yield* page(3)
          assert.deepStrictEqual([ids(three.items), three.hasMore], [ids([e1]), false])
          const past = yield* page(9)
          assert.deepStrictEqual([ids(past.items), past.total], [[], 5])
          const filtered = yield* page(1, { name: "signup" })
          assert.deepStrictEqual([ids(filtered.items), filtered.total], [ids([e2b, e1]), 2])
        }))

      it.effect(`counts page totals up to ${EVENT_TOTAL_CAP}, and pages past the count still answer`, () =>
        Effect.gen(function*() {
          const repo = yield* EventsRepo
          const project = yield* givenProject()
          const all = Array.from({ length: EVENT_TOTAL_CAP + 5 }, (_, i) => makeEvent(project.id, { occurred_at: at(i) }))
          yield* Effect.forEach(all, (e) => repo.insert(e), { concurrency: 16, discard: true })
          const first = yield* repo.list(project.id, {}, { mode: "page", page: 1, perPage: 100 })
          assert.strictEqual(first.total, EVENT_TOTAL_CAP)
          assert.strictEqual(first.items[0]!.id, all[all.length - 1]!.id)
          const beyond = yield* repo.list(project.id, {}, { mode: "page", page: 101, perPage: 100 })
          assert.deepStrictEqual(ids(beyond.items), ids(all.slice(0, 5).reverse()))
          assert.strictEqual(beyond.total, EVENT_TOTAL_CAP)
        }), { timeout: 60_000 })

      it.effect("deletes by name and by age in batches, answering how many went", () =>
        Effect.gen(function*() {
          const repo = yield* EventsRepo
          const project = yield* givenProject()
          const doomed = Array.from({ length: 5 }, (_, i) => makeEvent(project.id, { name: "doomed", occurred_at: at(i * 10) }))
          const kept = makeEvent(project.id, { name: "kept", occurred_at: at(0) })
          for (const e of [...doomed, kept]) yield* repo.insert(e)
          assert.strictEqual(yield* repo.deleteByName(project.id, "doomed", 3), 3)
          assert.strictEqual(yield* repo.deleteByName(project.id, "doomed", 3), 2)
          assert.strictEqual(yield* repo.deleteByName(project.id, "doomed", 3), 0)
          assert.isFalse(yield* repo.nameUsed(project.id, "doomed"))
          assert.deepStrictEqual(ids((yield* repo.list(project.id, {}, cursor(10))).items), [kept.id])

          const old = Array.from({ length: 4 }, (_, i) => makeEvent(project.id, { occurred_at: at(-1000 - i) }))
          const boundary = makeEvent(project.id, { occurred_at: at(-1) })
          for (const e of [...old, boundary]) yield* repo.insert(e)
          assert.strictEqual(yield* repo.deleteOccurredBefore(project.id, at(-1), 3), 3)
          assert.strictEqual(yield* repo.deleteOccurredBefore(project.id, at(-1), 3), 1)
          assert.strictEqual(yield* repo.deleteOccurredBefore(project.id, at(-1), 3), 0, "strictly before")
          assert.sameMembers(ids((yield* repo.list(project.id, {}, cursor(10))).items), [kept.id, boundary.id])
        }))

      it.effect("refuses an event of a missing project", () =>
        Effect.gen(function*() {
          yield* dies((yield* EventsRepo).insert(makeEvent("prj_missing")))
        }))
    })

    layer(storage, { excludeTestServices: true })("EventDefinitionsRepo", (it) => {
      it.effect("stores a definition exactly as given, found by id and by name within its project only", () =>
        Effect.gen(function*() {
          const repo = yield* EventDefinitionsRepo
          const a = yield* givenProject()
          const b = yield* givenProject()
          const definition = makeDefinition(a.id, {
            name: "order.paid",
            description: "A customer paid",
            property_schema: { total: { type: "number", description: "in cents" }, paid: { type: "boolean" } },
            archived_at: at(3),
            last_seen_at: at(2),
            created_at: at(1),
            updated_at: at(4)
          })
          yield* repo.insert(definition)
          assert.deepStrictEqual(yield* repo.findById(a.id, definition.id), Option.some(definition))
          assert.deepStrictEqual(yield* repo.findById(a.id, definition.id, { forUpdate: true }), Option.some(definition))
          assert.deepStrictEqual(yield* repo.findByName(a.id, "order.paid"), Option.some(definition))
          assert.isTrue(Option.isNone(yield* repo.findById(b.id, definition.id)))
          assert.isTrue(Option.isNone(yield* repo.findByName(b.id, "order.paid")))
          assert.isTrue(Option.isNone(yield* repo.findByName(a.id, "order")))
          assert.isTrue(Option.isNone(yield* repo.update({ ...definition, project_id: b.id, name: "stolen" })))
          assert.isFalse(yield* repo.delete(b.id, definition.id))
          // The same name is free in another project, and taken (whatever the state) in the same one.
          yield* repo.insert(makeDefinition(b.id, { name: "order.paid" }))
          const error = yield* Effect.flip(repo.insert(makeDefinition(a.id, { name: "order.paid" })))
          assert.deepStrictEqual(error, new Duplicate({ field: "name" }))
        }))

      it.effect("lists by name in byte order, hides pending deletions, and archived ones unless asked", () =>
        Effect.gen(function*() {
          const repo = yield* EventDefinitionsRepo
          const project = yield* givenProject()
          const b = makeDefinition(project.id, { name: "b.event" })
          const a = makeDefinition(project.id, { name: "a.event" })
          const under = makeDefinition(project.id, { name: "a_event" })
          const accent = makeDefinition(project.id, { name: "é.event" })
          const archived = makeDefinition(project.id, { name: "c.archived", archived_at: at(1) })
          const pending = makeDefinition(project.id, { name: "d.pending", deletion_requested_at: at(1) })
          for (const d of [b, accent, archived, a, pending, under]) yield* repo.insert(d)
          const names = (includeArchived: boolean) =>
            Effect.map(repo.list(project.id, { includeArchived }), (all) => all.map((d) => d.name))
          assert.deepStrictEqual(yield* names(false), ["a.event", "a_event", "b.event", "é.event"])
          assert.deepStrictEqual(yield* names(true), ["a.event", "a_event", "b.event", "c.archived", "é.event"])
        }))

      it.effect("updates the editable fields, never the origin or creation time, and refuses a taken name", () =>
        Effect.gen(function*() {
          const repo = yield* EventDefinitionsRepo
          const project = yield* givenProject()
          const taken = makeDefinition(project.id, { name: "taken" })
          const definition = makeDefinition(project.id, { name: "mine", source: "auto", created_at: at(1) })
          yield* repo.insert(taken)
          yield* repo.insert(definition)
          const next: EventDefinitionRecord = {
            ...definition,
            name: "renamed",
            description: "now described",
            property_schema: { k: { type: "string" } },
            archived_at: at(5),
            last_seen_at: at(6),
            deletion_requested_at: at(7),
            updated_at: at(8)
          }
          const updated = yield* repo.update({ ...next, source: "manual", created_at: at(99) })
          assert.deepStrictEqual(updated, Option.some(next))
          assert.deepStrictEqual(yield* repo.findByName(project.id, "renamed"), Option.some(next))
          assert.isTrue(Option.isNone(yield* repo.findByName(project.id, "mine")), "the old name is free")
          const error = yield* Effect.flip(repo.update({ ...next, name: "taken" }))
          assert.deepStrictEqual(error, new Duplicate({ field: "name" }))
          assert.isTrue(yield* repo.delete(project.id, definition.id))
          assert.isTrue(Option.isNone(yield* repo.update(next)), "gone")
          assert.isFalse(yield* repo.delete(project.id, definition.id))
        }))

      it.effect("recordSeen creates an auto definition, then learns new keys and moves last_seen_at forward only", () =>
        Effect.gen(function*() {
          const repo = yield* EventDefinitionsRepo
          const project = yield* givenProject()
          const auto = (schema: EventDefinitionRecord["property_schema"], ms: number) =>
            makeDefinition(project.id, {
              name: "seen.event",
              source: "auto",
              property_schema: schema,
              created_at: at(ms),
              updated_at: at(ms)
            })
          const first = auto({ total: { type: "number" } }, 10)
          const created = yield* repo.recordSeen(first, at(10))
          assert.deepStrictEqual(created, { ...first, last_seen_at: at(10) })

          // A known key keeps its type; nothing new: updated_at stays.
          const same = yield* repo.recordSeen(auto({ total: { type: "string" } }, 20), at(20))
          assert.deepStrictEqual(same, { ...created, last_seen_at: at(20) })

          const learned = yield* repo.recordSeen(auto({ total: { type: "string" }, paid: { type: "boolean" } }, 30), at(30))
          assert.deepStrictEqual(learned, {
            ...created,
            property_schema: { total: { type: "number" }, paid: { type: "boolean" } },
            last_seen_at: at(30),
            updated_at: at(30)
          })

          const late = yield* repo.recordSeen(auto({}, 40), at(25))
          assert.strictEqual(late.last_seen_at, at(30), "an older sighting does not move it back")
          assert.deepStrictEqual(yield* repo.findById(project.id, created.id), Option.some(late))
        }))

      it.effect("recordSeen leaves a manual schema alone and answers a definition in any state", () =>
        Effect.gen(function*() {
          const repo = yield* EventDefinitionsRepo
          const project = yield* givenProject()
          const manual = makeDefinition(project.id, {
            name: "manual.event",
            property_schema: { a: { type: "string" } },
            archived_at: at(1),
            deletion_requested_at: at(2)
          })
          yield* repo.insert(manual)
          const seen = yield* repo.recordSeen(
            makeDefinition(project.id, { name: "manual.event", source: "auto", property_schema: { b: { type: "number" } } }),
            at(50)
          )
          assert.deepStrictEqual(seen, { ...manual, last_seen_at: at(50) })
        }))

      it.effect("recordSeen of one new name from concurrent transactions creates one definition", () =>
        Effect.gen(function*() {
          const repo = yield* EventDefinitionsRepo
          const { withTransaction } = yield* Transactor
          const project = yield* givenProject()
          const results = yield* Effect.forEach(
            Array.from({ length: 8 }, (_, i) => i),
            (i) =>
              withTransaction(repo.recordSeen(
                makeDefinition(project.id, { name: "race", source: "auto", property_schema: { [`k${i}`]: { type: "string" } } }),
                at(i)
              )),
            { concurrency: "unbounded" }
          )
          assert.strictEqual(new Set(results.map((d) => d.id)).size, 1)
          const stored = Option.getOrThrow(yield* repo.findByName(project.id, "race"))
          assert.sameMembers(Object.keys(stored.property_schema), Array.from({ length: 8 }, (_, i) => `k${i}`))
          assert.strictEqual(stored.last_seen_at, at(7))
        }))

      it.effect("lists the definitions pending deletion across projects, oldest request first", () =>
        Effect.gen(function*() {
          const repo = yield* EventDefinitionsRepo
          const a = yield* givenProject()
          const b = yield* givenProject()
          const later = makeDefinition(a.id, { deletion_requested_at: at(-500) })
          const earlier = makeDefinition(b.id, { deletion_requested_at: at(-900) })
          yield* repo.insert(later)
          yield* repo.insert(earlier)
          yield* repo.insert(makeDefinition(a.id))
          const pending = (yield* repo.listPendingDeletion).filter((d) => d.project_id === a.id || d.project_id === b.id)
          assert.deepStrictEqual(ids(pending), [earlier.id, later.id])
        }))

      it.effect("refuses a definition of a missing project", () =>
        Effect.gen(function*() {
          const repo = yield* EventDefinitionsRepo
          yield* dies(repo.insert(makeDefinition("prj_missing")))
          yield* dies(repo.recordSeen(makeDefinition("prj_missing", { source: "auto" }), at(0)))
        }))
    })

    layer(storage, { excludeTestServices: true })("EventPlansRepo", (it) => {
      it.effect("stores and replaces a project's plan", () =>
        Effect.gen(function*() {
          const repo = yield* EventPlansRepo
          const project = yield* givenProject()
          const other = yield* givenProject()
          assert.isTrue(Option.isNone(yield* repo.find(project.id)))
          const plan = {
            project_id: project.id,
            events_enabled: false,
            monthly_allowance: 5_000_000_000,
            metered_overage: true,
            retention_days: 30,
            updated_at: at(1)
          }
          yield* repo.save(plan)
          assert.deepStrictEqual(yield* repo.find(project.id), Option.some(plan))
          const changed = { ...plan, events_enabled: true, monthly_allowance: 0, metered_overage: false, updated_at: at(2) }
          yield* repo.save(changed)
          assert.deepStrictEqual(yield* repo.find(project.id), Option.some(changed))
          assert.isTrue(Option.isNone(yield* repo.find(other.id)))
          yield* dies(repo.save({ ...plan, project_id: "prj_missing" }))
        }))

      it.effect("answers concurrent reads each with its project's plan", () =>
        Effect.gen(function*() {
          const repo = yield* EventPlansRepo
          const projects = yield* Effect.forEach([1, 2, 3], () => givenProject())
          const plan = (projectId: string, allowance: number) => ({
            project_id: projectId,
            events_enabled: true,
            monthly_allowance: allowance,
            metered_overage: false,
            retention_days: 365,
            updated_at: at(1)
          })
          yield* repo.save(plan(projects[0]!.id, 10))
          yield* repo.save(plan(projects[1]!.id, 20))
          const asked = [0, 1, 2, 0, 1, 2, 0].map((i) => projects[i]!.id)
          const found = yield* Effect.forEach(asked, (id) => repo.find(id), { concurrency: "unbounded" })
          assert.deepStrictEqual(
            found.map(Option.map((p) => p.monthly_allowance)),
            [Option.some(10), Option.some(20), Option.none(), Option.some(10), Option.some(20), Option.none(), Option.some(10)]
          )
        }))

      it.effect("counts emissions per project and period, undone with a failed transaction", () =>
        Effect.gen(function*() {
          const repo = yield* EventPlansRepo
          const { withTransaction } = yield* Transactor
          const project = yield* givenProject()
          const other = yield* givenProject()
          assert.strictEqual(yield* repo.usage(project.id, "2026-03"), 0)
          assert.strictEqual(yield* repo.countEmission(project.id, "2026-03"), 1)
          assert.strictEqual(yield* repo.countEmission(project.id, "2026-03"), 2)
          assert.strictEqual(yield* repo.countEmission(project.id, "2026-04"), 1)
          assert.strictEqual(yield* repo.countEmission(other.id, "2026-03"), 1)
          yield* Effect.flip(withTransaction(Effect.andThen(repo.countEmission(project.id, "2026-03"), Effect.fail(new Boom()))))
          assert.strictEqual(yield* repo.usage(project.id, "2026-03"), 2)
          assert.strictEqual(yield* repo.usage(project.id, "2026-04"), 1)
        }))

      it.effect("gives concurrent transactions distinct counts", () =>
        Effect.gen(function*() {
          const repo = yield* EventPlansRepo
          const { withTransaction } = yield* Transactor
          const project = yield* givenProject()
          const counts = yield* Effect.forEach(
            Array.from({ length: 12 }, (_, i) => i),
            () => withTransaction(Effect.tap(repo.countEmission(project.id, "2026-03"), () => Effect.sleep(2))),
            { concurrency: "unbounded" }
          )
          assert.sameMembers(counts, Array.from({ length: 12 }, (_, i) => i + 1))
          assert.strictEqual(yield* repo.usage(project.id, "2026-03"), 12)
        }))
    })

    layer(storage, { excludeTestServices: true })("Outbox", (it) => {
      /** A type of its own per test, so tests sharing one store never take each other's entries. */
      const freshType = () => `test.${crypto.randomUUID()}`

      it.effect("hands out entries of the asked types oldest first, each once", () =>
        Effect.gen(function*() {
          const outbox = yield* Outbox
          const project = yield* givenProject()
          const type = freshType()
          const otherType = freshType()
          const e2 = makeDomainEvent(project.id, { type, created_at: at(2), payload: { nested: { list: [1, "two", null] } } })
          const e1 = makeDomainEvent(null, { type, created_at: at(1) })
          const e3 = makeDomainEvent(project.id, { type, created_at: at(3) })
          const other = makeDomainEvent(project.id, { type: otherType, created_at: at(0) })
          for (const e of [e2, other, e3, e1]) yield* outbox.append(e)
          assert.deepStrictEqual(yield* outbox.take([type], 2), [e1, e2])
          assert.deepStrictEqual(yield* outbox.take([type], 2), [e3])
          assert.deepStrictEqual(yield* outbox.take([type], 2), [])
          assert.deepStrictEqual(yield* outbox.take([type, otherType], 5), [other])
          assert.deepStrictEqual(yield* outbox.take([], 5), [])
          yield* dies(outbox.append(makeDomainEvent("prj_missing")))
        }))

      it.effect("puts entries back when the taker's transaction fails", () =>
        Effect.gen(function*() {
          const outbox = yield* Outbox
          const { withTransaction } = yield* Transactor
          const type = freshType()
          const entry = makeDomainEvent(null, { type })
          yield* outbox.append(entry)
          const error = yield* Effect.flip(withTransaction(Effect.gen(function*() {
            assert.deepStrictEqual(yield* outbox.take([type], 10), [entry])
            return yield* Effect.fail(new Boom())
          })))
          assert.instanceOf(error, Boom)
          assert.deepStrictEqual(yield* outbox.take([type], 10), [entry])
        }))

      it.effect("never hands one entry to two concurrent takers", () =>
        Effect.gen(function*() {
          const outbox = yield* Outbox
          const { withTransaction } = yield* Transactor
          const type = freshType()
          const entries = Array.from({ length: 6 }, (_, i) => makeDomainEvent(null, { type, created_at: at(i) }))
          for (const e of entries) yield* outbox.append(e)
          const holding = yield* Deferred.make<void>()
          const release = yield* Deferred.make<void>()
          const first = yield* Effect.forkChild(withTransaction(Effect.gen(function*() {
            const taken = yield* outbox.take([type], 3)
            yield* Deferred.succeed(holding, undefined)
            yield* Deferred.await(release)
            return taken
          })))
          yield* Deferred.await(holding)
          const second = yield* Effect.forkChild(withTransaction(outbox.take([type], 3)))
          yield* Effect.sleep(50)
          yield* Deferred.succeed(release, undefined)
          const a = yield* Fiber.join(first)
          const b = yield* Fiber.join(second)
          assert.deepStrictEqual(ids(a), ids(entries.slice(0, 3)))
          assert.deepStrictEqual(ids(b), ids(entries.slice(3)))
        }))

      it.effect("prunes entries created strictly before a time", () =>
        Effect.gen(function*() {
          const outbox = yield* Outbox
          const type = freshType()
          const old = makeDomainEvent(null, { type, created_at: at(-10_000_000) })
          const boundary = makeDomainEvent(null, { type, created_at: at(-5_000_000) })
          yield* outbox.append(old)
          yield* outbox.append(boundary)
          assert.isAtLeast(yield* outbox.prune(at(-5_000_000)), 1)
          assert.deepStrictEqual(yield* outbox.take([type], 10), [boundary])
        }))
    })
  })
}
