/**
 * The project events service (spec "Project events", decisions 2.8, 3.6, 4.5):
 * emission (validation, plan and allowance, the event with its domain event
 * in one transaction, definition auto-creation), queries, and the definition
 * lifecycle (create or update by name, archive and restore, rename while
 * unused, asynchronous deletion). Depends only on ports.
 */
import { Clock, Context, Effect, Exit, Layer, Option } from "effect"
import type { Principal } from "../projects/Projects.ts"
import { EventDefinitionsRepo, EventsRepo } from "./EventsRepo.ts"
import { JobQueue } from "../ports/JobQueue.ts"
import { Outbox } from "../ports/Outbox.ts"
import type { Duplicate } from "../ports/StorageError.ts"
import { Transactor } from "../ports/Transactor.ts"
import { invalid, type NotFound, notFound, type PaymentRequired, unprocessable, type Unprocessable } from "../shared/ApiError.ts"
import * as GroupCommit from "../shared/GroupCommit.ts"
import { Ids } from "../shared/Ids.ts"
import type { ListSlice, ListWindow } from "../shared/Pagination.ts"
import { ConversationLookup } from "./Conversations.ts"
import {
  type EventDefinitionInput,
  type EventDefinitionRecord,
  type EventDefinitionUpdateInput,
  type EventFilter,
  type EventPlan,
  type EventInput,
  type EventRecord,
  PROJECT_EVENT_RECORDED,
  type ProjectEventRecordedPayload,
  type EventPropertySchema,
  type EventPropertySchemaInput,
  toProjectEvent
} from "./Event.ts"
import { allowancePeriod, EventPlans } from "./EventPlans.ts"
import { requestDefinitionDeletion } from "./EventsJobs.ts"
import {
  checkName,
  checkOccurredAt,
  checkProperties,
  inferSchema,
  pendingDeletion,
  PROPERTY_KEY_MAX_CHARACTERS
} from "./Rules.ts"

export const EVENT_DEFINITION_DESCRIPTION_MAX = 1000

/** Emissions written by one transaction at most (see `emit`). */
export const EMIT_BATCH_MAX = 256

/** An emission checked and waiting for its transaction. */
interface PendingEmission {
  readonly plan: EventPlan
  readonly now: number
  readonly record: EventRecord
  readonly autoDefinition: EventDefinitionRecord
  readonly domainEventId: string
  readonly chainDepth: number
}

/** A batch that cannot be written as one: its emissions go one by one. */
const oneByOne = { _tag: "OneByOne" } as const

const nameTaken = (name: string) => unprocessable(`An event definition named ${name} already exists`)
const onDuplicate = (name: string) => (_: Duplicate) => Effect.fail(nameTaken(name))
const definitionNotFound = (id: string) => notFound("Event definition", id)

const checkDescription = (description: string | null | undefined) =>
  description !== undefined && description !== null && [...description].length > EVENT_DEFINITION_DESCRIPTION_MAX
    ? Effect.fail(invalid("description", `must be at most ${EVENT_DEFINITION_DESCRIPTION_MAX} characters`))
    : Effect.void

/** A manual property schema: keys within the property key limit; a null description is no description. */
const checkPropertySchema = (input: EventPropertySchemaInput | undefined) =>
  Effect.gen(function*() {
    if (input === undefined) return undefined
    const schema: Record<string, EventPropertySchema[string]> = {}
    for (const [key, spec] of Object.entries(input)) {
      if ([...key].length > PROPERTY_KEY_MAX_CHARACTERS) {
        return yield* invalid(`property_schema.${key}`, "key is longer than 64 characters", `property key ${key} is longer than 64 characters`)
      }
      Object.defineProperty(schema, key, {
        value: spec.description === undefined || spec.description === null
          ? { type: spec.type }
          : { type: spec.type, description: spec.description },
        enumerable: true,
        writable: true,
        configurable: true
      })
    }
    return schema as EventPropertySchema
  })

export interface EmitOptions {
  /** Event-triggered hops behind the emitting run (decisions 10.1); 0 outside event-triggered runs. */
  readonly chainDepth?: number | undefined
}

