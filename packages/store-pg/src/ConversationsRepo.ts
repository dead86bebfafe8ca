/**
 * `ContactsRepo` and `ConversationsRepo` on PostgreSQL (migration 0004).
 */
import {
  type ContactFilter,
  type ContactRecord,
  ContactsRepo,
  type ConversationFilter,
  type ConversationRecord,
  ConversationsRepo,
  type ListWindow,
  MESSAGING_TOTAL_CAP
} from "@parley/core"
import { Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { Fragment } from "effect/sql/Statement"
import { type Column, columnNames, columnRows, decodeRows, IsoFromDate, JsonRecord, Nullable, valuesStatement } from "./Rows.ts"
import { jsonOrNull, lastOfEach, listWindow } from "./MessagingRows.ts"
import { deferred } from "./Transactor.ts"

const CONTACT_COLUMNS: ReadonlyArray<Column<ContactRecord>> = [
  ["id", "text", (c) => c.id],
  ["project_id", "text", (c) => c.project_id],
  ["wa_id", "text", (c) => c.wa_id],
  ["business_scoped_user_id", "text", (c) => c.business_scoped_user_id],
  ["parent_business_scoped_user_id", "text", (c) => c.parent_business_scoped_user_id],
  ["username", "text", (c) => c.username],
  ["profile_name", "text", (c) => c.profile_name],
  ["created_at", "timestamptz", (c) => c.created_at],
  ["updated_at", "timestamptz", (c) => c.updated_at]
]

const CONVERSATION_COLUMNS: ReadonlyArray<Column<ConversationRecord>> = [
  ["id", "text", (c) => c.id],
  ["project_id", "text", (c) => c.project_id],
  ["msg_config_id", "text", (c) => c.msg_config_id],
  ["phone_number_id", "text", (c) => c.phone_number_id],
  ["contact_id", "text", (c) => c.contact_id],
  ["phone_number", "text", (c) => c.phone_number],
  ["business_scoped_user_id", "text", (c) => c.business_scoped_user_id],
  ["parent_business_scoped_user_id", "text", (c) => c.parent_business_scoped_user_id],
  ["username", "text", (c) => c.username],
  ["contact_name", "text", (c) => c.contact_name],
  ["status", "text", (c) => c.status],
  ["end_reason", "text", (c) => c.end_reason],
  ["ended_at", "timestamptz", (c) => c.ended_at],
  ["last_active_at", "timestamptz", (c) => c.last_active_at],
  ["metadata", "jsonb", (c) => jsonOrNull(c.metadata)],
  ["assigned_user_id", "text", (c) => c.assigned_user_id],
  ["messages_count", "integer", (c) => c.messages_count],
  ["last_message_id", "text", (c) => c.last_message_id],
  ["last_message_type", "text", (c) => c.last_message_type],
  ["last_message_timestamp", "text", (c) => c.last_message_timestamp],
  ["last_message_text", "text", (c) => c.last_message_text],
  ["last_inbound_at", "timestamptz", (c) => c.last_inbound_at],
  ["last_outbound_at", "timestamptz", (c) => c.last_outbound_at],
  ["created_at", "timestamptz", (c) => c.created_at],
  ["updated_at", "timestamptz", (c) => c.updated_at]
]

/** A row of `msg_contacts`: the contact record, times as ISO text. */
const ContactRow = Schema.Struct({
  id: Schema.String,
  project_id: Schema.String,
  wa_id: Schema.NullOr(Schema.String),
  business_scoped_user_id: Schema.NullOr(Schema.String),
  parent_business_scoped_user_id: Schema.NullOr(Schema.String),
  username: Schema.NullOr(Schema.String),
  profile_name: Schema.NullOr(Schema.String),
  created_at: IsoFromDate,
  updated_at: IsoFromDate
})
const toContacts: (rows: ReadonlyArray<unknown>) => Effect.Effect<ReadonlyArray<ContactRecord>> = decodeRows(
  "msg_contacts",
  ContactRow
)

/** Which lookup of `findByIdentity`'s statement a row answers. */
const toMatches = decodeRows(Schema.Struct({ matched: Schema.Literals(["phone", "user"]) }))

export const layerContactsRepo = Layer.effect(
  ContactsRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const later = deferred(sql)
    const find = (condition: Fragment) =>
      Effect.flatMap(sql`SELECT * FROM msg_contacts WHERE ${condition}`, toContacts)

    const insertMany = Effect.fnUntraced(function*(contacts: ReadonlyArray<ContactRecord>) {
      if (contacts.length === 0) return
      const names = columnNames(sql, CONTACT_COLUMNS)
      yield* later(sql`INSERT INTO msg_contacts (${names}) SELECT ${names} FROM ${columnRows(sql, contacts, CONTACT_COLUMNS)}`)
    }, Effect.orDie)

    const findByWaIds = Effect.fnUntraced(function*(projectId: string, waIds: ReadonlyArray<string>) {
      if (waIds.length === 0) return []
      // `IS NOT NULL` lets the planner use the partial unique index: it cannot prove it from `= ANY` of a parameter.
      return yield* find(sql`project_id = ${projectId} AND wa_id = ANY(${waIds}) AND wa_id IS NOT NULL`)
    }, Effect.orDie)

    const findByUserId = Effect.fnUntraced(function*(projectId: string, userId: string) {
      // The contact's own id wins over a parent id that happens to match.
      const rows = yield* sql`
        SELECT * FROM msg_contacts
        WHERE project_id = ${projectId}
          AND (business_scoped_user_id = ${userId} OR parent_business_scoped_user_id = ${userId})
        ORDER BY (business_scoped_user_id = ${userId}) DESC NULLS LAST, created_at, id
        LIMIT 1`
      return Option.fromNullishOr((yield* toContacts(rows))[0])
    }, Effect.orDie)

    /** `findByWaId`'s or `findByUserId`'s condition for the contact's identity. */
    const identity = (c: ContactRecord) =>
      c.wa_id !== null
        ? sql`project_id = ${c.project_id} AND wa_id = ${c.wa_id} AND wa_id IS NOT NULL`
        : sql`project_id = ${c.project_id} AND (business_scoped_user_id = ${c.business_scoped_user_id} OR parent_business_scoped_user_id = ${c.business_scoped_user_id})`

    const findOrInsert = Effect.fnUntraced(function*(contact: ContactRecord) {
      const names = columnNames(sql, CONTACT_COLUMNS)
      // The lookup and the insert in one statement: the insert only when the lookup (the statement's snapshot) found
      // nothing. A contact inserted meanwhile without the caller's lock makes the insert do nothing: found after.
      const rows = yield* sql`
        WITH found AS (
          SELECT * FROM msg_contacts WHERE ${identity(contact)}
          ORDER BY (business_scoped_user_id = ${contact.business_scoped_user_id}) DESC NULLS LAST, created_at, id
          LIMIT 1
        ), made AS (
          INSERT INTO msg_contacts (${names})
          SELECT ${names} FROM ${columnRows(sql, [contact], CONTACT_COLUMNS)} WHERE NOT EXISTS (SELECT 1 FROM found)
          ON CONFLICT DO NOTHING
          RETURNING *
        )
        SELECT * FROM made UNION ALL SELECT * FROM found`
      const [first] = yield* toContacts(rows)
      if (first !== undefined) return { contact: first, made: first.id === contact.id }
      const again = Option.fromNullishOr((yield* find(identity(contact)))[0])
      if (Option.isNone(again)) return yield* Effect.die(new Error("a contact's insert did nothing and found none"))
      return { contact: again.value, made: false }
    }, Effect.orDie)

    return ContactsRepo.of({
      insert: (c: ContactRecord) => insertMany([c]),
      insertMany,
      findOrInsert,

      findById: Effect.fnUntraced(function*(projectId: string, id: string) {
        return Option.fromNullishOr((yield* find(sql`project_id = ${projectId} AND id = ${id}`))[0])
      }, Effect.orDie),

      findByWaId: (projectId: string, waId: string) =>
        Effect.map(findByWaIds(projectId, [waId]), (found) => Option.fromNullishOr(found[0])),
      findByWaIds,

      findByIdentity: Effect.fnUntraced(function*(projectId: string, waId: string | undefined, userId: string | undefined) {
        if (waId === undefined || userId === undefined) {
          return {
            byPhone: waId === undefined ? Option.none<ContactRecord>() : Option.fromNullishOr((yield* findByWaIds(projectId, [waId]))[0]),
            byUser: userId === undefined ? Option.none<ContactRecord>() : yield* findByUserId(projectId, userId)
          }
        }
        // Both lookups in one statement, each as its own method has it; `matched` says which a row answers.
        const rows = yield* sql`
          (SELECT 'phone' AS matched, * FROM msg_contacts
            WHERE project_id = ${projectId} AND wa_id = ${waId} AND wa_id IS NOT NULL
            LIMIT 1)
          UNION ALL
          (SELECT 'user' AS matched, * FROM msg_contacts
            WHERE project_id = ${projectId}
              AND (business_scoped_user_id = ${userId} OR parent_business_scoped_user_id = ${userId})
            ORDER BY (business_scoped_user_id = ${userId}) DESC NULLS LAST, created_at, id
            LIMIT 1)`
        const matches = yield* toMatches(rows)
        const of = (matched: "phone" | "user") =>
          Effect.map(toContacts(rows.filter((_, i) => matches[i]!.matched === matched)), (found) => Option.fromNullishOr(found[0]))
        return { byPhone: yield* of("phone"), byUser: yield* of("user") }
      }, Effect.orDie),

      findByUserId,

      // Nobody reads its answer: it goes out with the transaction's next statement.
      update: Effect.fnUntraced(function*(c: ContactRecord) {
        yield* later(sql`
          UPDATE msg_contacts SET
            wa_id = ${c.wa_id}, business_scoped_user_id = ${c.business_scoped_user_id},
            parent_business_scoped_user_id = ${c.parent_business_scoped_user_id}, username = ${c.username},
            profile_name = ${c.profile_name}, updated_at = ${c.updated_at}
          WHERE project_id = ${c.project_id} AND id = ${c.id}`)
      }, Effect.orDie),

      list: Effect.fnUntraced(function*(projectId: string, filter: ContactFilter, window: ListWindow) {
        const where = sql.and([
          sql`project_id = ${projectId}`,
          ...(filter.wa_id !== undefined ? [sql`wa_id = ${filter.wa_id}`] : []),
          ...(filter.msg_config_id !== undefined
            ? [sql`id IN (SELECT contact_id FROM msg_conversations WHERE msg_config_id = ${filter.msg_config_id})`]
            : [])
        ])
        return yield* listWindow(sql, "msg_contacts", where, window, toContacts, MESSAGING_TOTAL_CAP)
      }, Effect.orDie)
    })
  })
)
/** A row of `msg_conversations`: the conversation record, times as ISO text. */
const ConversationRow = Schema.Struct({
  id: Schema.String,
  project_id: Schema.String,
  msg_config_id: Schema.String,
  phone_number_id: Schema.String,
  contact_id: Schema.String,
  phone_number: Schema.NullOr(Schema.String),
  business_scoped_user_id: Schema.NullOr(Schema.String),
  parent_business_scoped_user_id: Schema.NullOr(Schema.String),
  username: Schema.NullOr(Schema.String),
  contact_name: Schema.NullOr(Schema.String),
  status: Schema.Literals(["active", "ended"]),
  end_reason: Schema.NullOr(Schema.Literals(["manual", "agent", "inactivity"])),
  ended_at: Nullable(IsoFromDate),
  last_active_at: IsoFromDate,
  metadata: Nullable(JsonRecord),
  assigned_user_id: Schema.NullOr(Schema.String),
  messages_count: Schema.Number,
  last_message_id: Schema.NullOr(Schema.String),
  last_message_type: Schema.NullOr(Schema.String),
  last_message_timestamp: Schema.NullOr(Schema.String),
  last_message_text: Schema.NullOr(Schema.String),
  last_inbound_at: Nullable(IsoFromDate),
  last_outbound_at: Nullable(IsoFromDate),
  created_at: IsoFromDate,
  updated_at: IsoFromDate
})
const toConversations: (rows: ReadonlyArray<unknown>) => Effect.Effect<ReadonlyArray<ConversationRecord>> =
  decodeRows("msg_conversations", ConversationRow)

