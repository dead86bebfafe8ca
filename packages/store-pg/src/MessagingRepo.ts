/**
 * The messaging ports on PostgreSQL (migration 0004): `MessageConfigsRepo`,
 * `ContactsRepo`, `ConversationsRepo`, `MessagesRepo`, `MediaRepo`,
 * `UpstreamInboxRepo`, and `MessagingLocks` as transaction-scoped advisory
 * locks.
 */
import {
  type ContactFilter,
  type ContactRecord,
  ContactsRepo,
  type ConversationFilter,
  type ConversationRecord,
  ConversationsRepo,
  type InboxEntry,
  type ListSlice,
  type ListWindow,
  MediaRepo,
  type MediaUpload,
  type MessageConfigFilter,
  type MessageConfigRecord,
  MessageConfigsRepo,
  type MessageFilter,
  type MessageRecord,
  MessagesRepo,
  MESSAGING_TOTAL_CAP,
  MessagingLocks,
  type NetworkFacts,
  type StatusEventRecord,
  type StoredMedia,
  type TemplateStatusRecord,
  UpstreamInboxRepo
} from "@parley/core"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Option, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import type { Fragment } from "effect/sql/Statement"
import { deferred } from "./Transactor.ts"
import { changeSignals, type Column, columnNames, columnRows, iso, isoOrNull, jsonb, mapUnique } from "./Rows.ts"

type Sql = SqlClient.SqlClient

const first = <R, A>(rows: ReadonlyArray<R>, f: (row: R) => A) => Option.map(Option.fromNullishOr(rows[0]), f)

const secret = (value: string | null): Redacted.Redacted<string> | null => value === null ? null : Redacted.make(value)
const reveal = (value: Redacted.Redacted<string> | null): string | null => value === null ? null : Redacted.value(value)
const jsonOrNull = (value: unknown): string | null => value === null ? null : jsonb(value)

/** The last of the records sharing an id, as updates applied one after another would leave it. */
const lastOfEach = <A extends { readonly id: string }>(records: ReadonlyArray<A>): ReadonlyArray<A> => [
  ...new Map(records.map((r) => [r.id, r])).values()
]

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

/**
 * A list of `table` rows matching `where`, newest first by (created_at, id),
 * through the window; page totals counted up to `cap`.
 */
const listWindow = <Row extends object, A>(
  sql: Sql,
  table: string,
  where: Fragment,
  window: ListWindow,
  toRecord: (row: Row) => A,
  cap: number
): Effect.Effect<ListSlice<A>, unknown> =>
  Effect.gen(function*() {
    const from = sql(table)
    if (window.mode === "page") {
      const [{ total }] = yield* sql<{ readonly total: number }>`
        SELECT count(*)::int AS total FROM (SELECT 1 FROM ${from} WHERE ${where} LIMIT ${cap}) capped`
      const rows = yield* sql<Row>`
        SELECT * FROM ${from} WHERE ${where}
        ORDER BY created_at DESC, id DESC LIMIT ${window.perPage + 1} OFFSET ${(window.page - 1) * window.perPage}`
      return { items: rows.slice(0, window.perPage).map(toRecord), hasMore: rows.length > window.perPage, total }
    }
    const { after, before, limit } = window
    const conditions = [
      where,
      ...(after !== undefined ? [sql`(created_at, id) < (${after.sortKey}::timestamptz, ${after.id})`] : []),
      ...(before !== undefined ? [sql`(created_at, id) > (${before.sortKey}::timestamptz, ${before.id})`] : [])
    ]
    const order = before !== undefined ? sql`created_at ASC, id ASC` : sql`created_at DESC, id DESC`
    const rows = yield* sql<Row>`SELECT * FROM ${from} WHERE ${sql.and(conditions)} ORDER BY ${order} LIMIT ${limit + 1}`
    const page = rows.slice(0, limit).map(toRecord)
    return { items: before !== undefined ? page.reverse() : page, hasMore: rows.length > limit, total: 0 }
  })

// ---------------------------------------------------------------------------------------------
// Message configs

interface ConfigRow {
  readonly id: string
  readonly project_id: string
  readonly name: string
  readonly display_name: string
  readonly kind: MessageConfigRecord["kind"]
  readonly phone_number_id: string
  readonly business_account_id: string
  readonly display_phone_number: string
  readonly display_phone_number_normalized: string
  readonly customer_id: string | null
  readonly inbound_processing_enabled: boolean
  readonly access_token: string
  readonly webhook_verify_token: string | null
  readonly app_secret: string | null
  readonly webhook_destination_url: string | null
  readonly facts: NetworkFacts
  readonly refreshed_at: Date | null
  readonly webhook_verified_at: Date | null
  readonly deleted_at: Date | null
  readonly created_at: Date
  readonly updated_at: Date
}

