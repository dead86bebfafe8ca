/**
 * `BroadcastsRepo` on PostgreSQL (migration 0021). A recipient as read joins
 * its message (`msg_messages`, by the Parley id it was sent under): delivery,
 * read and failure come from the message's status and reports, a response
 * from the first inbound message of its conversation within 24 hours.
 */
import {
  ANONYMISED_PHONE,
  type BroadcastCounts,
  type BroadcastFilter,
  type BroadcastRecord,
  BroadcastsRepo,
  BroadcastStatus,
  type ListWindow,
  type RecipientOutcome,
  type RecipientRecord,
  type RecipientRetry,
  type RecipientStatus,
  type RecipientView,
  StopReason
} from "@parley/core"
import { Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import {
  decodeFirst,
  decodeRows,
  iso,
  IsoFromDate,
  isoOrNull,
  jsonb,
  JsonObject,
  jsonRows,
  listNewestFirst,
  Nullable
} from "./Rows.ts"

/** A row of `msg_broadcasts`, times as ISO text. */
const BroadcastRow = Schema.Struct({
  id: Schema.String,
  project_id: Schema.String,
  name: Schema.String,
  status: BroadcastStatus,
  msg_config_id: Schema.String,
  msg_template_id: Schema.String,
  template: JsonObject<BroadcastRecord["template"]>(),
  scheduled_at: Nullable(IsoFromDate),
  started_at: Nullable(IsoFromDate),
  completed_at: Nullable(IsoFromDate),
  stopped_at: Nullable(IsoFromDate),
  stop_reason: Nullable(StopReason),
  lease_owner: Schema.NullOr(Schema.String),
  lease_until: Nullable(IsoFromDate),
  created_at: IsoFromDate,
  updated_at: IsoFromDate
})
const toBroadcasts: (rows: ReadonlyArray<unknown>) => Effect.Effect<ReadonlyArray<BroadcastRecord>> = decodeRows(
  "msg_broadcasts",
  BroadcastRow
)
const firstBroadcast = decodeFirst("msg_broadcasts", BroadcastRow)

interface RecipientRow {
  readonly id: string
  readonly broadcast_id: string
  readonly project_id: string
  readonly phone_number: string
  readonly contact_id: string | null
  readonly status: RecipientStatus
  readonly message_id: string
  readonly attempts: number
  readonly retry_at: Date | null
  readonly attempted_at: Date | null
  readonly template_parameters: unknown
  readonly sent_at: Date | null
  readonly failed_at: Date | null
  readonly error_message: string | null
  readonly error_details: RecipientRecord["error_details"]
  readonly created_at: Date
  readonly updated_at: Date
}

interface ViewRow extends RecipientRow {
  readonly network_message_id: string | null
  readonly effective_status: RecipientStatus
  readonly delivered_at: Date | null
  readonly read_at: Date | null
  readonly responded_at: Date | null
  readonly failed_at_view: Date | null
}

const toRecipient = (row: RecipientRow): RecipientRecord => ({
  id: row.id,
  broadcast_id: row.broadcast_id,
  project_id: row.project_id,
  phone_number: row.phone_number,
  contact_id: row.contact_id,
  status: row.status,
  message_id: row.message_id,
  attempts: row.attempts,
  retry_at: isoOrNull(row.retry_at),
  attempted_at: isoOrNull(row.attempted_at),
  template_parameters: row.template_parameters,
  sent_at: isoOrNull(row.sent_at),
  failed_at: isoOrNull(row.failed_at),
  error_message: row.error_message,
  error_details: row.error_details,
  created_at: iso(row.created_at),
  updated_at: iso(row.updated_at)
})

const toView = (row: ViewRow): RecipientView => ({
  ...toRecipient(row),
  failed_at: isoOrNull(row.failed_at_view),
  network_message_id: row.network_message_id,
  effective_status: row.effective_status,
  delivered_at: isoOrNull(row.delivered_at),
  read_at: isoOrNull(row.read_at),
  responded_at: isoOrNull(row.responded_at)
})

const CountsRow = Schema.Struct({
  rows: Schema.Int,
  total: Schema.Int,
  sent: Schema.Int,
  failed: Schema.Int,
  delivered: Schema.Int,
  read: Schema.Int,
  responded: Schema.Int,
  pending: Schema.Int,
  held: Schema.Int
})
const decodeCounts = Schema.decodeUnknownSync(CountsRow)
const decodeParts = Schema.decodeUnknownSync(Schema.Struct({ n: Schema.Int }))

/** Rows of differences a broadcast's sums may span before a read folds them into one. */
const FOLD_AFTER = 200

export const layerBroadcastsRepo = Layer.effect(
  BroadcastsRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /** The first report of a kind in the message's statuses, as a time. */
    const reported = (status: string) =>
      sql`(SELECT to_timestamp((s.value->>'timestamp')::bigint) FROM jsonb_array_elements(m.statuses) WITH ORDINALITY AS s(value, ord)
        WHERE s.value->>'status' = ${status} AND s.value->>'timestamp' ~ '^[0-9]+$' ORDER BY s.ord LIMIT 1)`

    /**
     * The recipient's message, joined when it counts: a `sent` recipient's, and a `pending` one's the network already
     * accepted (a network id, not failed) while its sender has not settled the batch yet (a stop read mid-batch).
     */
    const sendMade = sql`(r.status = 'sent' OR (r.status = 'pending' AND m.network_id IS NOT NULL AND m.status <> 'failed'))`

    /** The recipients of one broadcast as read (`RecipientView`), as a subquery. */
    const views = (broadcastId: string) =>
      sql`(
        SELECT r.*, m.network_id AS network_message_id,
          CASE WHEN m.status = 'failed' THEN 'failed' WHEN r.status = 'pending' AND m.id IS NOT NULL THEN 'sent' ELSE r.status END AS effective_status,
          CASE WHEN m.status IN ('delivered', 'read') THEN coalesce(${reported("delivered")}, ${reported("read")}, m.updated_at) END AS delivered_at,
          CASE WHEN m.status = 'read' THEN coalesce(${reported("read")}, m.updated_at) END AS read_at,
          coalesce(r.failed_at, CASE WHEN m.status = 'failed' THEN coalesce(${reported("failed")}, m.updated_at) END) AS failed_at_view,
          CASE WHEN m.id IS NOT NULL AND r.sent_at IS NOT NULL THEN (
            SELECT min(i.created_at) FROM msg_messages i
            WHERE i.conversation_id = m.conversation_id AND i.direction = 'inbound'
              AND i.created_at > r.sent_at AND i.created_at <= r.sent_at + interval '24 hours'
          ) END AS responded_at
        FROM msg_broadcast_recipients r
        LEFT JOIN msg_messages m ON m.id = r.message_id AND ${sendMade}
        WHERE r.broadcast_id = ${broadcastId}
      )`

    const where = (projectId: string, filter: BroadcastFilter) =>
      sql.and([
        sql`project_id = ${projectId}`,
        ...(filter.status !== undefined ? [sql`status = ${filter.status}`] : []),
        ...(filter.msg_config_id !== undefined ? [sql`msg_config_id = ${filter.msg_config_id}`] : []),
        ...(filter.msg_template_id !== undefined ? [sql`msg_template_id = ${filter.msg_template_id}`] : [])
      ])

    /**
     * Replaces a broadcast's rows of differences with their sum, in one statement: rows another transaction appends
     * meanwhile stay, and a fold running beside this one finds the rows it took already gone and skips them.
     */
    const fold = (broadcastId: string) =>
      sql`
        WITH folded AS (DELETE FROM msg_broadcast_counts WHERE broadcast_id = ${broadcastId} RETURNING *)
        INSERT INTO msg_broadcast_counts
        SELECT broadcast_id, sum(total), sum(pending), sum(sent), sum(failed), sum(delivered), sum(read), sum(responded),
          sum(held)
        FROM folded GROUP BY broadcast_id`

    const owned = (projectId: string, broadcastId: string) =>
      Effect.map(
        sql<{ readonly status: BroadcastStatus }>`SELECT status FROM msg_broadcasts WHERE id = ${broadcastId} AND project_id = ${projectId}`,
        (rows) => Option.fromNullishOr(rows[0]?.status)
      )

    return BroadcastsRepo.of({
      insert: Effect.fnUntraced(function*(b: BroadcastRecord) {
        yield* sql`
          INSERT INTO msg_broadcasts (id, project_id, name, status, msg_config_id, msg_template_id, template, scheduled_at,
            started_at, completed_at, stopped_at, stop_reason, created_at, updated_at)
          VALUES (${b.id}, ${b.project_id}, ${b.name}, ${b.status}, ${b.msg_config_id}, ${b.msg_template_id},
            ${jsonb(b.template)}::jsonb, ${b.scheduled_at}, ${b.started_at}, ${b.completed_at}, ${b.stopped_at},
            ${b.stop_reason}, ${b.created_at}, ${b.updated_at})`
      }, Effect.orDie),
      findById: Effect.fnUntraced(function*(projectId: string, id: string) {
        return yield* firstBroadcast(yield* sql`SELECT * FROM msg_broadcasts WHERE project_id = ${projectId} AND id = ${id}`)
      }, Effect.orDie),
      list: (projectId: string, filter: BroadcastFilter, window: ListWindow) =>
        Effect.orDie(listNewestFirst(sql, "msg_broadcasts", where(projectId, filter), window, toBroadcasts)),
      transition: Effect.fnUntraced(function*(b: BroadcastRecord, from: ReadonlyArray<BroadcastStatus>) {
        const rows = yield* sql`
          UPDATE msg_broadcasts SET name = ${b.name}, status = ${b.status}, template = ${jsonb(b.template)}::jsonb,
            scheduled_at = ${b.scheduled_at}, started_at = ${b.started_at}, completed_at = ${b.completed_at},
            stopped_at = ${b.stopped_at}, stop_reason = ${b.stop_reason}, updated_at = ${b.updated_at}
          WHERE id = ${b.id} AND project_id = ${b.project_id} AND status IN ${sql.in(from)}
          RETURNING *`
        return yield* firstBroadcast(rows)
      }, Effect.orDie),
      addRecipients: Effect.fnUntraced(function*(projectId: string, broadcastId: string, recipients: ReadonlyArray<RecipientRecord>) {
        return yield* sql.withTransaction(Effect.gen(function*() {
          // The row lock keeps a send or a schedule from starting while recipients go in.
          const locked = yield* sql<{ readonly status: string }>`
            SELECT status FROM msg_broadcasts WHERE id = ${broadcastId} AND project_id = ${projectId} FOR UPDATE`
          if (locked[0]?.status !== "draft") return Option.none()
          const rows = recipients.map((r) => ({
            id: r.id,
            phone_number: r.phone_number,
            contact_id: r.contact_id,
            message_id: r.message_id,
            template_parameters: r.template_parameters ?? null,
            created_at: r.created_at
          }))
          const inserted = yield* sql<{ readonly n: number }>`
            WITH added AS (
              INSERT INTO msg_broadcast_recipients (id, broadcast_id, project_id, phone_number, contact_id, status,
                message_id, template_parameters, created_at, updated_at)
              SELECT r.id, ${broadcastId}, ${projectId}, r.phone_number, r.contact_id, 'pending', r.message_id,
                r.template_parameters, r.created_at, r.created_at
              FROM ${jsonRows(sql, rows)} AS r(id text, phone_number text, contact_id text, message_id text,
                template_parameters jsonb, created_at timestamptz)
              ON CONFLICT (broadcast_id, phone_number) DO NOTHING
              RETURNING 1
            )
            SELECT count(*)::int AS n FROM added`
          const added = inserted[0]?.n ?? 0
          return Option.some({ added, duplicates: recipients.length - added })
        }))
      }, Effect.orDie),
      clearRecipients: Effect.fnUntraced(function*(projectId: string, broadcastId: string) {
        return yield* sql.withTransaction(Effect.gen(function*() {
          const locked = yield* sql<{ readonly status: string }>`
            SELECT status FROM msg_broadcasts WHERE id = ${broadcastId} AND project_id = ${projectId} FOR UPDATE`
          const status = locked[0]?.status
          if (status !== "draft" && status !== "scheduled") return Option.none()
          const deleted = yield* sql`DELETE FROM msg_broadcast_recipients WHERE broadcast_id = ${broadcastId} RETURNING 1`
          return Option.some(deleted.length)
        }))
      }, Effect.orDie),
      listRecipients: Effect.fnUntraced(function*(projectId: string, broadcastId: string, status: RecipientStatus | undefined, window: ListWindow) {
        if (Option.isNone(yield* owned(projectId, broadcastId))) return { items: [], hasMore: false, total: 0 }
        const filter = status === undefined ? sql`true` : sql`v.effective_status = ${status}`
        if (window.mode === "page") {
          const offset = (window.page - 1) * window.perPage
          const [{ total }] = yield* sql<{ readonly total: number }>`
            SELECT count(*)::int AS total FROM ${views(broadcastId)} v WHERE ${filter}`
          const rows = yield* sql<ViewRow>`
            SELECT * FROM ${views(broadcastId)} v WHERE ${filter}
            ORDER BY v.created_at DESC, v.id DESC LIMIT ${window.perPage} OFFSET ${offset}`
          return { items: rows.map(toView), hasMore: offset + rows.length < total, total }
        }
        const { after, before, limit } = window
        const conditions = [
          filter,
          ...(after !== undefined ? [sql`(v.created_at, v.id) < (${after.sortKey}::timestamptz, ${after.id})`] : []),
          ...(before !== undefined ? [sql`(v.created_at, v.id) > (${before.sortKey}::timestamptz, ${before.id})`] : [])
        ]
        const order = before !== undefined ? sql`v.created_at ASC, v.id ASC` : sql`v.created_at DESC, v.id DESC`
        const rows = yield* sql<ViewRow>`
          SELECT * FROM ${views(broadcastId)} v WHERE ${sql.and(conditions)} ORDER BY ${order} LIMIT ${limit + 1}`
        const page = rows.slice(0, limit).map(toView)
        return { items: before !== undefined ? page.reverse() : page, hasMore: rows.length > limit, total: 0 }
      }, Effect.orDie),
      counts: Effect.fnUntraced(function*(projectId: string, broadcastId: string) {
        // The sums the triggers of migration 0030 keep (zeros for another project's broadcast); many rows are folded
        // into one as the read goes.
        const rows = yield* sql`
          SELECT count(*)::int AS rows, coalesce(sum(total), 0)::int AS total, coalesce(sum(sent), 0)::int AS sent,
            coalesce(sum(failed), 0)::int AS failed, coalesce(sum(delivered), 0)::int AS delivered,
            coalesce(sum(read), 0)::int AS read, coalesce(sum(responded), 0)::int AS responded,
            coalesce(sum(pending), 0)::int AS pending, coalesce(sum(held), 0)::int AS held
          FROM msg_broadcast_counts c
          WHERE c.broadcast_id = ${broadcastId}
            AND EXISTS (SELECT 1 FROM msg_broadcasts b WHERE b.id = ${broadcastId} AND b.project_id = ${projectId})`
        const { rows: parts, ...counts } = decodeCounts(rows[0])
        if (parts > FOLD_AFTER) yield* fold(broadcastId)
        return counts satisfies BroadcastCounts
      }, Effect.orDie),
      lease: Effect.fnUntraced(function*(broadcastId: string, owner: string, now: string, until: string) {
        const rows = yield* sql`
          UPDATE msg_broadcasts SET lease_owner = ${owner}, lease_until = ${until}
          WHERE id = ${broadcastId} AND (lease_until IS NULL OR lease_until < ${now} OR lease_owner = ${owner})
          RETURNING *`
        return yield* firstBroadcast(rows)
      }, Effect.orDie),
      release: Effect.fnUntraced(function*(broadcastId: string, owner: string) {
        yield* sql`UPDATE msg_broadcasts SET lease_owner = NULL, lease_until = NULL WHERE id = ${broadcastId} AND lease_owner = ${owner}`
      }, Effect.orDie),
      pendingBatch: Effect.fnUntraced(function*(broadcastId: string, now: string, limit: number) {
        const rows = yield* sql<RecipientRow>`
          SELECT * FROM msg_broadcast_recipients
          WHERE broadcast_id = ${broadcastId} AND status = 'pending' AND (retry_at IS NULL OR retry_at <= ${now})
          ORDER BY created_at, id LIMIT ${limit}`
        return rows.map(toRecipient)
      }, Effect.orDie),
      markAttempted: Effect.fnUntraced(function*(broadcastId: string, ids: ReadonlyArray<string>, at: string) {
        if (ids.length === 0) return
        yield* sql`
          UPDATE msg_broadcast_recipients SET attempted_at = ${at}
          WHERE broadcast_id = ${broadcastId} AND id = ANY(${ids})`
      }, Effect.orDie),
      postpone: Effect.fnUntraced(function*(broadcastId: string, retries: ReadonlyArray<RecipientRetry>) {
        if (retries.length === 0) return
        yield* sql`
          UPDATE msg_broadcast_recipients t SET message_id = o.message_id, attempts = o.attempts, retry_at = o.retry_at,
            attempted_at = o.attempted_at, held_until = o.held_until
          FROM ${jsonRows(sql, retries)} AS o(id text, message_id text, attempts integer, retry_at timestamptz, attempted_at timestamptz, held_until timestamptz)
          WHERE t.id = o.id AND t.broadcast_id = ${broadcastId} AND t.status = 'pending'`
      }, Effect.orDie),
      settle: Effect.fnUntraced(function*(broadcastId: string, outcomes: ReadonlyArray<RecipientOutcome>) {
        if (outcomes.length === 0) return
        const rows = outcomes.map((o) => ({
          id: o.id,
          status: o.status,
          at: o.at,
          error_message: o.error_message,
          error_details: o.error_details
        }))
        // The recipients' row locks in id order, as status reports take them (`MessagesRepo.setStatuses`): the
        // reports of the batch's messages arrive while it settles.
        yield* sql`
          WITH locked AS (
            SELECT 1 FROM msg_broadcast_recipients WHERE id = ANY(${rows.map((o) => o.id)}) ORDER BY id FOR UPDATE
          )
          UPDATE msg_broadcast_recipients t SET status = o.status,
            sent_at = CASE WHEN o.status = 'sent' THEN o.at END,
            failed_at = CASE WHEN o.status = 'sent' THEN NULL ELSE o.at END,
            error_message = o.error_message, error_details = o.error_details, updated_at = o.at
          FROM ${jsonRows(sql, rows)} AS o(id text, status text, at timestamptz, error_message text, error_details jsonb)
          WHERE t.id = o.id AND t.broadcast_id = ${broadcastId} AND t.status = 'pending' AND (SELECT count(*) FROM locked) >= 0`
        // Status reports add a row of differences each: folded as the sender goes, so a read after a long silence
        // still sums few.
        const parts = yield* sql`SELECT count(*)::int AS n FROM msg_broadcast_counts WHERE broadcast_id = ${broadcastId}`
        if (decodeParts(parts[0]).n > FOLD_AFTER) yield* fold(broadcastId)
      }, Effect.orDie),
      progress: Effect.fnUntraced(function*(broadcastId: string) {
        const rows = yield* sql<{ readonly total: number; readonly pending: number }>`
          SELECT count(*)::int AS total, count(*) FILTER (WHERE status = 'pending')::int AS pending
          FROM msg_broadcast_recipients WHERE broadcast_id = ${broadcastId}`
        return rows[0]!
      }, Effect.orDie),
      listRunnable: Effect.fnUntraced(function*(now: string, limit: number) {
        const rows = yield* sql`
          SELECT * FROM msg_broadcasts
          WHERE status IN ('scheduled', 'sending') AND (status = 'sending' OR scheduled_at <= ${now})
          ORDER BY created_at, id LIMIT ${limit}`
        return yield* toBroadcasts(rows)
      }, Effect.orDie),
      contactsReachedSince: Effect.fnUntraced(function*(msgConfigIds: ReadonlyArray<string>, since: string) {
        if (msgConfigIds.length === 0) return 0
        const rows = yield* sql<{ readonly n: number }>`
          SELECT count(DISTINCT r.phone_number)::int AS n
          FROM msg_broadcasts b JOIN msg_broadcast_recipients r ON r.broadcast_id = b.id
          WHERE b.msg_config_id IN ${sql.in(msgConfigIds)} AND r.sent_at >= ${since}`
        return rows[0]?.n ?? 0
      }, Effect.orDie),
      anonymiseRecipients: Effect.fnUntraced(function*(projectId: string, phoneNumber: string) {
        const rows = yield* sql`
          UPDATE msg_broadcast_recipients SET phone_number = ${ANONYMISED_PHONE}, template_parameters = NULL
          WHERE project_id = ${projectId} AND phone_number = ${phoneNumber}
          RETURNING 1`
        return rows.length
      }, Effect.orDie)
    })
  })
)