export const layerConversationsRepo = Layer.effect(
  ConversationsRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const later = deferred(sql)

    const insertMany = Effect.fnUntraced(function*(conversations: ReadonlyArray<ConversationRecord>) {
      if (conversations.length === 0) return
      const names = columnNames(sql, CONVERSATION_COLUMNS)
      // `idle_from` (0039): where the idle sweep starts looking, the conversation's first activity.
      yield* later(sql`
        INSERT INTO msg_conversations (${names}, idle_from)
        SELECT ${names}, last_active_at FROM ${columnRows(sql, conversations, CONVERSATION_COLUMNS)}`)
    }, Effect.orDie)

    const findByIds = Effect.fnUntraced(function*(projectId: string, ids: ReadonlyArray<string>) {
      if (ids.length === 0) return []
      // By the primary key alone, the project checked here: with `project_id` in the query a planner without
      // statistics yet (a young table) walks the project's whole index range instead.
      const rows = yield* toConversations(yield* sql`SELECT * FROM msg_conversations WHERE id = ANY(${ids})`)
      return rows.filter((row) => row.project_id === projectId)
    }, Effect.orDie)

    const findActiveMany = Effect.fnUntraced(
      function*(pairs: ReadonlyArray<{ readonly msgConfigId: string; readonly contactId: string }>) {
        if (pairs.length === 0) return []
        const rows = yield* sql`
          SELECT c.* FROM (
            SELECT DISTINCT * FROM unnest(${pairs.map((p) => p.msgConfigId)}::text[], ${pairs.map((p) => p.contactId)}::text[])
          ) AS p (msg_config_id, contact_id)
          -- One lookup in the active index per pair (the LIMIT keeps the planner from turning it into a scan of the
          -- whole index, which it did whenever its statistics lagged behind new conversations).
          CROSS JOIN LATERAL (
            SELECT * FROM msg_conversations AS c
            WHERE c.msg_config_id = p.msg_config_id AND c.contact_id = p.contact_id AND c.status = 'active'
            LIMIT 1
          ) AS c`
        return yield* toConversations(rows)
      },
      Effect.orDie
    )

    const updateMany = Effect.fnUntraced(function*(conversations: ReadonlyArray<ConversationRecord>) {
      if (conversations.length === 0) return
      const rows = lastOfEach(conversations)
      // VALUES columns take their types from the casts; untyped parameters would all be text.
      yield* later(valuesStatement(sql`
        UPDATE msg_conversations AS c SET
          phone_number = v.phone_number, business_scoped_user_id = v.business_scoped_user_id,
          parent_business_scoped_user_id = v.parent_business_scoped_user_id, username = v.username,
          contact_name = v.contact_name, status = v.status, end_reason = v.end_reason, ended_at = v.ended_at,
          last_active_at = v.last_active_at, metadata = v.metadata, assigned_user_id = v.assigned_user_id,
          messages_count = v.messages_count, last_message_id = v.last_message_id, last_message_type = v.last_message_type,
          last_message_timestamp = v.last_message_timestamp, last_message_text = v.last_message_text,
          last_inbound_at = v.last_inbound_at, last_outbound_at = v.last_outbound_at, updated_at = v.updated_at,
          -- Unchanged but for a conversation ended before 0039 and reopened: an unchanged value keeps the update HOT.
          idle_from = COALESCE(c.idle_from, v.last_active_at)
        FROM (VALUES ${sql.csv(rows.map((c) => sql`(${c.id}, ${c.project_id}, ${c.phone_number},
          ${c.business_scoped_user_id}, ${c.parent_business_scoped_user_id}, ${c.username}, ${c.contact_name},
          ${c.status}, ${c.end_reason}, ${c.ended_at}::timestamptz, ${c.last_active_at}::timestamptz,
          ${jsonOrNull(c.metadata)}::jsonb, ${c.assigned_user_id}, ${c.messages_count}::integer, ${c.last_message_id},
          ${c.last_message_type}, ${c.last_message_timestamp}, ${c.last_message_text}, ${c.last_inbound_at}::timestamptz,
          ${c.last_outbound_at}::timestamptz, ${c.updated_at}::timestamptz)`))})
          AS v (id, project_id, phone_number, business_scoped_user_id, parent_business_scoped_user_id, username,
            contact_name, status, end_reason, ended_at, last_active_at, metadata, assigned_user_id, messages_count,
            last_message_id, last_message_type, last_message_timestamp, last_message_text, last_inbound_at,
            last_outbound_at, updated_at)
        WHERE c.project_id = v.project_id AND c.id = v.id`, rows.length))
    }, Effect.orDie)

    return ConversationsRepo.of({
      insert: (c: ConversationRecord) => insertMany([c]),
      insertMany,

      findById: (projectId: string, id: string) =>
        Effect.map(findByIds(projectId, [id]), (found) => Option.fromNullishOr(found[0])),
      findByIds,

      findActive: (msgConfigId: string, contactId: string) =>
        Effect.map(findActiveMany([{ msgConfigId, contactId }]), (found) => Option.fromNullishOr(found[0])),
      findActiveMany,

      update: (c: ConversationRecord) => updateMany([c]),
      updateMany,

      setLastMessageIds: Effect.fnUntraced(
        function*(updates: Parameters<ConversationsRepo["Service"]["setLastMessageIds"]>[0]) {
          if (updates.length === 0) return
          yield* later(valuesStatement(sql`
            UPDATE msg_conversations AS c SET last_message_id = v.network_id, updated_at = v.at
            FROM (VALUES ${sql.csv(updates.map((u) => sql`(${u.projectId}, ${u.id}, ${u.timestamp}, ${u.networkId},
              ${u.at}::timestamptz)`))}) AS v (project_id, id, timestamp, network_id, at)
            WHERE c.project_id = v.project_id AND c.id = v.id AND c.last_message_id IS NULL
              AND c.last_message_timestamp = v.timestamp`, updates.length))
        },
        Effect.orDie
      ),

      list: Effect.fnUntraced(
        function*(projectId: string, f: ConversationFilter, window: ListWindow) {
          const where = sql.and([
            sql`project_id = ${projectId}`,
            ...(f.msg_config_id !== undefined ? [sql`msg_config_id = ${f.msg_config_id}`] : []),
            ...(f.status !== undefined ? [sql`status = ${f.status}`] : []),
            ...(f.phone_number !== undefined ? [sql`phone_number = ${f.phone_number}`] : []),
            ...(f.assigned_user_id !== undefined ? [sql`assigned_user_id = ${f.assigned_user_id}`] : []),
            ...(f.unassigned === true ? [sql`assigned_user_id IS NULL`] : []),
            ...(f.last_active_since !== undefined ? [sql`last_active_at >= ${f.last_active_since}::timestamptz`] : []),
            ...(f.last_active_until !== undefined ? [sql`last_active_at <= ${f.last_active_until}::timestamptz`] : [])
          ])
          return yield* listWindow(sql, "msg_conversations", where, window, toConversations, MESSAGING_TOTAL_CAP)
        },
        Effect.orDie
      ),

      // Walks `idle_from` (0039), never later than `last_active_at`: a conversation found there that spoke since is
      // moved up to its last activity, and the walk goes on while a whole batch had moved.
      listIdle: Effect.fnUntraced(function*(before: string, limit: number) {
        const cutoff = Date.parse(before)
        while (true) {
          const due = yield* toConversations(
            yield* sql`
            SELECT * FROM msg_conversations WHERE status = 'active' AND idle_from < ${before}::timestamptz
            ORDER BY idle_from, id LIMIT ${limit}`
          )
          const moved = due.filter((c) => Date.parse(c.last_active_at) >= cutoff)
          if (moved.length > 0) {
            yield* sql`
              UPDATE msg_conversations AS c SET idle_from = c.last_active_at
              WHERE c.id = ANY(${moved.map((c) => c.id)}) AND c.status = 'active'`
          }
          const idle = due.filter((c) => Date.parse(c.last_active_at) < cutoff)
          if (idle.length > 0 || due.length < limit) {
            return idle.sort((a, b) => Date.parse(a.last_active_at) - Date.parse(b.last_active_at) || (a.id < b.id ? -1 : 1))
          }
        }
      }, Effect.orDie)
    })
  })
)