const toConfig = (row: ConfigRow): MessageConfigRecord => ({
  id: row.id,
  project_id: row.project_id,
  name: row.name,
  display_name: row.display_name,
  kind: row.kind,
  phone_number_id: row.phone_number_id,
  business_account_id: row.business_account_id,
  display_phone_number: row.display_phone_number,
  display_phone_number_normalized: row.display_phone_number_normalized,
  customer_id: row.customer_id,
  inbound_processing_enabled: row.inbound_processing_enabled,
  access_token: Redacted.make(row.access_token),
  webhook_verify_token: secret(row.webhook_verify_token),
  app_secret: secret(row.app_secret),
  webhook_destination_url: secret(row.webhook_destination_url),
  facts: row.facts,
  refreshed_at: isoOrNull(row.refreshed_at),
  webhook_verified_at: isoOrNull(row.webhook_verified_at),
  deleted_at: isoOrNull(row.deleted_at),
  created_at: iso(row.created_at),
  updated_at: iso(row.updated_at)
})

const configDuplicates = mapUnique({ msg_configs_live_phone_number_key: "phone_number_id" })

/** NOTIFYs of committed config changes, for the caches of every process sharing the database. */
const CONFIG_CHANNEL = "parley_msg_configs"

export const layerMessageConfigsRepo = Layer.effect(
  MessageConfigsRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const pg = yield* PgClient.PgClient
    // After the write: inside a transaction the NOTIFY is delivered at its commit, outside it after the write's.
    const signal = <A>(result: Option.Option<A>): Effect.Effect<Option.Option<A>, SqlError> =>
      Option.isSome(result) ? Effect.as(sql`SELECT pg_notify(${CONFIG_CHANNEL}, '')`, result) : Effect.succeed(result)
    return MessageConfigsRepo.of({
      insert: Effect.fnUntraced(function*(c: MessageConfigRecord) {
        yield* sql`
          INSERT INTO msg_configs (id, project_id, name, display_name, kind, phone_number_id, business_account_id,
            display_phone_number, display_phone_number_normalized, customer_id, inbound_processing_enabled, access_token,
            webhook_verify_token, app_secret, webhook_destination_url, facts, refreshed_at, webhook_verified_at,
            deleted_at, created_at, updated_at)
          VALUES (${c.id}, ${c.project_id}, ${c.name}, ${c.display_name}, ${c.kind}, ${c.phone_number_id},
            ${c.business_account_id}, ${c.display_phone_number}, ${c.display_phone_number_normalized}, ${c.customer_id},
            ${c.inbound_processing_enabled}, ${Redacted.value(c.access_token)}, ${reveal(c.webhook_verify_token)},
            ${reveal(c.app_secret)}, ${reveal(c.webhook_destination_url)}, ${jsonb(c.facts)}, ${c.refreshed_at},
            ${c.webhook_verified_at}, ${c.deleted_at}, ${c.created_at}, ${c.updated_at})`
        yield* signal(Option.some(c))
      }, Effect.catchTag("SqlError", configDuplicates)),

      findById: Effect.fnUntraced(function*(projectId: string, id: string) {
        const rows = yield* sql<ConfigRow>`
          SELECT * FROM msg_configs WHERE project_id = ${projectId} AND id = ${id} AND deleted_at IS NULL`
        return first(rows, toConfig)
      }, Effect.orDie),

      findLiveById: Effect.fnUntraced(function*(id: string) {
        const rows = yield* sql<ConfigRow>`SELECT * FROM msg_configs WHERE id = ${id} AND deleted_at IS NULL`
        return first(rows, toConfig)
      }, Effect.orDie),

      findByPhoneNumberId: Effect.fnUntraced(function*(phoneNumberId: string) {
        const rows = yield* sql<ConfigRow>`
          SELECT * FROM msg_configs WHERE phone_number_id = ${phoneNumberId} AND deleted_at IS NULL`
        return first(rows, toConfig)
      }, Effect.orDie),

      listByBusinessAccount: Effect.fnUntraced(function*(businessAccountId: string) {
        const rows = yield* sql<ConfigRow>`
          SELECT * FROM msg_configs WHERE business_account_id = ${businessAccountId} AND deleted_at IS NULL
          ORDER BY created_at, id`
        return rows.map(toConfig)
      }, Effect.orDie),

      list: Effect.fnUntraced(
        function*(projectId: string, filter: MessageConfigFilter, window: ListWindow) {
          const where = sql.and([
            sql`project_id = ${projectId}`,
            sql`deleted_at IS NULL`,
            ...(filter.customer_id !== undefined ? [sql`customer_id = ${filter.customer_id}`] : []),
            ...(filter.kind !== undefined ? [sql`kind = ${filter.kind}`] : [])
          ])
          return yield* listWindow(sql, "msg_configs", where, window, toConfig, Number.MAX_SAFE_INTEGER)
        },
        Effect.orDie
      ),

      update: Effect.fnUntraced(function*(c: MessageConfigRecord) {
        const rows = yield* sql<ConfigRow>`
          UPDATE msg_configs SET
            name = ${c.name}, display_name = ${c.display_name}, kind = ${c.kind}, phone_number_id = ${c.phone_number_id},
            business_account_id = ${c.business_account_id}, display_phone_number = ${c.display_phone_number},
            display_phone_number_normalized = ${c.display_phone_number_normalized}, customer_id = ${c.customer_id},
            inbound_processing_enabled = ${c.inbound_processing_enabled}, access_token = ${Redacted.value(c.access_token)},
            webhook_verify_token = ${reveal(c.webhook_verify_token)}, app_secret = ${reveal(c.app_secret)},
            webhook_destination_url = ${reveal(c.webhook_destination_url)}, facts = ${jsonb(c.facts)},
            refreshed_at = ${c.refreshed_at}, webhook_verified_at = ${c.webhook_verified_at}, updated_at = ${c.updated_at}
          WHERE project_id = ${c.project_id} AND id = ${c.id} AND deleted_at IS NULL
          RETURNING *`
        return yield* signal(first(rows, toConfig))
      }, Effect.catchTag("SqlError", configDuplicates)),

      markDeleted: Effect.fnUntraced(function*(projectId: string, id: string, at: string) {
        const rows = yield* sql<ConfigRow>`
          UPDATE msg_configs SET deleted_at = ${at}, updated_at = ${at}
          WHERE project_id = ${projectId} AND id = ${id} AND deleted_at IS NULL
          RETURNING *`
        return yield* signal(first(rows, toConfig))
      }, Effect.orDie),

      changes: changeSignals(pg, CONFIG_CHANNEL)
    })
  })
)

