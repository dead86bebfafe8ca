/** `EventsRepo`, `EventDefinitionsRepo`, `EventPlansRepo` and the `Outbox` on PostgreSQL (migration 0003). */
import {
  type DomainEvent,
  EVENT_TOTAL_CAP,
  type EventDefinitionRecord,
  EventDefinitionsRepo,
  type EventFilter,
  type EventPlanRecord,
  EventPlansRepo,
  type EventRecord,
  EventsRepo,
  type ListWindow,
  Outbox
} from "@parley/core"
import { Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { batched, first, iso, isoOrNull, jsonb, jsonRows, mapUnique } from "./Rows.ts"
import { deferred } from "./Transactor.ts"

interface EventRow {
  readonly id: string
  readonly project_id: string
  readonly name: string
  readonly occurred_at: Date
  readonly conversation_id: string | null
  readonly properties: EventRecord["properties"]
  readonly created_at: Date
}

interface DefinitionRow {
  readonly id: string
  readonly project_id: string
  readonly name: string
  readonly description: string | null
  readonly property_schema: EventDefinitionRecord["property_schema"]
  readonly source: EventDefinitionRecord["source"]
  readonly archived_at: Date | null
  readonly last_seen_at: Date | null
  readonly deletion_requested_at: Date | null
  readonly created_at: Date
  readonly updated_at: Date
}

interface PlanRow {
  readonly project_id: string
  readonly events_enabled: boolean
  /** bigint: the driver gives it as a string. */
  readonly event_monthly_allowance: string | number
  readonly event_metered_overage: boolean
  readonly event_retention_days: number
  readonly updated_at: Date
}

interface DomainEventRow {
  readonly id: string
  readonly project_id: string | null
  readonly type: string
  readonly payload: unknown
  readonly created_at: Date
}

const toEvent = (row: EventRow): EventRecord => ({
  id: row.id,
  project_id: row.project_id,
  name: row.name,
  occurred_at: iso(row.occurred_at),
  conversation_id: row.conversation_id,
  properties: row.properties,
  created_at: iso(row.created_at)
})

const toDefinition = (row: DefinitionRow): EventDefinitionRecord => ({
  id: row.id,
  project_id: row.project_id,
  name: row.name,
  description: row.description,
  property_schema: row.property_schema,
  source: row.source,
  archived_at: isoOrNull(row.archived_at),
  last_seen_at: isoOrNull(row.last_seen_at),
  deletion_requested_at: isoOrNull(row.deletion_requested_at),
  created_at: iso(row.created_at),
  updated_at: iso(row.updated_at)
})

const toPlan = (row: PlanRow): EventPlanRecord => ({
  project_id: row.project_id,
  events_enabled: row.events_enabled,
  monthly_allowance: Number(row.event_monthly_allowance),
  metered_overage: row.event_metered_overage,
  retention_days: row.event_retention_days,
  updated_at: iso(row.updated_at)
})

const domainEventOfRow = (row: DomainEventRow): DomainEvent => ({
  id: row.id,
  project_id: row.project_id,
  type: row.type,
  payload: row.payload,
  created_at: iso(row.created_at)
})

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
        const [{ total }] = yield* sql<{ readonly total: number }>`
          SELECT count(*)::int AS total
          FROM (SELECT 1 FROM events WHERE ${where(projectId, filter)} LIMIT ${EVENT_TOTAL_CAP}) capped`
        const rows = yield* sql<EventRow>`
          SELECT * FROM events WHERE ${where(projectId, filter)}
          ORDER BY occurred_at DESC, id DESC LIMIT ${perPage + 1} OFFSET ${(page - 1) * perPage}`
        return { items: rows.slice(0, perPage).map(toEvent), hasMore: rows.length > perPage, total }
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
        const rows = yield* sql<EventRow>`
          SELECT * FROM events WHERE ${sql.and(conditions)} ORDER BY ${order} LIMIT ${limit + 1}`
        const page = rows.slice(0, limit).map(toEvent)
        return { items: before !== undefined ? page.reverse() : page, hasMore: rows.length > limit, total: 0 }
      })

    /** Deletes up to `limit` rows matching `condition`, answering how many went. */
    const deleteSome = (condition: ReturnType<typeof sql.and>, limit: number) =>
      Effect.map(
        sql<{ readonly n: number }>`
          WITH gone AS (
            DELETE FROM events WHERE id IN (SELECT id FROM events WHERE ${condition} LIMIT ${limit}) RETURNING 1
          )
          SELECT count(*)::int AS n FROM gone`,
        (rows) => rows[0]?.n ?? 0
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
          const rows = yield* sql<DefinitionRow>`
            SELECT * FROM event_definitions WHERE project_id = ${projectId} AND id = ${id} ${lock(options)}`
          return first(rows, toDefinition)
        },
        Effect.orDie
      ),

      findByName: Effect.fnUntraced(
        function*(projectId: string, name: string, options?: { readonly forUpdate?: boolean | undefined }) {
          const rows = yield* sql<DefinitionRow>`
            SELECT * FROM event_definitions WHERE project_id = ${projectId} AND name = ${name} ${lock(options)}`
          return first(rows, toDefinition)
        },
        Effect.orDie
      ),

      list: Effect.fnUntraced(
        function*(projectId: string, options: { readonly includeArchived: boolean }) {
          const rows = yield* sql<DefinitionRow>`
            SELECT * FROM event_definitions
            WHERE project_id = ${projectId} AND deletion_requested_at IS NULL
              AND (archived_at IS NULL OR ${options.includeArchived})
            ORDER BY name, id`
          return rows.map(toDefinition)
        },
        Effect.orDie
      ),

      update: Effect.fnUntraced(function*(d: EventDefinitionRecord) {
        // Identity, origin and creation time are not the caller's to change.
        const rows = yield* sql<DefinitionRow>`
          UPDATE event_definitions SET
            name = ${d.name}, description = ${d.description}, property_schema = ${jsonb(d.property_schema)},
            archived_at = ${d.archived_at}, last_seen_at = ${d.last_seen_at},
            deletion_requested_at = ${d.deletion_requested_at}, updated_at = ${d.updated_at}
          WHERE project_id = ${d.project_id} AND id = ${d.id}
          RETURNING *`
        return first(rows, toDefinition)
      }, Effect.catchTag("SqlError", duplicates)),

      recordSeen: Effect.fnUntraced(function*(auto: EventDefinitionRecord, seenAt: string) {
        // One statement: concurrent first emissions of a name meet on the unique index, and the row stays
        // locked until the emission commits. `||` keeps the right side's value for keys on both sides, so
        // known keys keep their type and only new ones are added.
        const rows = yield* sql<DefinitionRow>`
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
        return toDefinition(rows[0]!)
      }, Effect.orDie),

      delete: Effect.fnUntraced(function*(projectId: string, id: string) {
        const rows = yield* sql`DELETE FROM event_definitions WHERE project_id = ${projectId} AND id = ${id} RETURNING id`
        return rows.length > 0
      }, Effect.orDie),

      listPendingDeletion: sql<DefinitionRow>`
        SELECT * FROM event_definitions WHERE deletion_requested_at IS NOT NULL ORDER BY deletion_requested_at, id`.pipe(
        Effect.map((rows) => rows.map(toDefinition)),
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
        Effect.map(
          sql<PlanRow>`SELECT * FROM project_plans WHERE project_id = ANY(${[...new Set(projectIds)]}::text[])`,
          (rows) => {
            const plans = new Map(rows.map((row) => [row.project_id, toPlan(row)]))
            return projectIds.map((id) => Option.fromNullishOr(plans.get(id)))
          }
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
        const rows = yield* sql<{ readonly count: string | number }>`
          INSERT INTO event_usage (project_id, period, count) VALUES (${projectId}, ${period}, ${by})
          ON CONFLICT (project_id, period) DO UPDATE SET count = event_usage.count + EXCLUDED.count
          RETURNING count`
        return Number(rows[0]!.count)
      }, Effect.orDie),

      usage: Effect.fnUntraced(function*(projectId: string, period: string) {
        const rows = yield* sql<{ readonly count: string | number }>`
          SELECT count FROM event_usage WHERE project_id = ${projectId} AND period = ${period}`
        return rows[0] === undefined ? 0 : Number(rows[0].count)
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
        const rows = yield* sql<DomainEventRow>`
          WITH taken AS (
            DELETE FROM domain_events WHERE id IN (
              SELECT id FROM domain_events WHERE ${sql.in("type", types)}
              ORDER BY created_at, id LIMIT ${limit} FOR UPDATE SKIP LOCKED
            )
            RETURNING *
          )
          SELECT * FROM taken ORDER BY created_at, id`
        return rows.map(domainEventOfRow)
      }, Effect.orDie),

      prune: Effect.fnUntraced(function*(before: string) {
        const rows = yield* sql<{ readonly n: number }>`
          WITH gone AS (DELETE FROM domain_events WHERE created_at < ${before}::timestamptz RETURNING 1)
          SELECT count(*)::int AS n FROM gone`
        return rows[0]?.n ?? 0
      }, Effect.orDie)
    })
  })
)

/** Every project events port and the outbox on PostgreSQL. */
export const layerEventsStorage = Layer.mergeAll(layerEventsRepo, layerEventDefinitionsRepo, layerEventPlansRepo, layerOutbox)