export class Events extends Context.Service<Events, {
  /**
   * Records an event for the project (POST /events, and later the emit_event
   * node, agent tool and function answers): 402 when the plan lacks events or
   * the allowance is used up, 422 for the spec's refusals.
   */
  readonly emit: (
    projectId: string,
    input: EventInput,
    options?: EmitOptions
  ) => Effect.Effect<EventRecord, Unprocessable | PaymentRequired>
  /** Newest first by occurred_at. */
  readonly list: (principal: Principal, filter: EventFilter, window: ListWindow) => Effect.Effect<ListSlice<EventRecord>>
  readonly listDefinitions: (
    principal: Principal,
    options: { readonly includeArchived: boolean }
  ) => Effect.Effect<ReadonlyArray<EventDefinitionRecord>>
  /** Creates the definition, or updates (and restores) the one with the same name; `created` tells which. */
  readonly saveDefinition: (
    principal: Principal,
    input: EventDefinitionInput
  ) => Effect.Effect<{ readonly definition: EventDefinitionRecord; readonly created: boolean }, Unprocessable | PaymentRequired>
  readonly getDefinition: (principal: Principal, id: string) => Effect.Effect<EventDefinitionRecord, NotFound>
  /** The project's definition unless it is pending deletion (which event names an agent may emit). */
  readonly findDefinition: (projectId: string, id: string) => Effect.Effect<Option.Option<EventDefinitionRecord>>
  readonly updateDefinition: (
    principal: Principal,
    id: string,
    input: EventDefinitionUpdateInput
  ) => Effect.Effect<EventDefinitionRecord, NotFound | Unprocessable | PaymentRequired>
  /** Marks the definition pending deletion and queues the removal of it and its events. */
  readonly deleteDefinition: (principal: Principal, id: string) => Effect.Effect<EventDefinitionRecord, NotFound>
}>()("@parley/core/events/Events") {
  static readonly layer = Layer.effect(
    Events,
    Effect.gen(function*() {
      const events = yield* EventsRepo
      const definitions = yield* EventDefinitionsRepo
      const outbox = yield* Outbox
      const plans = yield* EventPlans
      const conversations = yield* ConversationLookup
      const jobs = yield* JobQueue
      const tx = yield* Transactor
      const ids = yield* Ids

      const iso = (ms: number) => new Date(ms).toISOString()

      /** A definition the caller may see: not pending deletion. */
      const findVisible = (projectId: string, id: string, forUpdate = false) =>
        definitions.findById(projectId, id, { forUpdate }).pipe(
          Effect.flatMap((found) =>
            Option.isSome(found) && found.value.deletion_requested_at === null
              ? Effect.succeed(found.value)
              : Effect.fail(definitionNotFound(id))
          )
        )

      const emit = Effect.fn("Events.emit")(function*(projectId: string, input: EventInput, options?: EmitOptions) {
        const plan = yield* plans.requireEvents(projectId)
        const now = yield* Clock.currentTimeMillis
        const name = yield* checkName(input.name)
        const occurredAt = yield* checkOccurredAt(input.occurred_at, now, plan.retention_days)
        const properties = yield* checkProperties(input.properties)
        const conversationId = input.conversation_id ?? null
        if (conversationId !== null && !(yield* conversations.exists(projectId, conversationId))) {
          return yield* unprocessable("Conversation not found")
        }
        const record: EventRecord = {
          id: yield* ids.uuid,
          project_id: projectId,
          name,
          occurred_at: occurredAt,
          conversation_id: conversationId,
          properties,
          created_at: iso(now)
        }
        const autoDefinition: EventDefinitionRecord = {
          id: yield* ids.uuid,
          project_id: projectId,
          name,
          description: null,
          property_schema: inferSchema(properties),
          source: "auto",
          archived_at: null,
          last_seen_at: record.created_at,
          deletion_requested_at: null,
          created_at: record.created_at,
          updated_at: record.created_at
        }
        const domainEventId = yield* ids.uuid
        return yield* submit({ plan, now, record, autoDefinition, domainEventId, chainDepth: options?.chainDepth ?? 0 })
      })

      const domainEvent = (p: PendingEmission, definitionId: string) => {
        const payload: ProjectEventRecordedPayload = {
          event: toProjectEvent(p.record),
          definition_id: definitionId,
          ...(p.chainDepth > 0 ? { chain_depth: p.chainDepth } : {})
        }
        return {
          id: p.domainEventId,
          project_id: p.record.project_id,
          type: PROJECT_EVENT_RECORDED,
          payload,
          created_at: p.record.created_at
        }
      }

      /** One emission in its own transaction. */
      const emitOne = (p: PendingEmission) =>
        tx.withTransaction(Effect.gen(function*() {
          const { record } = p
          // First: it locks the definition, so a concurrent DELETE is either seen here or sees this event's name.
          const definition = yield* definitions.recordSeen(p.autoDefinition, record.created_at)
          if (definition.deletion_requested_at !== null) return yield* pendingDeletion(record.name)
          yield* plans.consumeAllowance(record.project_id, p.plan, p.now)
          yield* events.insert(record)
          yield* outbox.append(domainEvent(p, definition.id))
          return record
        }))

      /**
       * Emissions waiting together, in one transaction: one definition upsert per name (locked in name order,
       * before counting, like `emitOne`), one count per project and month, one insert of the events and one of
       * their domain events. Fails with `oneByOne` (rolling everything back) when a name is pending deletion
       * or the allowance would refuse one of them: those go through `emitOne`, which answers each as alone.
       */
      const emitBatch = (batch: ReadonlyArray<PendingEmission>) =>
        tx.withTransaction(Effect.gen(function*() {
          const byName = new Map<string, Array<PendingEmission>>()
          const byPeriod = new Map<string, Array<PendingEmission>>()
          const add = (groups: Map<string, Array<PendingEmission>>, key: string, p: PendingEmission) => {
            const group = groups.get(key)
            if (group === undefined) groups.set(key, [p])
            else group.push(p)
          }
          for (const p of batch) {
            add(byName, `${p.record.project_id}\u0000${p.record.name}`, p)
            add(byPeriod, `${p.record.project_id}\u0000${allowancePeriod(p.now)}`, p)
          }
          const definitionIds = new Map<PendingEmission, string>()
          for (const key of [...byName.keys()].sort()) {
            const group = byName.get(key)!
            // As if recorded in turn: a key keeps the type it was first seen with.
            let schema: EventPropertySchema = {}
            let seenAt = group[0]!.record.created_at
            for (const p of group) {
              schema = { ...p.autoDefinition.property_schema, ...schema }
              if (Date.parse(p.record.created_at) > Date.parse(seenAt)) seenAt = p.record.created_at
            }
            const definition = yield* definitions.recordSeen({ ...group[0]!.autoDefinition, property_schema: schema }, seenAt)
            if (definition.deletion_requested_at !== null) return yield* Effect.fail(oneByOne)
            for (const p of group) definitionIds.set(p, definition.id)
          }
          for (const key of [...byPeriod.keys()].sort()) {
            const group = byPeriod.get(key)!
            const first = group[0]!
            const accepted = yield* plans.consumeAllowances(first.record.project_id, group.map((p) => p.plan), first.now)
            if (!accepted) return yield* Effect.fail(oneByOne)
          }
          yield* events.insertMany(batch.map((p) => p.record))
          yield* outbox.appendMany(batch.map((p) => domainEvent(p, definitionIds.get(p)!)))
        }))

      // The emission writer: whatever waits when it is free makes its next batch, so the hot rows (a name's
      // definition, the month's count) are locked once per batch, not once per emission.
      const submit = yield* GroupCommit.make<PendingEmission, EventRecord, Unprocessable | PaymentRequired>({
        max: EMIT_BATCH_MAX,
        many: (batch) => Effect.as(emitBatch(batch), batch.map((p) => Exit.succeed(p.record))),
        one: emitOne
      })

      const saveDefinition = Effect.fn("Events.saveDefinition")(function*(principal: Principal, input: EventDefinitionInput) {
        const projectId = principal.project.id
        yield* plans.requireEvents(projectId)
        const name = yield* checkName(input.name)
        yield* checkDescription(input.description)
        const schema = yield* checkPropertySchema(input.property_schema)
        const now = iso(yield* Clock.currentTimeMillis)
        return yield* tx.withTransaction(Effect.gen(function*() {
          const existing = yield* definitions.findByName(projectId, name, { forUpdate: true })
          if (Option.isSome(existing)) {
            const current = existing.value
            if (current.deletion_requested_at !== null) return yield* pendingDeletion(name)
            const next: EventDefinitionRecord = {
              ...current,
              description: input.description !== undefined ? input.description : current.description,
              property_schema: schema ?? current.property_schema,
              // POST with the name restores an archived definition, unless it asks to stay archived.
              archived_at: input.archived === true ? (current.archived_at ?? now) : null,
              updated_at: now
            }
            const stored = yield* definitions.update(next).pipe(Effect.catchTag("Duplicate", onDuplicate(name)))
            return { definition: Option.getOrElse(stored, () => next), created: false }
          }
          const created: EventDefinitionRecord = {
            id: yield* ids.uuid,
            project_id: projectId,
            name,
            description: input.description ?? null,
            property_schema: schema ?? {},
            source: "manual",
            archived_at: input.archived === true ? now : null,
            last_seen_at: null,
            deletion_requested_at: null,
            created_at: now,
            updated_at: now
          }
          yield* definitions.insert(created).pipe(Effect.catchTag("Duplicate", onDuplicate(name)))
          return { definition: created, created: true }
        }))
      })

      const updateDefinition = Effect.fn("Events.updateDefinition")(
        function*(principal: Principal, id: string, input: EventDefinitionUpdateInput) {
          const projectId = principal.project.id
          yield* plans.requireEvents(projectId)
          yield* checkDescription(input.description)
          const schema = yield* checkPropertySchema(input.property_schema)
          const now = iso(yield* Clock.currentTimeMillis)
          return yield* tx.withTransaction(Effect.gen(function*() {
            // Locked first: an emission of the old name waits for the rename, or the rename sees its event.
            const current = yield* findVisible(projectId, id, true)
            let name = current.name
            if (input.name !== undefined && input.name !== current.name) {
              name = yield* checkName(input.name)
              if (yield* events.nameUsed(projectId, current.name)) {
                return yield* invalid("name", "cannot change once events with it have been recorded")
              }
            }
            const next: EventDefinitionRecord = {
              ...current,
              name,
              description: input.description !== undefined ? input.description : current.description,
              property_schema: schema ?? current.property_schema,
              archived_at: input.archived === undefined
                ? current.archived_at
                : input.archived
                ? (current.archived_at ?? now)
                : null,
              updated_at: now
            }
            const stored = yield* definitions.update(next).pipe(Effect.catchTag("Duplicate", onDuplicate(name)))
            return yield* Option.match(stored, { onNone: () => Effect.fail(definitionNotFound(next.id)), onSome: Effect.succeed })
          }))
        }
      )

      const deleteDefinition = Effect.fn("Events.deleteDefinition")(function*(principal: Principal, id: string) {
        const projectId = principal.project.id
        const now = iso(yield* Clock.currentTimeMillis)
        const marked = yield* tx.withTransaction(Effect.gen(function*() {
          const current = yield* findVisible(projectId, id, true)
          const next = { ...current, deletion_requested_at: now, updated_at: now }
          const stored = yield* definitions.update(next).pipe(Effect.orDie)
          return Option.getOrElse(stored, () => next)
        }))
        // After the commit, so the job finds the mark. Were this lost, the daily maintenance asks again.
        yield* requestDefinitionDeletion(jobs, projectId, id)
        return marked
      })

      return Events.of({
        emit,
        list: (principal, filter, window) => events.list(principal.project.id, filter, window),
        listDefinitions: (principal, options) => definitions.list(principal.project.id, options),
        saveDefinition,
        getDefinition: (principal, id) => findVisible(principal.project.id, id),
        findDefinition: (projectId, id) =>
          Effect.map(definitions.findById(projectId, id), Option.filter((d) => d.deletion_requested_at === null)),
        updateDefinition,
        deleteDefinition
      })
    })
  )
}
