/**
 * `LogSearch` on PostgreSQL (migrations 0023, 0026, 0036: a partition a day, `TimePartitions.ts`): a batch of entries is one INSERT (one text[] parameter per
 * column: about half again as many rows a second as the rows as one jsonb parameter, and every API request writes
 * one), words are matched by the `tsvector` of the entry's words (GIN index), the window and the keyset pages walk
 * (project_id, occurred_at, id).
 */
import {
  LOG_SOURCES,
  LOG_TEXT_FIELDS,
  type LogEntryRecord,
  type LogFilter,
  type LogQuery,
  LogSearch,
  type LogTextField,
  mentionOf
} from "@parley/core"
import { Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { type Column, columnNames, columnRows, decodeRows, IsoFromDate, JsonRecord } from "./Rows.ts"

/** A row of `log_entries` as a search reads it (every column but `search`), times as ISO text. */
const LogRow = Schema.Struct({
  id: Schema.String,
  project_id: Schema.String,
  source: Schema.Literals(LOG_SOURCES),
  occurred_at: IsoFromDate,
  ingested_at: IsoFromDate,
  level: Schema.Literals(["info", "warning", "error"]),
  problem: Schema.Boolean,
  message: Schema.String,
  ...Object.fromEntries(LOG_TEXT_FIELDS.map((name) => [name, Schema.NullOr(Schema.String)])) as {
    readonly [K in LogTextField]: Schema.NullOr<Schema.String>
  },
  response_status: Schema.NullOr(Schema.Number),
  response_time_ms: Schema.NullOr(Schema.Number),
  attributes: JsonRecord,
  payload: Schema.Unknown,
  search_text: Schema.String
})
const toEntries: (rows: ReadonlyArray<unknown>) => Effect.Effect<ReadonlyArray<LogEntryRecord>> = decodeRows(
  "log_entries",
  LogRow
)

/** Every stored column but `search`: what a search reads; one text[] parameter each (`columnRows`). */
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

/**
 * A word PostgreSQL can hold as a lexeme: under 2,047 bytes (as `to_tsvector` indexed). A UTF-16 unit is at most
 * 3 bytes of UTF-8, so only a long word needs counting.
 */
const indexable = (word: string): boolean => word.length <= 682 || Buffer.byteLength(word) < 2047

/**
 * Whether the text holds a word long enough that `indexable` may refuse it (683 characters or more). Jumps from
 * space to space: the regular expression `/[^ ]{683}/` it replaces was ~4 % of a busy host's CPU on long step logs.
 */
const hasLongWord = (text: string): boolean => {
  if (text.length < 683) return false
  for (let start = 0; ;) {
    const space = text.indexOf(" ", start)
    const end = space === -1 ? text.length : space
    if (end - start >= 683) return true
    if (space === -1) return false
    start = space + 1
  }
}

/**
 * The words of `search_text` that can be lexemes, apart by single spaces, when some cannot (a long word, which
 * `to_tsvector` dropped and `array_to_tsvector` would cut to its length modulo 2,048); null when all can, as good
 * as always: PostgreSQL then makes the vector from `search_text` itself, so the words cross the wire once.
 */
const lexemes = (searchText: string): string | null =>
  hasLongWord(searchText) ? searchText.split(" ").filter(indexable).join(" ") : null

/** The stored columns and the long-word exception the `search` vector is made from: what an INSERT sends. */
const WRITTEN: ReadonlyArray<Column<LogEntryRecord>> = [...COLUMNS, ["lexemes", "text", (e) => lexemes(e.search_text)]]

/**
 * A query word as a `tsquery` operand. A UUID's 32 digits (`logWords`) also match its five parts: entries written
 * before a UUID became one word hold those (until retention removes them, 14 days by default).
 */
const lexemeQuery = (word: string): string =>
  /^[0-9a-f]{32}$/.test(word)
    ? `(${word} | ${word.slice(0, 8)} & ${word.slice(8, 12)} & ${word.slice(12, 16)} & ${word.slice(16, 20)} & ${word.slice(20)})`
    : word

/**
 * A term's words as entries written before a UUID became one word hold them (a UUID as its five parts): erasure
 * finds those too until retention removes them.
 */
const partsMention = (term: string): string => (term.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).join(" ")

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
        // The vector of the entry's words: `search_text` holds only runs of letters and digits apart by single spaces,
        // so its split is the lexemes (`array_to_tsvector` drops the repeated ones). The text's cast to `tsvector`
        // parsed the same words at about 1.4x the CPU, and the host sent them twice (decisions "Log entry cost").
        yield* sql`
          INSERT INTO log_entries (${names}, search)
          SELECT ${names}, array_to_tsvector(string_to_array(coalesce(lexemes, search_text), ' '))
          FROM ${columnRows(sql, entries, WRITTEN)}`
      }, Effect.orDie),

      search: Effect.fnUntraced(function*(query: LogQuery) {
        // Query words are plain lexemes too (`a & b`), matched as the entry's words are stored; a word too long to
        // be a lexeme is looked for in `search_text` instead.
        const indexed = query.words.filter(indexable)
        const conditions = [
          sql`project_id = ${query.projectId}`,
          sql`occurred_at >= ${query.since}::timestamptz`,
          sql`occurred_at <= ${query.until}::timestamptz`,
          sql`source = ANY(${query.sources}::text[])`,
          ...(query.problemsOnly ? [sql`problem`] : []),
          ...(indexed.length > 0 ? [sql`search @@ ${indexed.map(lexemeQuery).join(" & ")}::tsquery`] : []),
          ...query.words.filter((w) => !indexable(w)).map((w) => sql`strpos(' ' || search_text || ' ', ${` ${w} `}) > 0`),
          ...query.filters.map(filter),
          ...(query.after !== null ? [sql`(occurred_at, id) < (${query.after.occurred_at}::timestamptz, ${query.after.id})`] : [])
        ]
        const rows = yield* sql`
          SELECT ${names} FROM log_entries WHERE ${sql.and(conditions)}
          ORDER BY occurred_at DESC, id DESC LIMIT ${query.limit + 1}`
        return { entries: yield* toEntries(rows.slice(0, query.limit)), hasMore: rows.length > query.limit }
      }, Effect.orDie),

      eraseMentions: Effect.fnUntraced(function*(projectId: string, terms: ReadonlyArray<string>) {
        const mentions = [...new Set(terms.flatMap((t) => [mentionOf(t), partsMention(t)]))].filter((m) => m !== "")
        const raw = terms.map((t) => t.toLowerCase()).filter((t) => t.trim() !== "")
        if (mentions.length === 0 && raw.length === 0) return 0
        const rows = yield* sql`
          DELETE FROM log_entries
          WHERE project_id = ${projectId} AND (
            EXISTS (SELECT 1 FROM unnest(${mentions}::text[]) AS m(t) WHERE strpos(search_text, m.t) > 0)
            OR (payload IS NOT NULL AND EXISTS (SELECT 1 FROM unnest(${raw}::text[]) AS m(t) WHERE strpos(lower(payload::text), m.t) > 0))
          )
          RETURNING id`
        return rows.length
      }, Effect.orDie),

      prune: Effect.fnUntraced(function*(before: string, limit: number) {
        // A row's ctid is unique within its partition only (0036): the pair names it. The time bound outside
        // too keeps the DELETE to the partitions it can touch (after retention's drops, the default one).
        const rows = yield* sql`
          DELETE FROM log_entries WHERE occurred_at < ${before}::timestamptz AND (tableoid, ctid) IN (
            SELECT tableoid, ctid FROM log_entries WHERE occurred_at < ${before}::timestamptz LIMIT ${limit}
          )
          RETURNING id`
        return rows.length
      }, Effect.orDie)
    })
  })
)
