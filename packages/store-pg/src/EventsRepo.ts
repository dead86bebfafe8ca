/** `EventsRepo`, `EventDefinitionsRepo`, `EventPlansRepo` and the `Outbox` on PostgreSQL (migration 0003). */
import {
  type DomainEvent,
  EVENT_TOTAL_CAP,
  type EventDefinitionRecord,
  EventDefinitionSource,
  EventDefinitionsRepo,
  type EventFilter,
  type EventPlanRecord,
  EventPlansRepo,
  EventPropertySchema,
  type EventRecord,
  EventsRepo,
  type ListWindow,
  Outbox,
  ProjectEvent
} from "@parley/core"
import { Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { batched, Count, decodeCount, decodeFirst, decodeRows, IsoFromDate, jsonb, jsonRows, mapUnique } from "./Rows.ts"
import { deferred } from "./Transactor.ts"
import { jsonMentions } from "./Mentions.ts"

/** A row of `events`: the event's properties decoded with the domain's value Schema, times as ISO text. */
const EventRow = Schema.Struct({
  id: Schema.String,
  project_id: Schema.String,
  name: Schema.String,
  occurred_at: IsoFromDate,
  conversation_id: Schema.NullOr(Schema.String),
  properties: ProjectEvent.fields.properties,
  created_at: IsoFromDate
})
const toEvents: (rows: ReadonlyArray<unknown>) => Effect.Effect<ReadonlyArray<EventRecord>> = decodeRows(
  "events",
  EventRow
)

/** A row of `event_definitions`, times as ISO text. */
const DefinitionRow = Schema.Struct({
  id: Schema.String,
  project_id: Schema.String,
  name: Schema.String,
  description: Schema.NullOr(Schema.String),
  property_schema: EventPropertySchema,
  source: EventDefinitionSource,
  archived_at: Schema.NullOr(IsoFromDate),
  last_seen_at: Schema.NullOr(IsoFromDate),
  deletion_requested_at: Schema.NullOr(IsoFromDate),
  created_at: IsoFromDate,
  updated_at: IsoFromDate
})
const toDefinitions: (rows: ReadonlyArray<unknown>) => Effect.Effect<ReadonlyArray<EventDefinitionRecord>> =
  decodeRows("event_definitions", DefinitionRow)
const firstDefinition = decodeFirst("event_definitions", DefinitionRow)

/** A row of `project_plans`, its columns named as the record names them. */
const PlanRow = Schema.Struct({
  project_id: Schema.String,
  events_enabled: Schema.Boolean,
  event_monthly_allowance: Count,
  event_metered_overage: Schema.Boolean,
  event_retention_days: Schema.Number,
  updated_at: IsoFromDate
})
const toPlans = decodeRows("project_plans", PlanRow)

/** A row of `domain_events`. */
const DomainEventRow = Schema.Struct({
  id: Schema.String,
  project_id: Schema.NullOr(Schema.String),
  type: Schema.String,
  payload: Schema.Unknown,
  created_at: IsoFromDate
})
const toDomainEvents: (rows: ReadonlyArray<unknown>) => Effect.Effect<ReadonlyArray<DomainEvent>> = decodeRows(
  "domain_events",
  DomainEventRow
)

const decodeDeleted = decodeRows("delete", Schema.Struct({ n: Count }))
const decodeUsage = decodeRows("event_usage", Schema.Struct({ count: Count }))

/** The unique index of 0003_events the domain can act on. */
const duplicates = mapUnique({ event_definitions_project_name_key: "name" })

export const layerEventsRepo = Layer.effect(
  EventsRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const where = (projectId: string, filter: EventFilter) =>
      sql.and([
        sql`project_id = ${projectId}`,
        ...(filter.name !== undefined ? [sql`name = ${filter.name}`] : []),
        ...(filter.conversation_id !== undefined ? [sql`conversation_id = ${filter.conversation_id}`] : []),
        ...(filter.occurred_after !== undefined ? [sql`occurred_at >= ${filter.occurred_after}::timestamptz`] : []),
        ...(filter.occurred_before !== undefined ? [sql`occurred_at <= ${filter.occurred_before}::timestamptz`] : [])
      ])

    const listPage = (projectId: string, filter: EventFilter, page: number, perPage: number) =>
      Effect.gen(function*() {
        // Counting stops at the cap: a bounded estimate, cheap on any volume (decisions 1.3).
        const [{ total }] = yield* decodeCount(
          yield* sql`
          SELECT count(*)::int AS total
          FROM (SELECT 1 FROM events WHERE ${where(projectId, filter)} LIMIT ${EVENT_TOTAL_CAP}) capped`
        )
        const rows = yield* sql`
          SELECT * FROM events WHERE ${where(projectId, filter)}
          ORDER BY occurred_at DESC, id DESC LIMIT ${perPage + 1} OFFSET ${(page - 1) * perPage}`
        return { items: yield* toEvents(rows.slice(0, perPage)), hasMore: rows.length > perPage, total }
      })

    const listCursor = (projectId: string, filter: EventFilter, window: Extract<ListWindow, { mode: "cursor" }>) =>
      Effect.gen(function*() {
        const { after, before, limit } = window
        const conditions = [
          where(projectId, filter),
          ...(after !== undefined ? [sql`(occurred_at, id) < (${after.sortKey}::timestamptz, ${after.id})`] : []),
          ...(before !== undefined ? [sql`(occurred_at, id) > (${before.sortKey}::timestamptz, ${before.id})`] : [])
        ]
        // Travelling towards newer items, read upwards from the key and turn the page round.
        const order = before !== undefined ? sql`occurred_at ASC, id ASC` : sql`occurred_at DESC, id DESC`
        const rows = yield* sql`
          SELECT * FROM events WHERE ${sql.and(conditions)} ORDER BY ${order} LIMIT ${limit + 1}`
        const page = [...yield* toEvents(rows.slice(0, limit))]
        return { items: before !== undefined ? page.reverse() : page, hasMore: rows.length > limit, total: 0 }
      })

    /** Deletes up to `limit` rows matching `condition`, answering how many went. */
    const deleteSome = (condition: ReturnType<typeof sql.and>, limit: number) =>
      sql`
          WITH gone AS (
            DELETE FROM events WHERE id IN (SELECT id FROM events WHERE ${condition} LIMIT ${limit}) RETURNING 1
          )
          SELECT count(*)::int AS n FROM gone`.pipe(
        Effect.flatMap(decodeDeleted),
        Effect.map((rows) => rows[0]?.n ?? 0)
      )

    return EventsRepo.of({
      insert: Effect.fnUntraced(function*(e: EventRecord) {
        yield* sql`
          INSERT INTO events (id, project_id, name, occurred_at, conversation_id, properties, created_at)
          VALUES (${e.id}, ${e.project_id}, ${e.name}, ${e.occurred_at}, ${e.conversation_id}, ${jsonb(e.properties)},
            ${e.created_at})`
      }, Effect.orDie),

      insertMany: Effect.fnUntraced(function*(events: ReadonlyArray<EventRecord>) {
        if (events.length === 0) return
        // One jsonb parameter: the same statement text (prepared once) whatever the batch's size.
        yield* sql`
          INSERT INTO events (id, project_id, name, occurred_at, conversation_id, properties, created_at)
          SELECT id, project_id, name, occurred_at, conversation_id, properties, created_at
          FROM ${jsonRows(sql, events)} AS r(id text, project_id text, name text, occurred_at timestamptz,
            conversation_id text, properties jsonb, created_at timestamptz)`
      }, Effect.orDie),

      list: Effect.fnUntraced(function*(projectId: string, filter: EventFilter, window: ListWindow) {
        return yield* window.mode === "page"
          ? listPage(projectId, filter, window.page, window.perPage)
          : listCursor(projectId, filter, window)
      }, Effect.orDie),

      nameUsed: Effect.fnUntraced(function*(projectId: string, name: string) {
        const rows = yield* sql`SELECT 1 FROM events WHERE project_id = ${projectId} AND name = ${name} LIMIT 1`
        return rows.length > 0
      }, Effect.orDie),

      deleteByName: Effect.fnUntraced(function*(projectId: string, name: string, limit: number) {
        return yield* deleteSome(sql.and([sql`project_id = ${projectId}`, sql`name = ${name}`]), limit)
      }, Effect.orDie),

      deleteOccurredBefore: Effect.fnUntraced(
        function*(projectId: string, before: string, limit: number) {
          return yield* deleteSome(
            sql.and([sql`project_id = ${projectId}`, sql`occurred_at < ${before}::timestamptz`]),
            limit
          )
        },
        Effect.orDie
      )
    })
  })
)