// ---------------------------------------------------------------------------------------------
// Contacts

interface ContactRow {
  readonly id: string
  readonly project_id: string
  readonly wa_id: string | null
  readonly business_scoped_user_id: string | null
  readonly parent_business_scoped_user_id: string | null
  readonly username: string | null
  readonly profile_name: string | null
  readonly created_at: Date
  readonly updated_at: Date
}

const toContact = (row: ContactRow): ContactRecord => ({
  id: row.id,
  project_id: row.project_id,
  wa_id: row.wa_id,
  business_scoped_user_id: row.business_scoped_user_id,
  parent_business_scoped_user_id: row.parent_business_scoped_user_id,
  username: row.username,
  profile_name: row.profile_name,
  created_at: iso(row.created_at),
  updated_at: iso(row.updated_at)
})

export const layerContactsRepo = Layer.effect(
  ContactsRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const later = deferred(sql)
    const find = (condition: Fragment) =>
      Effect.map(sql<ContactRow>`SELECT * FROM msg_contacts WHERE ${condition}`, (rows) => rows.map(toContact))

    const insertMany = Effect.fnUntraced(function*(contacts: ReadonlyArray<ContactRecord>) {
      if (contacts.length === 0) return
      const names = columnNames(sql, CONTACT_COLUMNS)
      yield* later(sql`INSERT INTO msg_contacts (${names}) SELECT ${names} FROM ${columnRows(sql, contacts, CONTACT_COLUMNS)}`)
    }, Effect.orDie)

    const findByWaIds = Effect.fnUntraced(function*(projectId: string, waIds: ReadonlyArray<string>) {
      if (waIds.length === 0) return []
      return yield* find(sql`project_id = ${projectId} AND wa_id = ANY(${waIds})`)
    }, Effect.orDie)

    return ContactsRepo.of({
      insert: (c: ContactRecord) => insertMany([c]),
      insertMany,

      findById: Effect.fnUntraced(function*(projectId: string, id: string) {
        return Option.fromNullishOr((yield* find(sql`project_id = ${projectId} AND id = ${id}`))[0])
      }, Effect.orDie),

      findByWaId: (projectId: string, waId: string) =>
        Effect.map(findByWaIds(projectId, [waId]), (found) => Option.fromNullishOr(found[0])),
      findByWaIds,

      findByUserId: Effect.fnUntraced(function*(projectId: string, userId: string) {
        // The contact's own id wins over a parent id that happens to match.
        const rows = yield* sql<ContactRow>`
          SELECT * FROM msg_contacts
          WHERE project_id = ${projectId}
            AND (business_scoped_user_id = ${userId} OR parent_business_scoped_user_id = ${userId})
          ORDER BY (business_scoped_user_id = ${userId}) DESC NULLS LAST, created_at, id
          LIMIT 1`
        return first(rows, toContact)
      }, Effect.orDie),

      update: Effect.fnUntraced(function*(c: ContactRecord) {
        yield* sql`
          UPDATE msg_contacts SET
            wa_id = ${c.wa_id}, business_scoped_user_id = ${c.business_scoped_user_id},
            parent_business_scoped_user_id = ${c.parent_business_scoped_user_id}, username = ${c.username},
            profile_name = ${c.profile_name}, updated_at = ${c.updated_at}
          WHERE project_id = ${c.project_id} AND id = ${c.id}`
      }, Effect.orDie),

      list: Effect.fnUntraced(function*(projectId: string, filter: ContactFilter, window: ListWindow) {
        const where = sql.and([
          sql`project_id = ${projectId}`,
          ...(filter.wa_id !== undefined ? [sql`wa_id = ${filter.wa_id}`] : []),
          ...(filter.msg_config_id !== undefined
            ? [sql`id IN (SELECT contact_id FROM msg_conversations WHERE msg_config_id = ${filter.msg_config_id})`]
            : [])
        ])
        return yield* listWindow(sql, "msg_contacts", where, window, toContact, MESSAGING_TOTAL_CAP)
      }, Effect.orDie)
    })
  })
)

