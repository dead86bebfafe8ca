/** `WebhooksRepo`, `WebhookDeliveriesRepo` and `WebhookBuffersRepo` on PostgreSQL (migration 0005). */
import {
  type BufferedItem,
  DELIVERY_TOTAL_CAP,
  DeliveryStatus,
  type DeliveryExpectation,
  type DeliveryFilter,
  type ListWindow,
  PayloadVersion,
  RetrySchedule,
  type WebhookAttemptRecord,
  type WebhookBufferRecord,
  WebhookBuffersRepo,
  WebhookDeliveriesRepo,
  type WebhookDeliveryRecord,
  type WebhookFilter,
  WebhookKind,
  type WebhookRecord,
  WebhooksRepo
} from "@parley/core"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import {
  batched,
  changeSignals,
  Count,
  decodeCount,
  decodeFirst,
  decodeRows,
  IsoFromDate,
  jsonb,
  jsonRows,
  listNewestFirst,
  mapUnique,
  Nullable
} from "./Rows.ts"

/** A row of `webhooks`, times as ISO text. */
const WebhookRow = Schema.Struct({
  id: Schema.String,
  project_id: Schema.String,
  phone_number_id: Schema.NullOr(Schema.String),
  url: Schema.String,
  kind: WebhookKind,
  events: Schema.Array(Schema.String),
  secret_key: Schema.String,
  headers: Schema.Record(Schema.String, Schema.String),
  active: Schema.Boolean,
  paused_at: Nullable(IsoFromDate),
  pause_reason: Schema.NullOr(Schema.Literal("failure_rate")),
  retry_schedule: RetrySchedule,
  auto_pause: Schema.Boolean,
  buffer_enabled: Schema.Boolean,
  buffer_window_seconds: Schema.Number,
  max_buffer_size: Schema.Number,
  buffer_events: Schema.Array(Schema.String),
  inactivity_minutes: Schema.Number,
  payload_version: PayloadVersion,
  failure_window_from: Nullable(IsoFromDate),
  created_at: IsoFromDate,
  updated_at: IsoFromDate
})
const toWebhooks: (rows: ReadonlyArray<unknown>) => Effect.Effect<ReadonlyArray<WebhookRecord>> = decodeRows(
  "webhooks",
  WebhookRow
)
const firstWebhook = decodeFirst("webhooks", WebhookRow)

/** A row of `webhook_deliveries` as `columns` selects it: its body as base64. */
const DeliveryRow = Schema.Struct({
  id: Schema.String,
  project_id: Schema.String,
  webhook_id: Schema.String,
  webhook_url: Schema.String,
  event: Schema.String,
  status: DeliveryStatus,
  response_status: Schema.NullOr(Schema.Number),
  delivered_at: Nullable(IsoFromDate),
  failed_at: Nullable(IsoFromDate),
  last_attempt_at: Nullable(IsoFromDate),
  next_attempt_at: Nullable(IsoFromDate),
  attempt_count: Schema.Number,
  max_attempts: Schema.Number,
  retry_schedule: RetrySchedule,
  error_message: Schema.NullOr(Schema.String),
  created_at: IsoFromDate,
  msg_config_id: Schema.NullOr(Schema.String),
  phone_number_id: Schema.NullOr(Schema.String),
  conversation_phone_number: Schema.NullOr(Schema.String),
  idempotency_key: Schema.String,
  payload_version: Nullable(PayloadVersion),
  batch_size: Schema.NullOr(Schema.Number),
  test: Schema.Boolean,
  source_key: Schema.NullOr(Schema.String),
  body: Schema.String
})
const toDeliveries: (rows: ReadonlyArray<unknown>) => Effect.Effect<ReadonlyArray<WebhookDeliveryRecord>> =
  decodeRows("webhook_deliveries", DeliveryRow)
const firstDelivery = decodeFirst("webhook_deliveries", DeliveryRow)

/** A row of `webhook_delivery_attempts`. */
const AttemptRow = Schema.Struct({
  delivery_id: Schema.String,
  attempt: Schema.Number,
  attempted_at: IsoFromDate,
  response_status: Schema.NullOr(Schema.Number),
  duration_ms: Schema.Number,
  error: Schema.NullOr(Schema.String)
})
const toAttempts: (rows: ReadonlyArray<unknown>) => Effect.Effect<ReadonlyArray<WebhookAttemptRecord>> = decodeRows(
  "webhook_delivery_attempts",
  AttemptRow
)

