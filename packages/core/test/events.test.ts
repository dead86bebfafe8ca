/**
 * The project events service on memory ports, with the job queue on the
 * TestClock: the rules' boundaries, the transaction around an emission (event,
 * count, domain event), definition deletion through its job and the daily
 * retention purge.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Layer, Option } from "effect"
import { TestClock } from "effect/testing"
import { ConversationLookup } from "../src/events/Conversations.ts"
import { PROJECT_EVENT_RECORDED } from "../src/events/Event.ts"
import { EventPlans } from "../src/events/EventPlans.ts"
import { Events } from "../src/events/Events.ts"
import { layerEventsWorkers } from "../src/events/EventsJobs.ts"
import * as Rules from "../src/events/Rules.ts"
import { EventDefinitionsRepo, EventsRepo } from "../src/events/EventsRepo.ts"
import { Outbox } from "../src/ports/Outbox.ts"
import { type Principal, Projects } from "../src/projects/Projects.ts"
import { Ids } from "../src/shared/Ids.ts"
import { layerDefinitionReferences } from "../src/Parley.ts"
import { DefinitionReferences } from "../src/workflows/References.ts"
import { layerMemoryJobQueue, layerMemoryStorage } from "../src/testing/index.ts"

const KNOWN_CONVERSATION = "5f0c6a4e-2b1d-4c3e-9f8a-7b6c5d4e3f2a"

const Ports = Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layerSequential)

/** The services over fresh memory ports; a conversation lookup that knows one conversation. */
const Services = Events.layer.pipe(
  Layer.provideMerge(EventPlans.layer),
  Layer.provideMerge(Projects.layer),
  Layer.provide(Layer.succeed(
    ConversationLookup,
    ConversationLookup.of({ exists: (_projectId, id) => Effect.succeed(id === KNOWN_CONVERSATION) })
  )),
  Layer.provideMerge(Ports)
)

// Let the fibers woken by the clock (job attempts) run before the test looks.
const settle = Effect.yieldNow.pipe(Effect.repeat({ times: 50 }))

const START = Date.UTC(2026, 2, 4, 12, 0, 0)
const HOUR = 3_600_000

const newPrincipal = Effect.gen(function*() {
  const projects = yield* Projects
  const project = yield* projects.create("Acme")
  return { project, apiKey: { id: "key", name: "test" } } satisfies Principal
})

const refusal = <A, E extends { readonly error: string; readonly code?: string }, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.map(Effect.flip(effect), (e) => ({ tag: (e as unknown as { _tag: string })._tag, error: e.error, code: e.code }))

