/**
 * Building log entries: every source fills the fields it knows and `logEntry` completes the rest (nulls, the level
 * from the problem flag, the searchable words of the message, the fields and the payload's text).
 */
import { Predicate } from "effect"
import { LOG_TEXT_FIELDS, type LogEntryRecord, type LogLevel, type LogSource, type LogTextField, logWords, MAX_SEARCH_TEXT } from "../ports/LogSearch.ts"

export interface LogEntryInput extends Partial<Record<LogTextField, string | null>> {
  readonly id: string
  readonly project_id: string
  readonly source: LogSource
  readonly occurred_at: string
  readonly ingested_at: string
  readonly problem: boolean
  /** Default: `error` for a problem, else `info`. */
  readonly level?: LogLevel | undefined
  readonly message: string
  readonly response_status?: number | null | undefined
  readonly response_time_ms?: number | null | undefined
  readonly attributes?: Readonly<Record<string, unknown>> | undefined
  readonly payload?: unknown
}

// PostgreSQL stores neither a NUL character nor an unpaired surrogate (in text or jsonb): one such character in an
// upstream payload would otherwise fail its whole batch of entries.
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g

const storable = (text: string): string => text.replace(UNSTORABLE, "\uFFFD")

/** `value` with every string (keys too) storable. */
const storableJson = (value: unknown): unknown => {
  if (typeof value === "string") return storable(value)
  if (Array.isArray(value)) return value.map(storableJson)
  if (Predicate.isObject(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [storable(k), storableJson(v)]))
  return value
}

/** The string and number leaves of a JSON value, depth first. */
const leaves = (value: unknown, out: Array<string>): void => {
  if (typeof value === "string") out.push(value)
  else if (typeof value === "number" || typeof value === "boolean") out.push(String(value))
  else if (Array.isArray(value)) for (const item of value) leaves(item, out)
  else if (Predicate.isObject(value)) {
    for (const [key, item] of Object.entries(value)) {
      out.push(key)
      leaves(item, out)
    }
  }
}

/** The words of `parts`, cut at a word boundary once `MAX_SEARCH_TEXT` is reached. */
export const searchTextOf = (parts: ReadonlyArray<string>): string => {
  let text = ""
  for (const part of parts) {
    for (const word of logWords(part)) {
      if (text.length + word.length + 1 > MAX_SEARCH_TEXT) return text
      text = text === "" ? word : `${text} ${word}`
    }
  }
  return text
}

export const logEntry = (input: LogEntryInput): LogEntryRecord => {
  const fields = Object.fromEntries(
    LOG_TEXT_FIELDS.map((name) => [name, input[name] == null ? null : storable(input[name])])
  ) as Record<LogTextField, string | null>
  const attributes = storableJson(input.attributes ?? {}) as Readonly<Record<string, unknown>>
  const payload = storableJson(input.payload ?? null)
  const message = storable(input.message)
  const parts = [message, ...LOG_TEXT_FIELDS.flatMap((name) => fields[name] ?? [])]
  if (input.response_status != null) parts.push(String(input.response_status))
  leaves(attributes, parts)
  leaves(payload, parts)
  return {
    ...fields,
    id: input.id,
    project_id: input.project_id,
    source: input.source,
    occurred_at: input.occurred_at,
    ingested_at: input.ingested_at,
    level: input.level ?? (input.problem ? "error" : "info"),
    problem: input.problem,
    message,
    response_status: input.response_status ?? null,
    response_time_ms: input.response_time_ms ?? null,
    attributes,
    payload,
    search_text: searchTextOf(parts)
  }
}