export const layerEventDefinitionsRepo = Layer.effect(
  EventDefinitionsRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const lock = (options?: { readonly forUpdate?: boolean | undefined }) =>
      options?.forUpdate === true ? sql.literal("FOR UPDATE") : sql.literal("")

    return EventDefinitionsRepo.of({
      insert: Effect.fnUntraced(function*(d: EventDefinitionRecord) {
        yield* sql`
          INSERT INTO event_definitions (id, project_id, name, description, property_schema, source, archived_at,
            last_seen_at, deletion_requested_at, created_at, updated_at)
          VALUES (${d.id}, ${d.project_id}, ${d.name}, ${d.description}, ${jsonb(d.property_schema)}, ${d.source},
            ${d.archived_at}, ${d.last_seen_at}, ${d.deletion_requested_at}, ${d.created_at}, ${d.updated_at})`
      }, Effect.catchTag("SqlError", duplicates)),

      findById: Effect.fnUntraced(
        function*(projectId: string, id: string, options?: { readonly forUpdate?: boolean | undefined }) {
          const rows = yield* sql`
            SELECT * FROM event_definitions WHERE project_id = ${projectId} AND id = ${id} ${lock(options)}`
          return yield* firstDefinition(rows)
        },
        Effect.orDie
      ),

      findByName: Effect.fnUntraced(
        function*(projectId: string, name: string, options?: { readonly forUpdate?: boolean | undefined }) {
          const rows = yield* sql`
            SELECT * FROM event_definitions WHERE project_id = ${projectId} AND name = ${name} ${lock(options)}`
          return yield* firstDefinition(rows)
        },
        Effect.orDie
      ),

      list: Effect.fnUntraced(
        function*(projectId: string, options: { readonly includeArchived: boolean }) {
          const rows = yield* sql`
            SELECT * FROM event_definitions
            WHERE project_id = ${projectId} AND deletion_requested_at IS NULL
              AND (archived_at IS NULL OR ${options.includeArchived})
            ORDER BY name, id`
          return yield* toDefinitions(rows)
        },
        Effect.orDie
      ),

      update: Effect.fnUntraced(function*(d: EventDefinitionRecord) {
        // Identity, origin and creation time are not the caller's to change.
        const rows = yield* sql`
          UPDATE event_definitions SET
            name = ${d.name}, description = ${d.description}, property_schema = ${jsonb(d.property_schema)},
            archived_at = ${d.archived_at}, last_seen_at = ${d.last_seen_at},
            deletion_requested_at = ${d.deletion_requested_at}, updated_at = ${d.updated_at}
          WHERE project_id = ${d.project_id} AND id = ${d.id}
          RETURNING *`
        return yield* firstDefinition(rows)
      }, Effect.catchTag("SqlError", duplicates)),

      recordSeen: Effect.fnUntraced(function*(auto: EventDefinitionRecord, seenAt: string) {
        // One statement: concurrent first emissions of a name meet on the unique index, and the row stays
        // locked until the emission commits. `||` keeps the right side's value for keys on both sides, so
        // known keys keep their type and only new ones are added.
        const rows = yield* sql`
          INSERT INTO event_definitions AS d (id, project_id, name, description, property_schema, source, archived_at,
            last_seen_at, deletion_requested_at, created_at, updated_at)
          VALUES (${auto.id}, ${auto.project_id}, ${auto.name}, NULL, ${jsonb(auto.property_schema)}, 'auto', NULL,
            ${seenAt}, NULL, ${auto.created_at}, ${auto.updated_at})
          ON CONFLICT (project_id, name) DO UPDATE SET
            last_seen_at = GREATEST(d.last_seen_at, EXCLUDED.last_seen_at),
            property_schema = CASE WHEN d.source = 'auto' THEN EXCLUDED.property_schema || d.property_schema
              ELSE d.property_schema END,
            updated_at = CASE WHEN d.source = 'auto' AND (EXCLUDED.property_schema || d.property_schema) <> d.property_schema
              THEN EXCLUDED.updated_at ELSE d.updated_at END
          RETURNING *`
        return (yield* toDefinitions(rows))[0]!
      }, Effect.orDie),

      delete: Effect.fnUntraced(function*(projectId: string, id: string) {
        const rows = yield* sql`DELETE FROM event_definitions WHERE project_id = ${projectId} AND id = ${id} RETURNING id`
        return rows.length > 0
      }, Effect.orDie),

      listPendingDeletion: sql`
        SELECT * FROM event_definitions WHERE deletion_requested_at IS NOT NULL ORDER BY deletion_requested_at, id`.pipe(
        Effect.flatMap(toDefinitions),
        Effect.orDie,
        Effect.withSpan("EventDefinitionsRepo.listPendingDeletion")
      )
    })
  })
)