// ---------------------------------------------------------------------------------------------
// Conversations

interface ConversationRow {
  readonly id: string
  readonly project_id: string
  readonly msg_config_id: string
  readonly phone_number_id: string
  readonly contact_id: string
  readonly phone_number: string | null
  readonly business_scoped_user_id: string | null
  readonly parent_business_scoped_user_id: string | null
  readonly username: string | null
  readonly contact_name: string | null
  readonly status: ConversationRecord["status"]
  readonly end_reason: ConversationRecord["end_reason"]
  readonly ended_at: Date | null
  readonly last_active_at: Date
  readonly metadata: ConversationRecord["metadata"]
  readonly assigned_user_id: string | null
  readonly messages_count: number
  readonly last_message_id: string | null
  readonly last_message_type: string | null
  readonly last_message_timestamp: string | null
  readonly last_message_text: string | null
  readonly last_inbound_at: Date | null
  readonly last_outbound_at: Date | null
  readonly created_at: Date
  readonly updated_at: Date
}

const toConversation = (row: ConversationRow): ConversationRecord => ({
  id: row.id,
  project_id: row.project_id,
  msg_config_id: row.msg_config_id,
  phone_number_id: row.phone_number_id,
  contact_id: row.contact_id,
  phone_number: row.phone_number,
  business_scoped_user_id: row.business_scoped_user_id,
  parent_business_scoped_user_id: row.parent_business_scoped_user_id,
  username: row.username,
  contact_name: row.contact_name,
  status: row.status,
  end_reason: row.end_reason,
  ended_at: isoOrNull(row.ended_at),
  last_active_at: iso(row.last_active_at),
  metadata: row.metadata,
  assigned_user_id: row.assigned_user_id,
  messages_count: row.messages_count,
  last_message_id: row.last_message_id,
  last_message_type: row.last_message_type,
  last_message_timestamp: row.last_message_timestamp,
  last_message_text: row.last_message_text,
  last_inbound_at: isoOrNull(row.last_inbound_at),
  last_outbound_at: isoOrNull(row.last_outbound_at),
  created_at: iso(row.created_at),
  updated_at: iso(row.updated_at)
})

