/**
 * The searchable log (decisions 4.7): API requests, upstream webhook events,
 * workflow step events and webhook delivery attempts of a project, one entry
 * each, searched by words, window, exact filters and problems, newest first.
 *
 * Words: an entry's `search_text` is its words (runs of letters and digits,
 * lowercased, a UUID one word, `logWords`) joined by single spaces; a query matches an entry
 * holding every one of its words as a whole word. Both adapters compare the
 * same words, so PostgreSQL's full-text search and the memory scan agree.
 */
import { Context, type Effect } from "effect"

export const LOG_SOURCES = ["external_api_log", "msg_webhook_event", "flow_event", "webhook_delivery"] as const
export type LogSource = typeof LOG_SOURCES[number]

/** The event fields of 4.7 held as text (null when the source has none). */
export const LOG_TEXT_FIELDS = [
  "status",
  "resource_type",
  "resource_id",
  "http_method",
  "endpoint",
  "api_key_id",
  "api_key_name",
  "event_type",
  "field",
  "event",
  "message_type",
  "phone_number_id",
  "display_phone_number",
  "flow_name",
  "flow_id",
  "flow_execution_id",
  "flow_event_id",
  "step_identifier",
  "step_type",
  "webhook_id",
  "webhook_url",
  "error_class",
  "error_message"
] as const
export type LogTextField = typeof LOG_TEXT_FIELDS[number]

export type LogLevel = "info" | "warning" | "error"

export type LogEntryRecord =
  & {
    readonly id: string
    readonly project_id: string
    readonly source: LogSource
    readonly occurred_at: string
    readonly ingested_at: string
    readonly level: LogLevel
    /** What `problems_only` finds: a failed request, step, delivery attempt or upstream status. */
    readonly problem: boolean
    readonly message: string
    readonly response_status: number | null
    readonly response_time_ms: number | null
    readonly attributes: Readonly<Record<string, unknown>>
    readonly payload: unknown
    /** The entry's words (`logWords`), at most `MAX_SEARCH_TEXT` characters: what queries and erasure look at. */
    readonly search_text: string
  }
  & { readonly [K in LogTextField]: string | null }

/**
 * Filter keys of the catalogue: each an exact match on the field of the same name, except `endpoint_contains`
 * (the endpoint holds the value, any case) and `response_status` (an integer).
 */
export const LOG_FILTER_KEYS = [
  "flow_execution_id",
  "flow_id",
  "step_identifier",
  "event_type",
  "endpoint_contains",
  "http_method",
  "response_status",
  "api_key_id",
  "phone_number_id",
  "webhook_id",
  "status",
  "resource_id"
] as const
export type LogFilterKey = typeof LOG_FILTER_KEYS[number]

export interface LogFilter {
  readonly key: LogFilterKey
  readonly value: string
}

export interface LogQuery {
  readonly projectId: string
  readonly sources: ReadonlyArray<LogSource>
  /** Inclusive bounds on `occurred_at`. */
  readonly since: string
  readonly until: string
  /** Words every entry found holds (`logWords` of the query); none matches everything. */
  readonly words: ReadonlyArray<string>
  /** All must hold. */
  readonly filters: ReadonlyArray<LogFilter>
  readonly problemsOnly: boolean
  readonly limit: number
  /** Entries strictly older than this (occurred_at, id) key: the previous page's last. */
  readonly after: { readonly occurred_at: string; readonly id: string } | null
}

export interface LogPage {
  /** Newest first by (occurred_at, id). */
  readonly entries: ReadonlyArray<LogEntryRecord>
  readonly hasMore: boolean
}

/** Longest `search_text` kept: the words past it are not searchable (the payload is still stored). */
export const MAX_SEARCH_TEXT = 16_000

/**
 * A UUID as text (8-4-4-4-12 hex digits, lowercased) at a word's start, not followed by a letter or digit: one word of
 * its 32 digits, not five. Ids are searched whole; as five words each UUID put four more keys in the GIN index,
 * three of them near-unique (a UUIDv7's random parts), the index's costliest kind (docs/decisions.md "Log entry cost").
 */
const WORD = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(?![\p{L}\p{N}])|[\p{L}\p{N}]+/gu

/** Lowercased runs of letters and digits, a UUID's 32 digits as one: what the search compares. */
export const logWords = (text: string): ReadonlyArray<string> =>
  (text.toLowerCase().match(WORD) ?? []).map((word) => (word.length === 36 && word[8] === "-" ? word.replaceAll("-", "") : word))

/** A term's words in order, as they would sit in a `search_text`. */
export const mentionOf = (term: string): string => logWords(term).join(" ")

export class LogSearch extends Context.Service<LogSearch, {
  readonly append: (entries: ReadonlyArray<LogEntryRecord>) => Effect.Effect<void>
  readonly search: (query: LogQuery) => Effect.Effect<LogPage>
  /**
   * Deletes the project's entries mentioning any term: its words, in order, inside the entry's `search_text`
   * (a part of a longer number counts), or the term inside the stored payload's JSON, any case. Answers how many.
   */
  readonly eraseMentions: (projectId: string, terms: ReadonlyArray<string>) => Effect.Effect<number>
  /** Deletes up to `limit` entries of any project that occurred strictly before `before`; answers how many. */
  readonly prune: (before: string, limit: number) => Effect.Effect<number>
}>()("@parley/core/ports/LogSearch") {}