export const layerEventPlansRepo = Layer.effect(
  EventPlansRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    // Every emission reads its project's plan: concurrent reads share a statement.
    const find = yield* batched(sql, {
      many: (projectIds: ReadonlyArray<string>) =>
        sql`SELECT * FROM project_plans WHERE project_id = ANY(${[...new Set(projectIds)]}::text[])`.pipe(
          Effect.flatMap(toPlans),
          Effect.map((rows) => {
            const plans = new Map(rows.map((row): [string, EventPlanRecord] => [row.project_id, {
              project_id: row.project_id,
              events_enabled: row.events_enabled,
              monthly_allowance: row.event_monthly_allowance,
              metered_overage: row.event_metered_overage,
              retention_days: row.event_retention_days,
              updated_at: row.updated_at
            }]))
            return projectIds.map((id) => Option.fromNullishOr(plans.get(id)))
          })
        )
    })
    return EventPlansRepo.of({
      find: (projectId: string) => Effect.orDie(find(projectId)),

      save: Effect.fnUntraced(function*(p: EventPlanRecord) {
        yield* sql`
          INSERT INTO project_plans (project_id, events_enabled, event_monthly_allowance, event_metered_overage,
            event_retention_days, updated_at)
          VALUES (${p.project_id}, ${p.events_enabled}, ${p.monthly_allowance}, ${p.metered_overage}, ${p.retention_days},
            ${p.updated_at})
          ON CONFLICT (project_id) DO UPDATE SET
            events_enabled = EXCLUDED.events_enabled, event_monthly_allowance = EXCLUDED.event_monthly_allowance,
            event_metered_overage = EXCLUDED.event_metered_overage, event_retention_days = EXCLUDED.event_retention_days,
            updated_at = EXCLUDED.updated_at`
      }, Effect.orDie),

      countEmission: Effect.fnUntraced(function*(projectId: string, period: string, by = 1) {
        // The row stays locked until the emission's transaction ends: the next emitter waits and counts on.
        const rows = yield* sql`
          INSERT INTO event_usage (project_id, period, count) VALUES (${projectId}, ${period}, ${by})
          ON CONFLICT (project_id, period) DO UPDATE SET count = event_usage.count + EXCLUDED.count
          RETURNING count`
        return (yield* decodeUsage(rows))[0]!.count
      }, Effect.orDie),

      usage: Effect.fnUntraced(function*(projectId: string, period: string) {
        const rows = yield* sql`SELECT count FROM event_usage WHERE project_id = ${projectId} AND period = ${period}`
        return (yield* decodeUsage(rows))[0]?.count ?? 0
      }, Effect.orDie)
    })
  })
)