export const layerConversationsRepo = Layer.effect(
  ConversationsRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const later = deferred(sql)

    const insertMany = Effect.fnUntraced(function*(conversations: ReadonlyArray<ConversationRecord>) {
      if (conversations.length === 0) return
      const names = columnNames(sql, CONVERSATION_COLUMNS)
      yield* later(sql`
        INSERT INTO msg_conversations (${names}) SELECT ${names} FROM ${columnRows(sql, conversations, CONVERSATION_COLUMNS)}`)
    }, Effect.orDie)

    const findByIds = Effect.fnUntraced(function*(projectId: string, ids: ReadonlyArray<string>) {
      if (ids.length === 0) return []
      const rows = yield* sql<ConversationRow>`
        SELECT * FROM msg_conversations WHERE project_id = ${projectId} AND id = ANY(${ids})`
      return rows.map(toConversation)
    }, Effect.orDie)

    const findActiveMany = Effect.fnUntraced(
      function*(pairs: ReadonlyArray<{ readonly msgConfigId: string; readonly contactId: string }>) {
        if (pairs.length === 0) return []
        const rows = yield* sql<ConversationRow>`
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
        return rows.map(toConversation)
      },
      Effect.orDie
    )

    const updateMany = Effect.fnUntraced(function*(conversations: ReadonlyArray<ConversationRecord>) {
      if (conversations.length === 0) return
      // VALUES columns take their types from the casts; untyped parameters would all be text.
      yield* later(sql`
        UPDATE msg_conversations AS c SET
          phone_number = v.phone_number, business_scoped_user_id = v.business_scoped_user_id,
          parent_business_scoped_user_id = v.parent_business_scoped_user_id, username = v.username,
          contact_name = v.contact_name, status = v.status, end_reason = v.end_reason, ended_at = v.ended_at,
          last_active_at = v.last_active_at, metadata = v.metadata, assigned_user_id = v.assigned_user_id,
          messages_count = v.messages_count, last_message_id = v.last_message_id, last_message_type = v.last_message_type,
          last_message_timestamp = v.last_message_timestamp, last_message_text = v.last_message_text,
          last_inbound_at = v.last_inbound_at, last_outbound_at = v.last_outbound_at, updated_at = v.updated_at
        FROM (VALUES ${sql.csv(lastOfEach(conversations).map((c) => sql`(${c.id}, ${c.project_id}, ${c.phone_number},
          ${c.business_scoped_user_id}, ${c.parent_business_scoped_user_id}, ${c.username}, ${c.contact_name},
          ${c.status}, ${c.end_reason}, ${c.ended_at}::timestamptz, ${c.last_active_at}::timestamptz,
          ${jsonOrNull(c.metadata)}::jsonb, ${c.assigned_user_id}, ${c.messages_count}::integer, ${c.last_message_id},
          ${c.last_message_type}, ${c.last_message_timestamp}, ${c.last_message_text}, ${c.last_inbound_at}::timestamptz,
          ${c.last_outbound_at}::timestamptz, ${c.updated_at}::timestamptz)`))})
          AS v (id, project_id, phone_number, business_scoped_user_id, parent_business_scoped_user_id, username,
            contact_name, status, end_reason, ended_at, last_active_at, metadata, assigned_user_id, messages_count,
            last_message_id, last_message_type, last_message_timestamp, last_message_text, last_inbound_at,
            last_outbound_at, updated_at)
        WHERE c.project_id = v.project_id AND c.id = v.id`)
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
          yield* later(sql`
            UPDATE msg_conversations AS c SET last_message_id = v.network_id, updated_at = v.at
            FROM (VALUES ${sql.csv(updates.map((u) => sql`(${u.projectId}, ${u.id}, ${u.timestamp}, ${u.networkId},
              ${u.at}::timestamptz)`))}) AS v (project_id, id, timestamp, network_id, at)
            WHERE c.project_id = v.project_id AND c.id = v.id AND c.last_message_id IS NULL
              AND c.last_message_timestamp = v.timestamp`)
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
          return yield* listWindow(sql, "msg_conversations", where, window, toConversation, MESSAGING_TOTAL_CAP)
        },
        Effect.orDie
      ),

      listIdle: Effect.fnUntraced(function*(before: string, limit: number) {
        const rows = yield* sql<ConversationRow>`
          SELECT * FROM msg_conversations WHERE status = 'active' AND last_active_at < ${before}::timestamptz
          ORDER BY last_active_at, id LIMIT ${limit}`
        return rows.map(toConversation)
      }, Effect.orDie)
    })
  })
)

// ---------------------------------------------------------------------------------------------
// Messages and status reports

interface MessageRow {
  readonly id: string
  readonly project_id: string
  readonly msg_config_id: string
  readonly phone_number_id: string
  readonly conversation_id: string
  readonly contact_id: string
  readonly network_id: string | null
  readonly direction: MessageRecord["direction"]
  readonly type: string
  readonly timestamp: string
  readonly fields: MessageRecord["fields"]
  readonly status: MessageRecord["status"]
  readonly processing_status: MessageRecord["processing_status"]
  readonly origin: MessageRecord["origin"]
  readonly has_media: boolean
  readonly content: string | null
  readonly transcript: string | null
  readonly media: MessageRecord["media"]
  readonly message_type_data: MessageRecord["message_type_data"]
  readonly statuses: MessageRecord["statuses"]
  readonly ext_data: MessageRecord["ext_data"]
  readonly contact_name: string | null
  readonly phone_number: string | null
  readonly created_at: Date
  readonly updated_at: Date
}

const toMessage = (row: MessageRow): MessageRecord => ({
  id: row.id,
  project_id: row.project_id,
  msg_config_id: row.msg_config_id,
  phone_number_id: row.phone_number_id,
  conversation_id: row.conversation_id,
  contact_id: row.contact_id,
  network_id: row.network_id,
  direction: row.direction,
  type: row.type,
  timestamp: row.timestamp,
  fields: row.fields,
  status: row.status,
  processing_status: row.processing_status,
  origin: row.origin,
  has_media: row.has_media,
  content: row.content,
  transcript: row.transcript,
  media: row.media,
  message_type_data: row.message_type_data,
  statuses: row.statuses,
  ext_data: row.ext_data,
  contact_name: row.contact_name,
  phone_number: row.phone_number,
  created_at: iso(row.created_at),
  updated_at: iso(row.updated_at)
})

interface StatusEventRow {
  readonly phone_number_id: string
  readonly network_id: string
  readonly status: string
  readonly timestamp: string
  readonly raw: unknown
  readonly received_at: Date
}

type StatusKey = Pick<StatusEventRecord, "phone_number_id" | "network_id" | "status" | "timestamp">

const statusKey = (e: StatusKey) => JSON.stringify([e.phone_number_id, e.network_id, e.status, e.timestamp])

const toStatusEvent = (row: StatusEventRow): StatusEventRecord => ({
  phone_number_id: row.phone_number_id,
  network_id: row.network_id,
  status: row.status,
  timestamp: row.timestamp,
  raw: row.raw,
  received_at: iso(row.received_at)
})

export const layerMessagesRepo = Layer.effect(
  MessagesRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const later = deferred(sql)

    const insertMany = Effect.fnUntraced(function*(messages: ReadonlyArray<MessageRecord>) {
      if (messages.length === 0) return []
      // Duplicates of a network message, stored or earlier in the same call, meet on the partial unique index
      // and insert nothing.
      const names = columnNames(sql, MESSAGE_COLUMNS)
      const insert = sql<{ readonly id: string }>`
        INSERT INTO msg_messages (${names})
        SELECT ${names} FROM ${columnRows(sql, messages, MESSAGE_COLUMNS)} ORDER BY r.ord
        ON CONFLICT (phone_number_id, network_id) WHERE network_id IS NOT NULL DO NOTHING
        RETURNING id`
      // Without network ids nothing can meet: every row is stored, and nobody needs to wait for the answer.
      if (messages.every((m) => m.network_id === null)) {
        yield* later(insert)
        return messages.map(() => true)
      }
      const stored = new Set((yield* insert).map((r) => r.id))
      return messages.map((m) => stored.has(m.id))
    }, Effect.orDie)

    const findByNetworkIds = Effect.fnUntraced(
      function*(phoneNumberId: string, networkIds: ReadonlyArray<string>) {
        if (networkIds.length === 0) return []
        const rows = yield* sql<MessageRow>`
          SELECT * FROM msg_messages WHERE phone_number_id = ${phoneNumberId} AND network_id = ANY(${networkIds})`
        return rows.map(toMessage)
      },
      Effect.orDie
    )

    const updateMany = Effect.fnUntraced(function*(messages: ReadonlyArray<MessageRecord>) {
      if (messages.length === 0) return
      // VALUES columns take their types from the casts; untyped parameters would all be text.
      yield* later(sql`
        UPDATE msg_messages AS m SET
          network_id = v.network_id, type = v.type, timestamp = v.timestamp, fields = v.fields, status = v.status,
          processing_status = v.processing_status, origin = v.origin, has_media = v.has_media, content = v.content,
          transcript = v.transcript, media = v.media, message_type_data = v.message_type_data, statuses = v.statuses,
          ext_data = v.ext_data, contact_name = v.contact_name, phone_number = v.phone_number, updated_at = v.updated_at
        FROM (VALUES ${sql.csv(lastOfEach(messages).map((m) => sql`(${m.id}, ${m.project_id}, ${m.network_id}, ${m.type},
          ${m.timestamp}, ${jsonb(m.fields)}::jsonb, ${m.status}, ${m.processing_status}, ${m.origin},
          ${m.has_media}::boolean, ${m.content}, ${m.transcript}, ${jsonOrNull(m.media)}::jsonb,
          ${jsonOrNull(m.message_type_data)}::jsonb, ${jsonb(m.statuses)}::jsonb, ${jsonb(m.ext_data)}::jsonb,
          ${m.contact_name}, ${m.phone_number}, ${m.updated_at}::timestamptz)`))})
          AS v (id, project_id, network_id, type, timestamp, fields, status, processing_status, origin, has_media,
            content, transcript, media, message_type_data, statuses, ext_data, contact_name, phone_number, updated_at)
        WHERE m.project_id = v.project_id AND m.id = v.id`)
    }, Effect.orDie)

    return MessagesRepo.of({
      insert: (m: MessageRecord) => Effect.map(insertMany([m]), (stored) => stored[0]!),
      insertMany,

      findById: Effect.fnUntraced(function*(projectId: string, id: string) {
        const rows = yield* sql<MessageRow>`SELECT * FROM msg_messages WHERE project_id = ${projectId} AND id = ${id}`
        return first(rows, toMessage)
      }, Effect.orDie),

      findByNetworkId: (phoneNumberId: string, networkId: string) =>
        Effect.map(findByNetworkIds(phoneNumberId, [networkId]), (found) => Option.fromNullishOr(found[0])),
      findByNetworkIds,

      update: (m: MessageRecord) => updateMany([m]),
      updateMany,

      setStatuses: Effect.fnUntraced(
        function*(updates: Parameters<MessagesRepo["Service"]["setStatuses"]>[0]) {
          if (updates.length === 0) return
          yield* later(sql`
            UPDATE msg_messages AS m SET status = v.status, statuses = v.statuses, updated_at = v.updated_at
            FROM (VALUES ${sql.csv(lastOfEach(updates).map((u) => sql`(${u.project_id}, ${u.id}, ${u.status},
              ${jsonb(u.statuses)}::jsonb, ${u.updated_at}::timestamptz)`))}) AS v (project_id, id, status, statuses, updated_at)
            WHERE m.project_id = v.project_id AND m.id = v.id`)
        },
        Effect.orDie
      ),

      setNetworkIds: Effect.fnUntraced(
        function*(updates: Parameters<MessagesRepo["Service"]["setNetworkIds"]>[0]) {
          if (updates.length === 0) return
          yield* later(sql`
            UPDATE msg_messages AS m SET network_id = v.network_id, updated_at = v.at
            FROM (VALUES ${sql.csv(updates.map((u) => sql`(${u.projectId}, ${u.id}, ${u.networkId}, ${u.at}::timestamptz)`))})
              AS v (project_id, id, network_id, at)
            WHERE m.project_id = v.project_id AND m.id = v.id`)
        },
        Effect.orDie
      ),

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
        return yield* listWindow(sql, "msg_messages", where, window, toMessage, MESSAGING_TOTAL_CAP)
      }, Effect.orDie),

      recordStatuses: Effect.fnUntraced(function*(events: ReadonlyArray<StatusEventRecord>) {
        if (events.length === 0) return []
        // `seq` is drawn in the order given, so arrival order holds within the call; a report repeated in it
        // meets the first on the primary key.
        const names = columnNames(sql, STATUS_EVENT_COLUMNS)
        const rows = yield* sql<StatusKey>`
          INSERT INTO msg_status_events (${names})
          SELECT ${names} FROM ${columnRows(sql, events, STATUS_EVENT_COLUMNS)} ORDER BY r.ord
          ON CONFLICT DO NOTHING
          RETURNING phone_number_id, network_id, status, timestamp`
        // Only the first of repeats in the call is the new one.
        const fresh = new Set(rows.map(statusKey))
        return events.map((e) => fresh.delete(statusKey(e)))
      }, Effect.orDie),

      statusEvents: Effect.fnUntraced(
        function*(phoneNumberId: string, networkIds: ReadonlyArray<string>) {
          if (networkIds.length === 0) return []
          const rows = yield* sql<StatusEventRow>`
            SELECT * FROM msg_status_events WHERE phone_number_id = ${phoneNumberId} AND network_id = ANY(${networkIds})
            ORDER BY seq`
          return rows.map(toStatusEvent)
        },
        Effect.orDie
      )
    })
  })
)

// ---------------------------------------------------------------------------------------------
// Media

interface MediaRow {
  readonly id: string
  readonly project_id: string
  readonly msg_config_id: string
  readonly network_media_id: string | null
  readonly filename: string
  readonly content_type: string
  /** bigint: the driver gives it as a string. */
  readonly byte_size: string | number
  readonly sha256: string
  readonly bytes: Uint8Array
  readonly created_at: Date
}

const toMedia = (row: MediaRow): StoredMedia => ({
  id: row.id,
  project_id: row.project_id,
  msg_config_id: row.msg_config_id,
  network_media_id: row.network_media_id,
  filename: row.filename,
  content_type: row.content_type,
  byte_size: Number(row.byte_size),
  sha256: row.sha256,
  bytes: row.bytes,
  created_at: iso(row.created_at)
})

interface MediaUploadRow {
  readonly network_media_id: string
  readonly project_id: string
  readonly msg_config_id: string
  readonly business_account_id: string
  readonly created_at: Date
}

export const layerMediaRepo = Layer.effect(
  MediaRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return MediaRepo.of({
      insert: Effect.fnUntraced(function*(m: StoredMedia) {
        yield* sql`
          INSERT INTO msg_media (id, project_id, msg_config_id, network_media_id, filename, content_type, byte_size, sha256,
            bytes, created_at)
          VALUES (${m.id}, ${m.project_id}, ${m.msg_config_id}, ${m.network_media_id}, ${m.filename}, ${m.content_type},
            ${m.byte_size}, ${m.sha256}, ${m.bytes}, ${m.created_at})`
      }, Effect.orDie),

      find: Effect.fnUntraced(function*(projectId: string, id: string) {
        const rows = yield* sql<MediaRow>`SELECT * FROM msg_media WHERE project_id = ${projectId} AND id = ${id}`
        return first(rows, toMedia)
      }, Effect.orDie),

      delete: Effect.fnUntraced(function*(projectId: string, id: string) {
        const rows = yield* sql`DELETE FROM msg_media WHERE project_id = ${projectId} AND id = ${id} RETURNING id`
        return rows.length > 0
      }, Effect.orDie),

      recordUpload: Effect.fnUntraced(function*(u: MediaUpload) {
        yield* sql`
          INSERT INTO msg_media_uploads (network_media_id, project_id, msg_config_id, business_account_id, created_at)
          VALUES (${u.network_media_id}, ${u.project_id}, ${u.msg_config_id}, ${u.business_account_id}, ${u.created_at})
          ON CONFLICT (project_id, network_media_id) DO UPDATE SET msg_config_id = EXCLUDED.msg_config_id,
            business_account_id = EXCLUDED.business_account_id, created_at = EXCLUDED.created_at`
      }, Effect.orDie),

      findUploads: Effect.fnUntraced(function*(projectId: string, networkMediaIds: ReadonlyArray<string>) {
        if (networkMediaIds.length === 0) return []
        const rows = yield* sql<MediaUploadRow>`
          SELECT * FROM msg_media_uploads WHERE project_id = ${projectId} AND network_media_id = ANY(${networkMediaIds})`
        return rows.map((row): MediaUpload => ({ ...row, created_at: iso(row.created_at) }))
      }, Effect.orDie)
    })
  })
)

// ---------------------------------------------------------------------------------------------
// Inbox and template status reports

interface InboxRow {
  readonly id: string
  readonly msg_config_id: string | null
  readonly body: Uint8Array
  readonly signature: string
  readonly received_at: Date
  readonly fanned_out_at: Date | null
  readonly processed_at: Date | null
}

const toEntry = (row: InboxRow): InboxEntry => ({
  id: row.id,
  msg_config_id: row.msg_config_id,
  body: row.body,
  signature: row.signature,
  received_at: iso(row.received_at),
  fanned_out_at: isoOrNull(row.fanned_out_at),
  processed_at: isoOrNull(row.processed_at)
})

interface TemplateStatusRow {
  readonly id: string
  readonly business_account_id: string
  readonly template_id: string
  readonly template_name: string
  readonly language: string
  readonly event: string
  readonly reason: string | null
  readonly category: string | null
  readonly received_at: Date
}

const toTemplateStatus = (row: TemplateStatusRow): TemplateStatusRecord => ({
  id: row.id,
  business_account_id: row.business_account_id,
  template_id: row.template_id,
  template_name: row.template_name,
  language: row.language,
  event: row.event,
  reason: row.reason,
  category: row.category,
  received_at: iso(row.received_at)
})

export const layerUpstreamInboxRepo = Layer.effect(
  UpstreamInboxRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return UpstreamInboxRepo.of({
      insert: Effect.fnUntraced(function*(e: InboxEntry) {
        yield* sql`
          INSERT INTO msg_upstream_inbox (id, msg_config_id, body, signature, received_at, fanned_out_at, processed_at)
          VALUES (${e.id}, ${e.msg_config_id}, ${e.body}, ${e.signature}, ${e.received_at}, ${e.fanned_out_at},
            ${e.processed_at})`
      }, Effect.orDie),

      find: Effect.fnUntraced(function*(id: string) {
        const rows = yield* sql<InboxRow>`SELECT * FROM msg_upstream_inbox WHERE id = ${id}`
        return first(rows, toEntry)
      }, Effect.orDie),

      markFannedOut: Effect.fnUntraced(function*(id: string, at: string) {
        yield* sql`UPDATE msg_upstream_inbox SET fanned_out_at = ${at} WHERE id = ${id}`
      }, Effect.orDie),

      markProcessed: Effect.fnUntraced(function*(id: string, at: string) {
        yield* sql`UPDATE msg_upstream_inbox SET processed_at = ${at} WHERE id = ${id}`
      }, Effect.orDie),

      listUnprocessed: Effect.fnUntraced(function*(receivedBefore: string, limit: number) {
        const rows = yield* sql<InboxRow>`
          SELECT * FROM msg_upstream_inbox WHERE processed_at IS NULL AND received_at < ${receivedBefore}::timestamptz
          ORDER BY received_at, id LIMIT ${limit}`
        return rows.map(toEntry)
      }, Effect.orDie),

      prune: Effect.fnUntraced(function*(before: string) {
        const rows = yield* sql<{ readonly n: number }>`
          WITH gone AS (DELETE FROM msg_upstream_inbox WHERE processed_at < ${before}::timestamptz RETURNING 1)
          SELECT count(*)::int AS n FROM gone`
        return rows[0]?.n ?? 0
      }, Effect.orDie),

      recordTemplateStatus: Effect.fnUntraced(function*(e: TemplateStatusRecord) {
        yield* sql`
          INSERT INTO msg_template_status_events (id, business_account_id, template_id, template_name, language, event,
            reason, category, received_at)
          VALUES (${e.id}, ${e.business_account_id}, ${e.template_id}, ${e.template_name}, ${e.language}, ${e.event},
            ${e.reason}, ${e.category}, ${e.received_at})`
      }, Effect.orDie),

      listTemplateStatus: Effect.fnUntraced(function*(businessAccountId: string) {
        const rows = yield* sql<TemplateStatusRow>`
          SELECT * FROM msg_template_status_events WHERE business_account_id = ${businessAccountId}
          ORDER BY received_at, id`
        return rows.map(toTemplateStatus)
      }, Effect.orDie)
    })
  })
)

/** Advisory locks held until the transaction ends (`pg_advisory_xact_lock`), keyed by a 64-bit hash of the key. */
export const layerMessagingLocks = Layer.effect(
  MessagingLocks,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const later = deferred(sql)
    const lockAll = Effect.fnUntraced(function*(keys: ReadonlyArray<string>) {
      if (keys.length === 0) return
      // One statement, in ascending hash order: two holders of overlapping sets never wait on each other in a cycle.
      yield* later(sql`
        SELECT pg_advisory_xact_lock(h)
        FROM (SELECT DISTINCT hashtextextended(k, 0) AS h FROM unnest(${keys}::text[]) AS k ORDER BY h) AS s`)
    }, Effect.orDie)
    return MessagingLocks.of({
      lock: (key: string) => lockAll([key]),
      lockAll
    })
  })
)

/** Every messaging port on PostgreSQL. */
export const layerMessagingStorage = Layer.mergeAll(
  layerMessageConfigsRepo,
  layerContactsRepo,
  layerConversationsRepo,
  layerMessagesRepo,
  layerMediaRepo,
  layerUpstreamInboxRepo,
  layerMessagingLocks
)
