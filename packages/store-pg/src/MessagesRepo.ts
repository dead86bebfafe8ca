/**
 * `MessagesRepo` on PostgreSQL (migration 0004): messages and the status
 * reports kept for them.
 */
import {
  type InboundReadMark,
  type ListWindow,
  MESSAGE_STATUSES,
  type MessageFilter,
  type MessageMedia,
  type MessageRecord,
  MessagesRepo,
  MESSAGING_TOTAL_CAP,
  type ProcessingStatus,
  type StatusEventRecord
} from "@parley/core"
import { Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import {
  type Column,
  columnNames,
  columnRows,
  Count,
  decodeRows,
  IsoFromDate,
  JsonArray,
  jsonb,
  JsonObject,
  JsonRecord,
  Nullable,
  valuesStatement
} from "./Rows.ts"
import { jsonOrNull, lastOfEach, listWindow } from "./MessagingRows.ts"
import { ahead, deferred } from "./Transactor.ts"

const MESSAGE_COLUMNS: ReadonlyArray<Column<MessageRecord>> = [
  ["id", "text", (m) => m.id],
  ["project_id", "text", (m) => m.project_id],
  ["msg_config_id", "text", (m) => m.msg_config_id],
  ["phone_number_id", "text", (m) => m.phone_number_id],
  ["conversation_id", "text", (m) => m.conversation_id],
  ["contact_id", "text", (m) => m.contact_id],
  ["network_id", "text", (m) => m.network_id],
  ["direction", "text", (m) => m.direction],
  ["type", "text", (m) => m.type],
  ["timestamp", "text", (m) => m.timestamp],
  ["fields", "jsonb", (m) => jsonb(m.fields)],
  ["status", "text", (m) => m.status],
  ["processing_status", "text", (m) => m.processing_status],
  ["origin", "text", (m) => m.origin],
  ["has_media", "boolean", (m) => m.has_media],
  ["content", "text", (m) => m.content],
  ["transcript", "text", (m) => m.transcript],
  ["media", "jsonb", (m) => jsonOrNull(m.media)],
  ["message_type_data", "jsonb", (m) => jsonOrNull(m.message_type_data)],
  ["statuses", "jsonb", (m) => jsonb(m.statuses)],
  ["ext_data", "jsonb", (m) => jsonb(m.ext_data)],
  ["contact_name", "text", (m) => m.contact_name],
  ["phone_number", "text", (m) => m.phone_number],
  ["created_at", "timestamptz", (m) => m.created_at],
  ["updated_at", "timestamptz", (m) => m.updated_at]
]

const STATUS_EVENT_COLUMNS: ReadonlyArray<Column<StatusEventRecord>> = [
  ["phone_number_id", "text", (e) => e.phone_number_id],
  ["network_id", "text", (e) => e.network_id],
  ["status", "text", (e) => e.status],
  ["timestamp", "text", (e) => e.timestamp],
  ["raw", "jsonb", (e) => jsonb(e.raw)],
  ["received_at", "timestamptz", (e) => e.received_at]
]
/** A row of `msg_messages`: the message record, times as ISO text. */
const MessageRow = Schema.Struct({
  id: Schema.String,
  project_id: Schema.String,
  msg_config_id: Schema.String,
  phone_number_id: Schema.String,
  conversation_id: Schema.String,
  contact_id: Schema.String,
  network_id: Schema.NullOr(Schema.String),
  direction: Schema.Literals(["inbound", "outbound"]),
  type: Schema.String,
  timestamp: Schema.String,
  fields: JsonRecord,
  status: Schema.Literals(MESSAGE_STATUSES),
  processing_status: Schema.Literals(["pending", "completed", "blocked"]),
  origin: Schema.NullOr(Schema.Literals(["api", "workflow", "business_app", "history_sync", "broadcast"])),
  has_media: Schema.Boolean,
  content: Schema.NullOr(Schema.String),
  transcript: Schema.NullOr(Schema.String),
  media: Nullable(JsonObject<MessageMedia>()),
  message_type_data: Nullable(JsonRecord),
  statuses: JsonArray<ReadonlyArray<unknown>>(),
  ext_data: JsonRecord,
  contact_name: Schema.NullOr(Schema.String),
  phone_number: Schema.NullOr(Schema.String),
  created_at: IsoFromDate,
  updated_at: IsoFromDate
})
const toMessages: (rows: ReadonlyArray<unknown>) => Effect.Effect<ReadonlyArray<MessageRecord>> = decodeRows(
  "msg_messages",
  MessageRow
)

const StatusKeyRow = Schema.Struct({
  phone_number_id: Schema.String,
  network_id: Schema.String,
  status: Schema.String,
  timestamp: Schema.String
})
const toStatusKeys = decodeRows("msg_status_events", StatusKeyRow)

/** A row of `msg_status_events` (its `seq` only orders them). */
const StatusEventRow = Schema.Struct({ ...StatusKeyRow.fields, raw: Schema.Unknown, received_at: IsoFromDate })
const toStatusEvents: (rows: ReadonlyArray<unknown>) => Effect.Effect<ReadonlyArray<StatusEventRecord>> = decodeRows(
  "msg_status_events",
  StatusEventRow
)

const IdRow = Schema.Struct({ id: Schema.String })
const toIds = decodeRows("msg_messages insert", IdRow)
const decodeMarked = decodeRows("msg_messages mark read", Schema.Struct({ n: Count }))

type StatusKey = Pick<StatusEventRecord, "phone_number_id" | "network_id" | "status" | "timestamp">

const statusKey = (e: StatusKey) => JSON.stringify([e.phone_number_id, e.network_id, e.status, e.timestamp])

export const layerMessagesRepo = Layer.effect(
  MessagesRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const later = deferred(sql)
    const early = ahead(sql)

    const insertMany = Effect.fnUntraced(function*(messages: ReadonlyArray<MessageRecord>) {
      if (messages.length === 0) return []
      // Duplicates of a network message, stored or earlier in the same call, meet on the partial unique index
      // and insert nothing.
      const names = columnNames(sql, MESSAGE_COLUMNS)
      const insert = sql`
        INSERT INTO msg_messages (${names})
        SELECT ${names} FROM ${columnRows(sql, messages, MESSAGE_COLUMNS)} ORDER BY r.ord
        ON CONFLICT (phone_number_id, network_id) WHERE network_id IS NOT NULL DO NOTHING
        RETURNING id`
      // Without network ids nothing can meet: every row is stored, and nobody needs to wait for the answer.
      if (messages.every((m) => m.network_id === null)) {
        yield* later(insert)
        return messages.map(() => true)
      }
      const stored = new Set((yield* toIds(yield* insert)).map((r) => r.id))
      return messages.map((m) => stored.has(m.id))
    }, Effect.orDie)

    const findByNetworkIds = Effect.fnUntraced(
      function*(phoneNumberId: string, networkIds: ReadonlyArray<string>) {
        if (networkIds.length === 0) return []
        // `IS NOT NULL` lets the planner use the partial unique index: it cannot prove it from `= ANY` of a parameter.
        return yield* toMessages(
          yield* sql`
          SELECT * FROM msg_messages
          WHERE phone_number_id = ${phoneNumberId} AND network_id = ANY(${networkIds}) AND network_id IS NOT NULL`
        )
      },
      Effect.orDie
    )

    const updateMany = Effect.fnUntraced(function*(messages: ReadonlyArray<MessageRecord>) {
      if (messages.length === 0) return
      const rows = lastOfEach(messages)
      // VALUES columns take their types from the casts; untyped parameters would all be text.
      yield* later(valuesStatement(sql`
        UPDATE msg_messages AS m SET
          network_id = v.network_id, type = v.type, timestamp = v.timestamp, fields = v.fields, status = v.status,
          processing_status = v.processing_status, origin = v.origin, has_media = v.has_media, content = v.content,
          transcript = v.transcript, media = v.media, message_type_data = v.message_type_data, statuses = v.statuses,
          ext_data = v.ext_data, contact_name = v.contact_name, phone_number = v.phone_number, updated_at = v.updated_at
        FROM (VALUES ${sql.csv(rows.map((m) => sql`(${m.id}, ${m.project_id}, ${m.network_id}, ${m.type},
          ${m.timestamp}, ${jsonb(m.fields)}::jsonb, ${m.status}, ${m.processing_status}, ${m.origin},
          ${m.has_media}::boolean, ${m.content}, ${m.transcript}, ${jsonOrNull(m.media)}::jsonb,
          ${jsonOrNull(m.message_type_data)}::jsonb, ${jsonb(m.statuses)}::jsonb, ${jsonb(m.ext_data)}::jsonb,
          ${m.contact_name}, ${m.phone_number}, ${m.updated_at}::timestamptz)`))})
          AS v (id, project_id, network_id, type, timestamp, fields, status, processing_status, origin, has_media,
            content, transcript, media, message_type_data, statuses, ext_data, contact_name, phone_number, updated_at)
        WHERE m.project_id = v.project_id AND m.id = v.id`, rows.length))
    }, Effect.orDie)

    // No ON CONFLICT: a duplicate fails the statement, and with it the caller's transaction.
    const insertNew = Effect.fnUntraced(function*(message: MessageRecord) {
      const names = columnNames(sql, MESSAGE_COLUMNS)
      yield* later(sql`INSERT INTO msg_messages (${names}) SELECT ${names} FROM ${columnRows(sql, [message], MESSAGE_COLUMNS)}`)
    }, Effect.orDie)

    return MessagesRepo.of({
      insert: (m: MessageRecord) => Effect.map(insertMany([m]), (stored) => stored[0]!),
      insertNew,
      insertMany,

      findById: Effect.fnUntraced(function*(projectId: string, id: string) {
        const rows = yield* sql`SELECT * FROM msg_messages WHERE project_id = ${projectId} AND id = ${id}`
        return Option.fromNullishOr((yield* toMessages(rows))[0])
      }, Effect.orDie),

      findByNetworkId: (phoneNumberId: string, networkId: string) =>
        Effect.map(findByNetworkIds(phoneNumberId, [networkId]), (found) => Option.fromNullishOr(found[0])),
      findByNetworkIds,

      update: (m: MessageRecord) => updateMany([m]),
      updateMany,

      setStatuses: Effect.fnUntraced(
        function*(updates: Parameters<MessagesRepo["Service"]["setStatuses"]>[0]) {
          if (updates.length === 0) return
          const last = lastOfEach(updates)
          // A broadcast message's new status rewrites its recipient (the counters' triggers, migration 0030), row by
          // row in the update's order, while the broadcast's sender settles many recipients at once: both take the
          // recipients' row locks in id order first (the `locked` init plan runs before any row is updated), so
          // they wait for each other instead of deadlocking.
          yield* later(valuesStatement(sql`
            WITH locked AS (
              SELECT 1 FROM msg_broadcast_recipients WHERE message_id = ANY(${last.map((u) => u.id)}) ORDER BY id FOR UPDATE
            )
            UPDATE msg_messages AS m SET status = v.status, statuses = v.statuses, updated_at = v.updated_at
            FROM (VALUES ${sql.csv(last.map((u) => sql`(${u.project_id}, ${u.id}, ${u.status},
              ${jsonb(u.statuses)}::jsonb, ${u.updated_at}::timestamptz)`))}) AS v (project_id, id, status, statuses, updated_at)
            WHERE m.project_id = v.project_id AND m.id = v.id AND (SELECT count(*) FROM locked) >= 0`, last.length))
        },
        Effect.orDie
      ),

      setNetworkIdsUnlessReported: Effect.fnUntraced(
        function*(updates: Parameters<MessagesRepo["Service"]["setNetworkIdsUnlessReported"]>[0]) {
          if (updates.length === 0) return Effect.succeed<ReadonlyArray<string>>([])
          // Each statement of a transaction sees what committed before it began: after the caller's locks, every
          // report that overtook the send.
          const set = yield* early(valuesStatement(sql`
            UPDATE msg_messages AS m SET network_id = v.network_id, updated_at = v.at
            FROM (VALUES ${sql.csv(updates.map((u) => sql`(${u.projectId}, ${u.id}, ${u.phoneNumberId}, ${u.networkId}, ${u.at}::timestamptz)`))})
              AS v (project_id, id, phone_number_id, network_id, at)
            WHERE m.project_id = v.project_id AND m.id = v.id
              AND NOT EXISTS (SELECT 1 FROM msg_status_events e WHERE e.phone_number_id = v.phone_number_id AND e.network_id = v.network_id)
            RETURNING m.id`, updates.length))
          return Effect.orDie(Effect.map(Effect.flatMap(set, toIds), (rows) => rows.map((r) => r.id)))
        },
        Effect.orDie
      ),

      settleProcessing: Effect.fnUntraced(function*(projectId: string, ids: ReadonlyArray<string>, status: ProcessingStatus) {
        if (ids.length === 0) return
        yield* later(sql`
          UPDATE msg_messages SET processing_status = ${status}
          WHERE project_id = ${projectId} AND id = ANY(${ids}) AND processing_status = 'pending'`)
      }, Effect.orDie),

      markInboundRead: Effect.fnUntraced(function*(marks: ReadonlyArray<InboundReadMark>) {
        if (marks.length === 0) return 0
        // The targets (through the partial unique index: hence `IS NOT NULL`), one per conversation (its latest), and
        // the conversations' earlier unread inbound messages, found and changed in one statement. VALUES, not
        // `columnRows`: a keyed join, planned for the true count.
        const rows = yield* valuesStatement(sql`
          WITH target AS (
            SELECT m.project_id, m.conversation_id, max(m.created_at) AS created_at, max(v.at) AS at
            FROM (VALUES ${sql.csv(marks.map((k) => sql`(${k.projectId}, ${k.phoneNumberId}, ${k.networkId}, ${k.at}::timestamptz)`))})
              AS v (project_id, phone_number_id, network_id, at)
            JOIN msg_messages AS m ON m.phone_number_id = v.phone_number_id AND m.network_id = v.network_id
              AND m.network_id IS NOT NULL AND m.project_id = v.project_id AND m.direction = 'inbound'
            GROUP BY m.project_id, m.conversation_id
          ), marked AS (
            UPDATE msg_messages AS m SET status = 'read', updated_at = t.at
            FROM target AS t
            WHERE m.project_id = t.project_id AND m.conversation_id = t.conversation_id AND m.direction = 'inbound'
              AND m.status = 'delivered' AND m.created_at <= t.created_at
            RETURNING 1
          )
          SELECT count(*)::int AS n FROM marked`, marks.length)
        return (yield* decodeMarked(rows))[0]?.n ?? 0
      }, Effect.orDie),

      list: Effect.fnUntraced(function*(projectId: string, f: MessageFilter, window: ListWindow) {
        const where = sql.and([
          sql`project_id = ${projectId}`,
          ...(f.msg_config_id !== undefined ? [sql`msg_config_id = ${f.msg_config_id}`] : []),
          ...(f.conversation_id !== undefined ? [sql`conversation_id = ${f.conversation_id}`] : []),
          ...(f.direction !== undefined ? [sql`direction = ${f.direction}`] : []),
          ...(f.status !== undefined ? [sql`status = ${f.status}`] : []),
          ...(f.since !== undefined ? [sql`created_at >= ${f.since}::timestamptz`] : []),
          ...(f.until !== undefined ? [sql`created_at <= ${f.until}::timestamptz`] : []),
          ...(f.phone_number !== undefined ? [sql`phone_number = ${f.phone_number}`] : []),
          ...(f.type !== undefined ? [sql`type = ${f.type}`] : []),
          ...(f.has_media !== undefined ? [sql`has_media = ${f.has_media}`] : [])
        ])
        return yield* listWindow(sql, "msg_messages", where, window, toMessages, MESSAGING_TOTAL_CAP)
      }, Effect.orDie),

      recordStatuses: Effect.fnUntraced(function*(events: ReadonlyArray<StatusEventRecord>) {
        if (events.length === 0) return []
        // `seq` is drawn in the order given, so arrival order holds within the call; a report repeated in it
        // meets the first on the primary key.
        const names = columnNames(sql, STATUS_EVENT_COLUMNS)
        const rows = yield* sql`
          INSERT INTO msg_status_events (${names})
          SELECT ${names} FROM ${columnRows(sql, events, STATUS_EVENT_COLUMNS)} ORDER BY r.ord
          ON CONFLICT DO NOTHING
          RETURNING phone_number_id, network_id, status, timestamp`
        // Only the first of repeats in the call is the new one.
        const fresh = new Set((yield* toStatusKeys(rows)).map(statusKey))
        return events.map((e) => fresh.delete(statusKey(e)))
      }, Effect.orDie),

      statusEvents: Effect.fnUntraced(
        function*(phoneNumberId: string, networkIds: ReadonlyArray<string>) {
          if (networkIds.length === 0) return []
          return yield* toStatusEvents(
            yield* sql`
            SELECT * FROM msg_status_events WHERE phone_number_id = ${phoneNumberId} AND network_id = ANY(${networkIds})
            ORDER BY seq`
          )
        },
        Effect.orDie
      ),

      statusEventsByCallbackData: Effect.fnUntraced(
        function*(phoneNumberId: string, callbackData: string, since: string) {
          // Asked only for a send in doubt, about the minutes since it started: the `received_at` index bounds the scan.
          return yield* toStatusEvents(
            yield* sql`
            SELECT * FROM msg_status_events
            WHERE received_at >= ${since}::timestamptz AND phone_number_id = ${phoneNumberId}
              AND raw->>'biz_opaque_callback_data' = ${callbackData}
            ORDER BY seq`
          )
        },
        Effect.orDie
      )
    })
  })
)
