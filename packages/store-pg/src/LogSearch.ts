/**
 * `LogSearch` on PostgreSQL (migration 0023): a batch of entries is one INSERT (one text[] parameter per column:
 * about half again as many rows a second as the rows as one jsonb parameter, and every API request writes one),
 * words are matched by the `tsvector` of `search_text` (GIN index), the window and the keyset pages walk
 * (project_id, occurred_at, id).
 */
import { LOG_TEXT_FIELDS, type LogEntryRecord, type LogFilter, type LogLevel, type LogQuery, LogSearch, type LogSource, mentionOf } from "@parley/core"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { type Column, columnNames, columnRows, iso } from "./Rows.ts"

type LogRow = Omit<LogEntryRecord, "occurred_at" | "ingested_at"> & {
  readonly occurred_at: Date
  readonly ingested_at: Date
}

/** Every stored column but the generated `search`: one text[] parameter each (`columnRows`). */
const COLUMNS: ReadonlyArray<Column<LogEntryRecord>> = [
  ["id", "text", (e) => e.id],
  ["project_id", "text", (e) => e.project_id],
  ["source", "text", (e) => e.source],
  ["occurred_at", "timestamptz", (e) => e.occurred_at],
  ["ingested_at", "timestamptz", (e) => e.ingested_at],
  ["level", "text", (e) => e.level],
  ["problem", "boolean", (e) => e.problem],
  ["message", "text", (e) => e.message],
  ...LOG_TEXT_FIELDS.map((name): Column<LogEntryRecord> => [name, "text", (e) => e[name]]),
  ["response_status", "integer", (e) => e.response_status],
  ["response_time_ms", "integer", (e) => e.response_time_ms],
  ["attributes", "jsonb", (e) => JSON.stringify(e.attributes)],
  ["payload", "jsonb", (e) => (e.payload === null ? null : JSON.stringify(e.payload))],
  ["search_text", "text", (e) => e.search_text]
]

const toEntry = (row: LogRow): LogEntryRecord => {
  const fields = Object.fromEntries(LOG_TEXT_FIELDS.map((name) => [name, row[name]]))
  return {
    ...fields,
    id: row.id,
    project_id: row.project_id,
    source: row.source as LogSource,
    occurred_at: iso(row.occurred_at),
    ingested_at: iso(row.ingested_at),
    level: row.level as LogLevel,
    problem: row.problem,
    message: row.message,
    response_status: row.response_status,
    response_time_ms: row.response_time_ms,
    attributes: row.attributes,
    payload: row.payload,
    search_text: row.search_text
  } as LogEntryRecord
}

export const layerLogSearch = Layer.effect(
  LogSearch,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const names = columnNames(sql, COLUMNS)

    const filter = (f: LogFilter) => {
      switch (f.key) {
        case "endpoint_contains":
          return sql`strpos(lower(endpoint), lower(${f.value})) > 0`
        case "response_status":
          // The service admits only integers here; anything else matches nothing instead of failing the cast.
          return /^-?\d{1,9}$/.test(f.value) ? sql`response_status = ${Number(f.value)}` : sql`false`
        default:
          return sql`${sql(f.key)} = ${f.value}`
      }
    }

    return LogSearch.of({
      append: Effect.fnUntraced(function*(entries: ReadonlyArray<LogEntryRecord>) {
        if (entries.length === 0) return
        yield* sql`
          INSERT INTO log_entries (${names}) SELECT ${names} FROM ${columnRows(sql, entries, COLUMNS)}`
      }, Effect.orDie),

      search: Effect.fnUntraced(function*(query: LogQuery) {
        const conditions = [
          sql`project_id = ${query.projectId}`,
          sql`occurred_at >= ${query.since}::timestamptz`,
          sql`occurred_at <= ${query.until}::timestamptz`,
          sql`source = ANY(${query.sources}::text[])`,
          ...(query.problemsOnly ? [sql`problem`] : []),
          ...(query.words.length > 0 ? [sql`search @@ plainto_tsquery('simple', ${query.words.join(" ")})`] : []),
          ...query.filters.map(filter),
          ...(query.after !== null ? [sql`(occurred_at, id) < (${query.after.occurred_at}::timestamptz, ${query.after.id})`] : [])
        ]
        const rows = yield* sql<LogRow>`
          SELECT ${names} FROM log_entries WHERE ${sql.and(conditions)}
          ORDER BY occurred_at DESC, id DESC LIMIT ${query.limit + 1}`
        return { entries: rows.slice(0, query.limit).map(toEntry), hasMore: rows.length > query.limit }
      }, Effect.orDie),

      eraseMentions: Effect.fnUntraced(function*(projectId: string, terms: ReadonlyArray<string>) {
        const mentions = terms.map(mentionOf).filter((m) => m !== "")
        const raw = terms.map((t) => t.toLowerCase()).filter((t) => t.trim() !== "")
        if (mentions.length === 0 && raw.length === 0) return 0
        const rows = yield* sql<{ readonly id: string }>`
          DELETE FROM log_entries
          WHERE project_id = ${projectId} AND (
            EXISTS (SELECT 1 FROM unnest(${mentions}::text[]) AS m(t) WHERE strpos(search_text, m.t) > 0)
            OR (payload IS NOT NULL AND EXISTS (SELECT 1 FROM unnest(${raw}::text[]) AS m(t) WHERE strpos(lower(payload::text), m.t) > 0))
          )
          RETURNING id`
        return rows.length
      }, Effect.orDie),

      prune: Effect.fnUntraced(function*(before: string, limit: number) {
        const rows = yield* sql<{ readonly id: string }>`
          DELETE FROM log_entries WHERE ctid = ANY(ARRAY(
            SELECT ctid FROM log_entries WHERE occurred_at < ${before}::timestamptz LIMIT ${limit}
          ))
          RETURNING id`
        return rows.length
      }, Effect.orDie)
    })
  })
)