/** A row of `webhook_buffers`: its items are JSON texts of `BufferedItem`s. */
const BufferRow = Schema.Struct({
  id: Schema.String,
  project_id: Schema.String,
  webhook_id: Schema.String,
  conversation_key: Schema.String,
  event: Schema.String,
  items: Schema.Array(Schema.fromJsonString(Schema.Struct({ received_at: Schema.String, payload: Schema.Unknown }))),
  payload_version: PayloadVersion,
  first_at: IsoFromDate,
  due_at: IsoFromDate,
  msg_config_id: Schema.NullOr(Schema.String),
  phone_number_id: Schema.NullOr(Schema.String),
  conversation_phone_number: Schema.NullOr(Schema.String)
})
const toBuffers: (rows: ReadonlyArray<unknown>) => Effect.Effect<ReadonlyArray<WebhookBufferRecord>> = decodeRows(
  "webhook_buffers",
  BufferRow
)
const firstBuffer = decodeFirst("webhook_buffers", BufferRow)
const decodeAppended = decodeRows("webhook_buffers append", Schema.Struct({ ...BufferRow.fields, opened: Schema.Boolean }))

const IdRow = Schema.Struct({ id: Schema.String })
const toDeliveryIds = decodeRows("webhook_deliveries write", IdRow)
const decodeFinished = decodeRows("webhook_deliveries finished", Schema.Struct({ total: Count, failed: Count }))
const decodePruned = decodeRows("webhook_deliveries prune", Schema.Struct({ n: Count }))

/** A webhook's columns, each selected as `w_<column>` next to a delivery's (see `findWithWebhook`). */
const WEBHOOK_COLUMNS: ReadonlyArray<keyof typeof WebhookRow.fields> = [
  "id", "project_id", "phone_number_id", "url", "kind", "events", "secret_key", "headers", "active", "paused_at",
  "pause_reason", "retry_schedule", "auto_pause", "buffer_enabled", "buffer_window_seconds", "max_buffer_size",
  "buffer_events", "inactivity_minutes", "payload_version", "failure_window_from", "created_at", "updated_at"
]

const CHANGES_CHANNEL = "parley_webhooks"

const canonical = (at: string) => new Date(at).toISOString()
const canonicalOrNull = (at: string | null) => (at === null ? null : canonical(at))

/** A delivery as `toDeliveries` would read it back once stored: its times in the canonical ISO form. */
const asStored = (d: WebhookDeliveryRecord): WebhookDeliveryRecord => ({
  ...d,
  delivered_at: canonicalOrNull(d.delivered_at),
  failed_at: canonicalOrNull(d.failed_at),
  last_attempt_at: canonicalOrNull(d.last_attempt_at),
  next_attempt_at: canonicalOrNull(d.next_attempt_at),
  created_at: canonical(d.created_at)
})

type Cursor = Extract<ListWindow, { mode: "cursor" }>