describe("event rules", () => {
  const fails = (effect: Effect.Effect<unknown, { readonly error: string }>) =>
    Effect.runSync(Effect.match(effect, { onFailure: (e) => e.error, onSuccess: () => "ok" }))

  it("names: 1-128 characters, no uppercase letter", () => {
    assert.isTrue(Rules.isEventName("a".repeat(128)))
    assert.isTrue(Rules.isEventName("😀".repeat(128)), "characters, not UTF-16 units")
    assert.isTrue(Rules.isEventName("Order Paid!".toLowerCase()), "the snake_case pattern is only recommended")
    assert.isFalse(Rules.isEventName("a".repeat(129)))
    assert.isFalse(Rules.isEventName("Order.paid"))
    assert.isFalse(Rules.isEventName("ördér.Ü"))
    assert.isFalse(Rules.isEventName(""))
    assert.isFalse(Rules.isEventName("   "))
  })

  it("properties: 25 keys of up to 64 characters, scalar values, strings up to 1 KB, 8 KB in all", () => {
    const keys = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i]))
    assert.strictEqual(fails(Rules.checkProperties(keys(25))), "ok")
    assert.strictEqual(fails(Rules.checkProperties(keys(26))), "properties may contain at most 25 keys")
    assert.strictEqual(fails(Rules.checkProperties({ ["k".repeat(64)]: 1 })), "ok")
    assert.strictEqual(
      fails(Rules.checkProperties({ ["k".repeat(65)]: 1 })),
      `property key ${"k".repeat(65)} is longer than 64 characters`
    )
    assert.strictEqual(fails(Rules.checkProperties({ s: "é".repeat(512) })), "ok", "1,024 bytes")
    assert.strictEqual(fails(Rules.checkProperties({ s: "é".repeat(512) + "x" })), "property s exceeds 1 KB")
    for (const nested of [{ a: 1 }, [1], Number.POSITIVE_INFINITY, undefined]) {
      assert.strictEqual(
        fails(Rules.checkProperties({ ok: "fine", bad: nested })),
        "property bad must be a string, number, boolean or null"
      )
    }
    // Nine values of 1,000 bytes: each within its limit, together over 8 KB.
    const big = Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`p${i}`, "x".repeat(1000)]))
    assert.strictEqual(fails(Rules.checkProperties(big)), "properties exceed 8 KB")
    const justUnder = Object.fromEntries(Array.from({ length: 8 }, (_, i) => [`p${i}`, "x".repeat(1000)]))
    assert.strictEqual(fails(Rules.checkProperties(justUnder)), "ok")
  })

  it("occurred_at: at most 5 minutes ahead, inside the retention window, ISO 8601 with an offset", () => {
    const now = START
    const check = (input: string | null) => fails(Rules.checkOccurredAt(input, now, 365))
    assert.strictEqual(check(new Date(now + 5 * 60_000).toISOString()), "ok")
    assert.strictEqual(check(new Date(now + 5 * 60_000 + 1).toISOString()), "occurred_at cannot be more than 5 minutes in the future")
    assert.strictEqual(check(new Date(now - 365 * 86_400_000).toISOString()), "ok")
    assert.strictEqual(check(new Date(now - 365 * 86_400_000 - 1).toISOString()), "occurred_at is older than the event retention window")
    assert.strictEqual(check("2026-03-04T14:00:00+02:00"), "ok")
    for (const bad of ["yesterday", "2026-03-04", "2026-03-04T12:00:00", "1772625600000"]) {
      assert.strictEqual(check(bad), "occurred_at must be an ISO 8601 date-time", bad)
    }
    assert.strictEqual(Effect.runSync(Rules.checkOccurredAt("2026-03-04T14:00:00+02:00", now, 365)), "2026-03-04T12:00:00.000Z")
    assert.strictEqual(Effect.runSync(Rules.checkOccurredAt(null, now, 365)), new Date(now).toISOString())
    assert.strictEqual(Effect.runSync(Rules.checkOccurredAt(" ", now, 365)), new Date(now).toISOString())
  })
})