export const layerOutbox = Layer.effect(
  Outbox,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    // Appended inside the change's transaction, which commits (or fails) with them: nobody waits for the answer.
    const later = deferred(sql)
    return Outbox.of({
      append: Effect.fnUntraced(function*(e: DomainEvent) {
        yield* later(sql`
          INSERT INTO domain_events (id, project_id, type, payload, created_at)
          VALUES (${e.id}, ${e.project_id}, ${e.type}, ${jsonb(e.payload)}, ${e.created_at})`)
      }, Effect.orDie),

      appendMany: Effect.fnUntraced(function*(events: ReadonlyArray<DomainEvent>) {
        if (events.length === 0) return
        yield* later(sql`
          INSERT INTO domain_events (id, project_id, type, payload, created_at)
          SELECT id, project_id, type, payload, created_at
          FROM ${jsonRows(sql, events)} AS r(id text, project_id text, type text, payload jsonb, created_at timestamptz)`)
      }, Effect.orDie),

      take: Effect.fnUntraced(function*(types: ReadonlyArray<string>, limit: number) {
        if (types.length === 0 || limit <= 0) return []
        // SKIP LOCKED: entries another taker holds are passed over, never handed out twice.
        const rows = yield* sql`
          WITH taken AS (
            DELETE FROM domain_events WHERE id IN (
              SELECT id FROM domain_events WHERE ${sql.in("type", types)}
              ORDER BY created_at, id LIMIT ${limit} FOR UPDATE SKIP LOCKED
            )
            RETURNING *
          )
          SELECT * FROM taken ORDER BY created_at, id`
        return yield* toDomainEvents(rows)
      }, Effect.orDie),

      prune: Effect.fnUntraced(function*(before: string) {
        const rows = yield* sql`
          WITH gone AS (DELETE FROM domain_events WHERE created_at < ${before}::timestamptz RETURNING 1)
          SELECT count(*)::int AS n FROM gone`
        return (yield* decodeDeleted(rows))[0]?.n ?? 0
      }, Effect.orDie),

      eraseMentions: Effect.fnUntraced(function*(projectId: string, terms: ReadonlyArray<string>, limit: number) {
        const rows = yield* sql`
          DELETE FROM domain_events WHERE id IN (
            SELECT id FROM domain_events
            WHERE project_id = ${projectId} AND ${jsonMentions(sql, "payload", terms)} LIMIT ${limit})
          RETURNING 1`
        return rows.length
      }, Effect.orDie)
    })
  })
)

/** Every project events port and the outbox on PostgreSQL. */
export const layerEventsStorage = Layer.mergeAll(layerEventsRepo, layerEventDefinitionsRepo, layerEventPlansRepo, layerOutbox)