export const layerWebhooksRepo = Layer.effect(
  WebhooksRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const pg = yield* PgClient.PgClient
    /** Delivered to listeners when the surrounding transaction commits. */
    const signal = sql`SELECT pg_notify(${CHANGES_CHANNEL}, '')`
    const signalSome = <A>(result: Option.Option<A>) =>
      Option.isSome(result) ? Effect.as(signal, result) : Effect.succeed<Option.Option<A>>(result)

    const where = (projectId: string, filter: WebhookFilter) =>
      sql.and([
        sql`project_id = ${projectId}`,
        ...(filter.phone_number_id !== undefined ? [sql`phone_number_id = ${filter.phone_number_id}`] : []),
        ...(filter.url_contains !== undefined
          ? [sql`strpos(lower(url), lower(${filter.url_contains})) > 0`]
          : []),
        ...(filter.kind !== undefined ? [sql`kind = ${filter.kind}`] : []),
        ...(filter.active !== undefined ? [sql`active = ${filter.active}`] : []),
        ...(filter.created_after !== undefined ? [sql`created_at >= ${filter.created_after}::timestamptz`] : []),
        ...(filter.created_before !== undefined ? [sql`created_at <= ${filter.created_before}::timestamptz`] : [])
      ])

    return WebhooksRepo.of({
      insert: Effect.fnUntraced(function*(w: WebhookRecord) {
        yield* sql`
          INSERT INTO webhooks (id, project_id, phone_number_id, url, kind, events, secret_key, headers, active,
            paused_at, pause_reason, retry_schedule, auto_pause, buffer_enabled, buffer_window_seconds, max_buffer_size,
            buffer_events, inactivity_minutes, payload_version, failure_window_from, created_at, updated_at)
          VALUES (${w.id}, ${w.project_id}, ${w.phone_number_id}, ${w.url}, ${w.kind}, ${jsonb(w.events)},
            ${w.secret_key}, ${jsonb(w.headers)}, ${w.active}, ${w.paused_at}, ${w.pause_reason}, ${w.retry_schedule},
            ${w.auto_pause}, ${w.buffer_enabled}, ${w.buffer_window_seconds}, ${w.max_buffer_size},
            ${jsonb(w.buffer_events)}, ${w.inactivity_minutes}, ${w.payload_version}, ${w.failure_window_from},
            ${w.created_at}, ${w.updated_at})`.pipe(Effect.catchTag("SqlError", mapUnique({ webhooks_upstream_key: "upstream" })))
        yield* Effect.orDie(signal)
      }),

      findById: Effect.fnUntraced(function*(projectId: string, id: string) {
        return yield* firstWebhook(yield* sql`SELECT * FROM webhooks WHERE project_id = ${projectId} AND id = ${id}`)
      }, Effect.orDie),

      list: Effect.fnUntraced(function*(projectId: string, filter: WebhookFilter, window: ListWindow) {
        return yield* listNewestFirst(sql, "webhooks", where(projectId, filter), window, toWebhooks)
      }, Effect.orDie),

      update: Effect.fnUntraced(function*(w: WebhookRecord) {
        const rows = yield* sql`
          UPDATE webhooks SET url = ${w.url}, events = ${jsonb(w.events)}, secret_key = ${w.secret_key},
            headers = ${jsonb(w.headers)}, active = ${w.active}, paused_at = ${w.paused_at},
            pause_reason = ${w.pause_reason}, retry_schedule = ${w.retry_schedule}, auto_pause = ${w.auto_pause},
            buffer_enabled = ${w.buffer_enabled}, buffer_window_seconds = ${w.buffer_window_seconds},
            max_buffer_size = ${w.max_buffer_size}, buffer_events = ${jsonb(w.buffer_events)},
            inactivity_minutes = ${w.inactivity_minutes}, payload_version = ${w.payload_version},
            failure_window_from = ${w.failure_window_from}, updated_at = ${w.updated_at}
          WHERE project_id = ${w.project_id} AND id = ${w.id}
          RETURNING *`
        return yield* signalSome(yield* firstWebhook(rows))
      }, Effect.orDie),

      delete: Effect.fnUntraced(function*(projectId: string, id: string) {
        const rows = yield* sql`DELETE FROM webhooks WHERE project_id = ${projectId} AND id = ${id} RETURNING id`
        if (rows.length > 0) yield* signal
        return rows.length > 0
      }, Effect.orDie),

      deleteByPhoneNumber: Effect.fnUntraced(function*(projectId: string, phoneNumberId: string) {
        const rows = yield* sql`DELETE FROM webhooks WHERE project_id = ${projectId} AND phone_number_id = ${phoneNumberId} RETURNING id`
        if (rows.length > 0) yield* signal
        return rows.length
      }, Effect.orDie),

      listActive: Effect.fnUntraced(function*(projectId: string, phoneNumberId: string | null) {
        const scope = phoneNumberId === null ? sql`phone_number_id IS NULL` : sql`phone_number_id = ${phoneNumberId}`
        const rows = yield* sql`
          SELECT * FROM webhooks WHERE project_id = ${projectId} AND ${scope} AND active
          ORDER BY created_at, id`
        return yield* toWebhooks(rows)
      }, Effect.orDie),

      pause: Effect.fnUntraced(function*(projectId: string, id: string, at: string, reason: "failure_rate") {
        const rows = yield* sql`
          UPDATE webhooks SET active = false, paused_at = ${at}, pause_reason = ${reason}
          WHERE project_id = ${projectId} AND id = ${id} AND active
          RETURNING *`
        return yield* signalSome(yield* firstWebhook(rows))
      }, Effect.orDie),

      changes: changeSignals(pg, CHANGES_CHANNEL)
    })
  })
)