describe("Events service (memory ports)", () => {
  it.effect("records an event, its auto definition and its domain event together", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(START)
      const events = yield* Events
      const outbox = yield* Outbox
      const principal = yield* newPrincipal
      const recorded = yield* events.emit(principal.project.id, {
        name: "order.paid",
        conversation_id: KNOWN_CONVERSATION,
        properties: { total: 12.5, currency: "EUR", gift: false, note: null }
      })
      assert.strictEqual(recorded.occurred_at, new Date(START).toISOString())
      assert.strictEqual(recorded.created_at, new Date(START).toISOString())
      const [definition] = yield* events.listDefinitions(principal, { includeArchived: false })
      assert.deepStrictEqual(
        [definition!.name, definition!.source, definition!.description, definition!.last_seen_at],
        ["order.paid", "auto", null, recorded.created_at]
      )
      assert.deepStrictEqual(definition!.property_schema, {
        total: { type: "number" },
        currency: { type: "string" },
        gift: { type: "boolean" }
      })
      const taken = yield* outbox.take([PROJECT_EVENT_RECORDED], 10)
      assert.deepStrictEqual(taken.map((e) => [e.project_id, e.type, e.payload]), [[
        principal.project.id,
        PROJECT_EVENT_RECORDED,
        {
          event: {
            id: recorded.id,
            name: "order.paid",
            occurred_at: recorded.occurred_at,
            conversation_id: KNOWN_CONVERSATION,
            properties: { total: 12.5, currency: "EUR", gift: false, note: null },
            created_at: recorded.created_at
          },
          definition_id: definition!.id
        }
      ]])
    }).pipe(Effect.provide(Services)))

  it.effect("a refused emission leaves no event, no count, no definition and no domain event", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(START)
      const events = yield* Events
      const plans = yield* EventPlans
      const outbox = yield* Outbox
      const principal = yield* newPrincipal
      yield* plans.set(principal.project.id, { monthly_allowance: 1 })
      yield* events.emit(principal.project.id, { name: "first" })
      const refused = yield* refusal(events.emit(principal.project.id, { name: "second" }))
      assert.deepStrictEqual(refused, {
        tag: "PaymentRequired",
        error: "Monthly project event allowance exceeded",
        code: "allowance_exceeded"
      })
      assert.strictEqual((yield* plans.get(principal.project.id)).used_this_period, 1)
      const names = (yield* events.listDefinitions(principal, { includeArchived: true })).map((d) => d.name)
      assert.deepStrictEqual(names, ["first"])
      assert.strictEqual((yield* outbox.take([PROJECT_EVENT_RECORDED], 10)).length, 1)
      assert.strictEqual((yield* events.list(principal, {}, { mode: "page", page: 1, perPage: 10 })).total, 1)
      // The allowance is per calendar month (UTC): the next month starts again.
      yield* TestClock.setTime(Date.UTC(2026, 3, 1))
      yield* events.emit(principal.project.id, { name: "second" })
    }).pipe(Effect.provide(Services)))

  it.effect("counts concurrent emissions exactly against the allowance", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(START)
      const events = yield* Events
      const plans = yield* EventPlans
      const principal = yield* newPrincipal
      yield* plans.set(principal.project.id, { monthly_allowance: 4 })
      const exits = yield* Effect.forEach(
        Array.from({ length: 10 }, (_, i) => i),
        (i) => Effect.exit(events.emit(principal.project.id, { name: `burst.${i % 3}` })),
        { concurrency: "unbounded" }
      )
      assert.strictEqual(exits.filter(Exit.isSuccess).length, 4)
      assert.strictEqual((yield* plans.get(principal.project.id)).used_this_period, 4)
      yield* plans.set(principal.project.id, { metered_overage: true })
      yield* events.emit(principal.project.id, { name: "burst.0" })
      assert.strictEqual((yield* plans.get(principal.project.id)).used_this_period, 5, "overage is counted")
    }).pipe(Effect.provide(Services)))

  it.effect("checks conversation_id against the project's conversations", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(START)
      const events = yield* Events
      const principal = yield* newPrincipal
      const refused = yield* refusal(events.emit(principal.project.id, {
        name: "chat.rated",
        conversation_id: "9a1b2c3d-0000-4000-8000-000000000000"
      }))
      assert.deepStrictEqual(refused, { tag: "Unprocessable", error: "Conversation not found", code: undefined })
    }).pipe(Effect.provide(Services)))

  it.effect("deletes a definition and all its events through its job, refusing the name meanwhile", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(START)
      const events = yield* Events
      const repo = yield* EventsRepo
      const definitions = yield* EventDefinitionsRepo
      const principal = yield* newPrincipal
      const projectId = principal.project.id
      for (let i = 0; i < 3; i++) yield* events.emit(projectId, { name: "doomed", properties: { i } })
      yield* events.emit(projectId, { name: "kept" })
      const doomed = (yield* events.listDefinitions(principal, { includeArchived: false })).find((d) => d.name === "doomed")!

      // No worker yet: the mark alone hides the definition and refuses its name.
      yield* events.deleteDefinition(principal, doomed.id)
      assert.strictEqual((yield* refusal(events.getDefinition(principal, doomed.id))).tag, "NotFound")
      assert.strictEqual((yield* refusal(events.deleteDefinition(principal, doomed.id))).tag, "NotFound")
      assert.deepStrictEqual((yield* events.listDefinitions(principal, { includeArchived: true })).map((d) => d.name), ["kept"])
      assert.deepStrictEqual(yield* refusal(events.emit(projectId, { name: "doomed" })), {
        tag: "Unprocessable",
        error: "Event name doomed is pending deletion",
        code: undefined
      })
      assert.deepStrictEqual(yield* refusal(events.saveDefinition(principal, { name: "doomed" })), {
        tag: "Unprocessable",
        error: "Event name doomed is pending deletion",
        code: undefined
      })
      assert.isTrue(yield* repo.nameUsed(projectId, "doomed"), "removal is asynchronous")

      // The worker starts: the queued job runs.
      yield* Layer.build(layerEventsWorkers)
      yield* settle
      assert.isFalse(yield* repo.nameUsed(projectId, "doomed"))
      assert.isTrue(yield* repo.nameUsed(projectId, "kept"))
      assert.isTrue(Option.isNone(yield* definitions.findById(projectId, doomed.id)))

      // Irreversible, and the name is free again: a new emission starts a new definition.
      yield* events.emit(projectId, { name: "doomed" })
      const again = (yield* events.listDefinitions(principal, { includeArchived: false })).find((d) => d.name === "doomed")!
      assert.notStrictEqual(again.id, doomed.id)
    }).pipe(Effect.provide(Services)))

  it.effect("a deletion whose job was lost is requested again by the daily maintenance", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(START)
      const events = yield* Events
      const definitions = yield* EventDefinitionsRepo
      const principal = yield* newPrincipal
      yield* events.emit(principal.project.id, { name: "orphan" })
      const [orphan] = yield* events.listDefinitions(principal, { includeArchived: false })
      // Marked as DELETE marks it, but no job was ever queued (the host died in between).
      yield* definitions.update({ ...orphan!, deletion_requested_at: new Date(START).toISOString() })
      yield* Layer.build(layerEventsWorkers)
      yield* settle
      assert.isTrue(Option.isNone(yield* definitions.findById(principal.project.id, orphan!.id)))
    }).pipe(Effect.provide(Services)))

  it.effect("purges events older than each project's retention window every day at midnight UTC", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(START)
      const events = yield* Events
      const plans = yield* EventPlans
      const short = yield* newPrincipal
      const long = yield* newPrincipal
      yield* plans.set(short.project.id, { retention_days: 2 })
      const at = (ms: number) => new Date(ms).toISOString()
      const older = yield* events.emit(short.project.id, { name: "visit", occurred_at: at(START - 36 * HOUR) })
      const newer = yield* events.emit(short.project.id, { name: "visit", occurred_at: at(START) })
      const kept = yield* events.emit(long.project.id, { name: "visit", occurred_at: at(START - 36 * HOUR) })
      const remaining = Effect.gen(function*() {
        const ids: Array<string> = []
        for (const principal of [short, long]) {
          const slice = yield* events.list(principal, {}, { mode: "page", page: 1, perPage: 10 })
          ids.push(...slice.items.map((e) => e.id))
        }
        return ids
      })

      yield* Layer.build(layerEventsWorkers)
      yield* settle
      assert.sameMembers(yield* remaining, [older.id, newer.id, kept.id], "the start-up run finds nothing to purge")

      // 2026-03-05T00:00Z: the cutoff is 03-03T00:00Z, exactly `older`'s time: kept (strictly older goes).
      yield* TestClock.adjust(12 * HOUR)
      yield* settle
      assert.sameMembers(yield* remaining, [older.id, newer.id, kept.id])
      // 03-06T00:00Z: cutoff 03-04T00:00Z.
      yield* TestClock.adjust(24 * HOUR)
      yield* settle
      assert.sameMembers(yield* remaining, [newer.id, kept.id])
      // 03-07T00:00Z: cutoff 03-05T00:00Z; the other project keeps a year.
      yield* TestClock.adjust(24 * HOUR)
      yield* settle
      assert.sameMembers(yield* remaining, [kept.id])
      // A year later the default window has passed too; one adjust runs every daily job in between.
      yield* TestClock.adjust(365 * 24 * HOUR)
      yield* settle
      assert.deepStrictEqual(yield* remaining, [])
    }).pipe(Effect.provide(Services)))

  it.effect("drops outbox entries nobody took within a week", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(START)
      const events = yield* Events
      const outbox = yield* Outbox
      const principal = yield* newPrincipal
      yield* events.emit(principal.project.id, { name: "unheard" })
      yield* Layer.build(layerEventsWorkers)
      yield* TestClock.adjust(6 * 24 * HOUR)
      yield* settle
      assert.strictEqual((yield* outbox.take([PROJECT_EVENT_RECORDED], 10)).length, 1, "kept for a week")
      yield* events.emit(principal.project.id, { name: "unheard" })
      yield* TestClock.adjust(8 * 24 * HOUR)
      yield* settle
      assert.strictEqual((yield* outbox.take([PROJECT_EVENT_RECORDED], 10)).length, 0)
    }).pipe(Effect.provide(Services)))

  it.effect("answers workflow definitions' references to event definitions (agent emit_event tool)", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(START)
      const events = yield* Events
      const principal = yield* newPrincipal
      const other = yield* newPrincipal
      const { definition } = yield* events.saveDefinition(principal, { name: "referenced.event" })
      const refs = yield* Effect.provide(Effect.service(DefinitionReferences), layerDefinitionReferences)
      assert.deepStrictEqual(yield* refs.lookup(principal.project.id, "event_definition", definition.id), Option.some("referenced.event"))
      assert.isTrue(Option.isNone(yield* refs.lookup(other.project.id, "event_definition", definition.id)))
      yield* events.deleteDefinition(principal, definition.id)
      assert.isTrue(Option.isNone(yield* refs.lookup(principal.project.id, "event_definition", definition.id)), "pending deletion")
    }).pipe(Effect.provide(Services)))
})