export const layerWebhookDeliveriesRepo = Layer.effect(
  WebhookDeliveriesRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    // The body travels as base64 both ways, so any bytes fit whatever the driver does with bytea.
    const columns = sql`
      id, project_id, webhook_id, webhook_url, event, status, response_status, delivered_at, failed_at,
      last_attempt_at, next_attempt_at, attempt_count, max_attempts, retry_schedule, error_message, created_at,
      msg_config_id, phone_number_id, conversation_phone_number, idempotency_key, payload_version, batch_size, test,
      source_key, translate(encode(body, 'base64'), E'\\n', '') AS body`
    const webhookColumns = sql.unsafe(WEBHOOK_COLUMNS.map((c) => `w.${c} AS w_${c}`).join(", "))

    const where = (projectId: string, filter: DeliveryFilter) =>
      sql.and([
        sql`project_id = ${projectId}`,
        ...(filter.status !== undefined ? [sql`status = ${filter.status}`] : []),
        ...(filter.event !== undefined ? [sql`event = ${filter.event}`] : []),
        ...(filter.webhook_id !== undefined ? [sql`webhook_id = ${filter.webhook_id}`] : []),
        ...(filter.errors_only === true ? [sql`(status = 'failed' OR error_message IS NOT NULL)`] : []),
        ...(filter.created_after !== undefined ? [sql`created_at >= ${filter.created_after}::timestamptz`] : [])
      ])

    const listCursor = (projectId: string, filter: DeliveryFilter, window: Cursor) =>
      Effect.gen(function*() {
        const { after, before, limit } = window
        const conditions = [
          where(projectId, filter),
          ...(after !== undefined ? [sql`(created_at, id) < (${after.sortKey}::timestamptz, ${after.id})`] : []),
          ...(before !== undefined ? [sql`(created_at, id) > (${before.sortKey}::timestamptz, ${before.id})`] : [])
        ]
        const order = before !== undefined ? sql`created_at ASC, id ASC` : sql`created_at DESC, id DESC`
        const rows = yield* sql`
          SELECT ${columns} FROM webhook_deliveries WHERE ${sql.and(conditions)} ORDER BY ${order} LIMIT ${limit + 1}`
        const page = [...yield* toDeliveries(rows.slice(0, limit))]
        return { items: before !== undefined ? page.reverse() : page, hasMore: rows.length > limit, total: 0 }
      })

    const listPage = (projectId: string, filter: DeliveryFilter, page: number, perPage: number) =>
      Effect.gen(function*() {
        // Counting stops at the cap: a bounded estimate (decisions 1.3).
        const [{ total }] = yield* decodeCount(
          yield* sql`
          SELECT count(*)::int AS total
          FROM (SELECT 1 FROM webhook_deliveries WHERE ${where(projectId, filter)} LIMIT ${DELIVERY_TOTAL_CAP}) capped`
        )
        const rows = yield* sql`
          SELECT ${columns} FROM webhook_deliveries WHERE ${where(projectId, filter)}
          ORDER BY created_at DESC, id DESC LIMIT ${perPage + 1} OFFSET ${(page - 1) * perPage}`
        return { items: yield* toDeliveries(rows.slice(0, perPage)), hasMore: rows.length > perPage, total }
      })

    const rowsOf = (rows: ReadonlyArray<object>) => jsonRows(sql, rows)

    /** Records the `attempt` (jsonb, may be null) of each `input` row whose delivery the CTE `written` returned. */
    const recordAttempts = (written: string) =>
      sql`
        INSERT INTO webhook_delivery_attempts (delivery_id, attempt, attempted_at, response_status, duration_ms, error)
        SELECT a.delivery_id, a.attempt, a.attempted_at, a.response_status, a.duration_ms, a.error
        FROM input i JOIN ${sql.unsafe(written)} w ON w.id = i.id
        CROSS JOIN LATERAL jsonb_to_record(i.attempt) AS a(delivery_id text, attempt int, attempted_at timestamptz,
          response_status int, duration_ms int, error text)
        WHERE i.attempt IS NOT NULL AND jsonb_typeof(i.attempt) = 'object'`

    interface Insert {
      readonly delivery: WebhookDeliveryRecord
      readonly attempt: WebhookAttemptRecord | undefined
    }
    const insert = yield* batched(sql, {
      key: ({ delivery: d }: Insert) => d.source_key === null ? `id:${d.id}` : `source:${d.webhook_id}:${d.source_key}`,
      many: (inserts) =>
        Effect.gen(function*() {
          const ds = inserts.map(({ delivery }) => delivery)
          // Only ids come back: a created delivery is what was given (its body is not sent back for nothing).
          const inserted = yield* sql`
            WITH input AS (
              SELECT * FROM ${rowsOf(inserts.map(({ attempt, delivery }) => ({ ...delivery, attempt: attempt ?? null })))}
              AS r(id text, project_id text, webhook_id text, webhook_url text, event text,
                status text, response_status int, delivered_at timestamptz, failed_at timestamptz,
                last_attempt_at timestamptz, next_attempt_at timestamptz, attempt_count int, max_attempts int,
                retry_schedule text, error_message text, created_at timestamptz, msg_config_id text,
                phone_number_id text, conversation_phone_number text, idempotency_key text, payload_version text,
                batch_size int, test boolean, source_key text, body text, attempt jsonb)
            ), inserted AS (
              INSERT INTO webhook_deliveries (id, project_id, webhook_id, webhook_url, event, status, response_status,
                delivered_at, failed_at, last_attempt_at, next_attempt_at, attempt_count, max_attempts, retry_schedule,
                error_message, created_at, msg_config_id, phone_number_id, conversation_phone_number, idempotency_key,
                payload_version, batch_size, test, source_key, body)
              SELECT id, project_id, webhook_id, webhook_url, event, status, response_status, delivered_at, failed_at,
                last_attempt_at, next_attempt_at, attempt_count, max_attempts, retry_schedule, error_message, created_at,
                msg_config_id, phone_number_id, conversation_phone_number, idempotency_key, payload_version, batch_size,
                test, source_key, decode(body, 'base64')
              FROM input
              ON CONFLICT (webhook_id, source_key) WHERE source_key IS NOT NULL DO NOTHING
              RETURNING id
            ), recorded AS (${recordAttempts("inserted")})
            SELECT id FROM inserted`
          const created = new Set((yield* toDeliveryIds(inserted)).map((row) => row.id))
          const taken = ds.filter((d) => !created.has(d.id))
          // A source already delivered: answer the delivery it has.
          const existing = taken.length === 0 ? [] : yield* toDeliveries(
            yield* sql`
            SELECT ${columns} FROM webhook_deliveries
            WHERE (webhook_id, source_key) IN (
              SELECT webhook_id, source_key FROM ${rowsOf(taken)} AS r(webhook_id text, source_key text))`
          )
          const bySource = new Map(existing.map((d) => [`${d.webhook_id}\u0000${d.source_key}`, d]))
          return ds.map((d) =>
            created.has(d.id)
              ? { delivery: asStored(d), created: true }
              : { delivery: bySource.get(`${d.webhook_id}\u0000${d.source_key}`)!, created: false }
          )
        })
    })

    const findWithWebhook = yield* batched(sql, {
      key: ({ id }: { readonly projectId: string; readonly id: string }) => id,
      many: (keys) =>
        Effect.gen(function*() {
          const rows = yield* sql`
            SELECT d.*, ${webhookColumns}
            FROM (
              SELECT ${columns} FROM webhook_deliveries
              WHERE (project_id, id) IN (SELECT "projectId", id FROM ${rowsOf(keys)} AS r("projectId" text, id text))
            ) d
            LEFT JOIN webhooks w ON w.project_id = d.project_id AND w.id = d.webhook_id`
          const deliveries = yield* toDeliveries(rows)
          // The webhook's columns, named back; none when the webhook is gone (the LEFT JOIN found no row).
          const webhooks = yield* toWebhooks(
            rows.filter((row) => row.w_id !== null).map((row) => Object.fromEntries(WEBHOOK_COLUMNS.map((c) => [c, row[`w_${c}`]])))
          )
          const byId = new Map(webhooks.map((w) => [w.id, w]))
          const found = new Map(deliveries.map((delivery) => [delivery.id, delivery]))
          return keys.map(({ id }) =>
            Option.map(Option.fromNullishOr(found.get(id)), (delivery) => ({
              delivery,
              webhook: Option.fromNullishOr(byId.get(delivery.webhook_id))
            }))
          )
        })
    })

    interface Update {
      readonly next: WebhookDeliveryRecord
      readonly expected: DeliveryExpectation
      readonly attempt: WebhookAttemptRecord | undefined
    }
    // The attempt is recorded in the same statement, only for the deliveries the update found as expected.
    const update = yield* batched(sql, {
      key: ({ next }: Update) => next.id,
      many: (updates) =>
        Effect.gen(function*() {
          const rows = updates.map(({ next: n, expected, attempt }) => ({
            id: n.id,
            status: n.status,
            response_status: n.response_status,
            delivered_at: n.delivered_at,
            failed_at: n.failed_at,
            last_attempt_at: n.last_attempt_at,
            next_attempt_at: n.next_attempt_at,
            attempt_count: n.attempt_count,
            max_attempts: n.max_attempts,
            error_message: n.error_message,
            webhook_url: n.webhook_url,
            expected_status: expected.status,
            expected_count: expected.attempt_count,
            attempt: attempt ?? null
          }))
          const written = yield* sql`
            WITH input AS (
              SELECT * FROM ${rowsOf(rows)} AS r(id text, status text, response_status int, delivered_at timestamptz,
                failed_at timestamptz, last_attempt_at timestamptz, next_attempt_at timestamptz, attempt_count int,
                max_attempts int, error_message text, webhook_url text, expected_status text, expected_count int,
                attempt jsonb)
            ), updated AS (
              UPDATE webhook_deliveries d SET status = i.status, response_status = i.response_status,
                delivered_at = i.delivered_at, failed_at = i.failed_at, last_attempt_at = i.last_attempt_at,
                next_attempt_at = i.next_attempt_at, attempt_count = i.attempt_count, max_attempts = i.max_attempts,
                error_message = i.error_message, webhook_url = i.webhook_url
              FROM input i
              WHERE d.id = i.id AND d.status = i.expected_status AND d.attempt_count = i.expected_count
              RETURNING d.id
            ), recorded AS (${recordAttempts("updated")})
            SELECT id FROM updated`
          const ids = new Set((yield* toDeliveryIds(written)).map((row) => row.id))
          return updates.map(({ next }) => ids.has(next.id))
        })
    })

    return WebhookDeliveriesRepo.of({
      insert: (delivery: WebhookDeliveryRecord, attempt?: WebhookAttemptRecord) => Effect.orDie(insert({ delivery, attempt })),

      findById: Effect.fnUntraced(function*(projectId: string, id: string) {
        return yield* firstDelivery(
          yield* sql`SELECT ${columns} FROM webhook_deliveries WHERE project_id = ${projectId} AND id = ${id}`
        )
      }, Effect.orDie),

      findWithWebhook: (projectId: string, id: string) => Effect.orDie(findWithWebhook({ projectId, id })),

      list: Effect.fnUntraced(function*(projectId: string, filter: DeliveryFilter, window: ListWindow) {
        return yield* window.mode === "page"
          ? listPage(projectId, filter, window.page, window.perPage)
          : listCursor(projectId, filter, window)
      }, Effect.orDie),

      update: (next: WebhookDeliveryRecord, expected: DeliveryExpectation, attempt?: WebhookAttemptRecord) =>
        Effect.orDie(update({ next, expected, attempt })),

      attempts: Effect.fnUntraced(function*(deliveryId: string) {
        return yield* toAttempts(
          yield* sql`SELECT * FROM webhook_delivery_attempts WHERE delivery_id = ${deliveryId} ORDER BY attempt`
        )
      }, Effect.orDie),

      finishedSince: Effect.fnUntraced(function*(webhookId: string, since: string) {
        const rows = yield* sql`
          SELECT count(*)::int AS total, (count(*) FILTER (WHERE status = 'failed'))::int AS failed
          FROM webhook_deliveries
          WHERE webhook_id = ${webhookId} AND status <> 'pending' AND NOT test
            AND coalesce(delivered_at, failed_at) >= ${since}::timestamptz`
        const [row] = yield* decodeFinished(rows)
        return { total: row?.total ?? 0, failed: row?.failed ?? 0 }
      }, Effect.orDie),

      listStalled: Effect.fnUntraced(function*(before: string, limit: number) {
        return yield* toDeliveries(
          yield* sql`
          SELECT ${columns} FROM webhook_deliveries
          WHERE status = 'pending' AND NOT test AND next_attempt_at < ${before}::timestamptz
          ORDER BY next_attempt_at, id LIMIT ${limit}`
        )
      }, Effect.orDie),

      prune: Effect.fnUntraced(function*(before: string, limit: number) {
        const rows = yield* sql`
          WITH gone AS (
            DELETE FROM webhook_deliveries WHERE id IN (
              SELECT id FROM webhook_deliveries WHERE created_at < ${before}::timestamptz LIMIT ${limit}
            ) RETURNING 1
          )
          SELECT count(*)::int AS n FROM gone`
        return (yield* decodePruned(rows))[0]?.n ?? 0
      }, Effect.orDie)
    })
  })
)

export const layerWebhookBuffersRepo = Layer.effect(
  WebhookBuffersRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return WebhookBuffersRepo.of({
      append: Effect.fnUntraced(function*(open: WebhookBufferRecord, item: BufferedItem, capMs: number) {
        const items = open.items.map((i) => JSON.stringify(i))
        // One statement: concurrent appends to one buffer queue on its row and each adds its item.
        const rows = yield* sql`
          INSERT INTO webhook_buffers (id, project_id, webhook_id, conversation_key, event, items, payload_version,
            first_at, due_at, msg_config_id, phone_number_id, conversation_phone_number)
          VALUES (${open.id}, ${open.project_id}, ${open.webhook_id}, ${open.conversation_key}, ${open.event},
            ${jsonb(items)}, ${open.payload_version}, ${open.first_at}, ${open.due_at}, ${open.msg_config_id},
            ${open.phone_number_id}, ${open.conversation_phone_number})
          ON CONFLICT (webhook_id, conversation_key) DO UPDATE SET
            items = webhook_buffers.items || jsonb_build_array(${JSON.stringify(item)}::text),
            due_at = least(EXCLUDED.due_at, webhook_buffers.first_at + ${capMs} * interval '1 millisecond')
          RETURNING *, (xmax = 0) AS opened`
        const { opened, ...buffer } = (yield* decodeAppended(rows))[0]!
        return { buffer, opened }
      }, Effect.orDie),

      find: Effect.fnUntraced(function*(id: string) {
        return yield* firstBuffer(yield* sql`SELECT * FROM webhook_buffers WHERE id = ${id}`)
      }, Effect.orDie),

      listOverdue: Effect.fnUntraced(function*(before: string, limit: number) {
        return yield* toBuffers(
          yield* sql`
          SELECT * FROM webhook_buffers WHERE due_at < ${before}::timestamptz ORDER BY due_at, id LIMIT ${limit}`
        )
      }, Effect.orDie),

      take: Effect.fnUntraced(function*(id: string, now: string | null) {
        const due = now === null ? sql`true` : sql`due_at <= ${now}::timestamptz`
        return yield* firstBuffer(yield* sql`DELETE FROM webhook_buffers WHERE id = ${id} AND ${due} RETURNING *`)
      }, Effect.orDie)
    })
  })
)

/** Every webhook storage port on PostgreSQL. */
export const layerWebhooksStorage = Layer.mergeAll(layerWebhooksRepo, layerWebhookDeliveriesRepo, layerWebhookBuffersRepo)
