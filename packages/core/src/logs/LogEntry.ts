/**
 * Building log entries: every source fills the fields it knows and `logEntry` completes the rest (nulls, the level
 * from the problem flag, the searchable words of the message, the fields and the payload's text).
 */
import { Predicate } from "effect"
import { LOG_TEXT_FIELDS, type LogEntryRecord, type LogLevel, type LogSource, type LogTextField, logWords, MAX_SEARCH_TEXT } from "./LogSearch.ts"

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
// upstream payload would otherwise fail its whole batch of entries. Most text has no surrogate at all: one quick test
// spares it the replacement (an entry is built for every API request).
const SUSPECT = /[\u0000\uD800-\uDFFF]/
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g

const storable = (text: string): string => (SUSPECT.test(text) ? text.replace(UNSTORABLE, "\uFFFD") : text)

/** `value` with every string (keys too) storable. */
const storableJson = (value: unknown): unknown => {
  if (typeof value === "string") return storable(value)
  if (Array.isArray(value)) return value.map(storableJson)
  if (Predicate.isObject(value)) {
    const out: Record<string, unknown> = {}
    for (const key in value) out[storable(key)] = storableJson(value[key])
    return out
  }
  return value
}

/**
 * The string, number and boolean leaves of a JSON value, depth first: its values, not its keys. The keys are the
 * same few names in every entry of a source (`seq`, `direction`, `request_id`): each was a word of every entry, in
 * the GIN index's busiest lists, and finds nothing a source or a filter does not (docs/decisions.md "Log entry cost").
 */
const leaves = (value: unknown, out: Array<string>): void => {
  if (typeof value === "string") out.push(value)
  else if (typeof value === "number" || typeof value === "boolean") out.push(String(value))
  else if (Array.isArray(value)) for (const item of value) leaves(item, out)
  else if (Predicate.isObject(value)) for (const key in value) leaves(value[key], out)
}

/** The words of `parts`, cut at a word boundary once `MAX_SEARCH_TEXT` is reached. */
export const searchTextOf = (parts: ReadonlyArray<string>): string => {
  const text = parts.join(" ")
  const ascii = asciiWords(text)
  if (ascii !== undefined) return ascii
  const words = logWords(text)
  let length = -1
  let count = 0
  while (count < words.length && length + 1 + words[count]!.length <= MAX_SEARCH_TEXT) length += 1 + words[count++]!.length
  return (count === words.length ? words : words.slice(0, count)).join(" ")
}

const isHex = (c: number): boolean => (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46)
const isAsciiWordChar = (c: number): boolean => (c >= 0x30 && c <= 0x39) || ((c | 0x20) >= 0x61 && (c | 0x20) <= 0x7a)

/** Whether a UUID as `logWords` reads one starts at `i` (its 8-4-4-4-12 hex digits, no letter or digit after). */
const isUuidAt = (text: string, i: number): boolean => {
  // Most words are no UUID: the first dash decides at once.
  if (i + 36 > text.length || text.charCodeAt(i + 8) !== 0x2d) return false
  for (let k = 0; k < 36; k++) {
    const c = text.charCodeAt(i + k)
    if (k === 8 || k === 13 || k === 18 || k === 23 ? c !== 0x2d : !isHex(c)) return false
  }
  // A character past 0x7f sends the whole text to `logWords` anyway.
  return i + 36 === text.length || !isAsciiWordChar(text.charCodeAt(i + 36))
}

/**
 * `logWords` of an ASCII text joined by single spaces and cut as `searchTextOf` cuts, written into one buffer
 * instead of a string per word (a status report's entry built ~70 of them: 5.5 of its 8.8 KB); undefined for a text
 * with any other character, which `logWords` reads by Unicode's letters and digits.
 */
const asciiWords = (text: string): string | undefined => {
  const out = Buffer.allocUnsafe(Math.min(text.length, MAX_SEARCH_TEXT + 1))
  let length = 0
  // Where the last whole word written ends: the cut falls there once the limit is passed.
  let wordEnd = 0
  let inWord = false
  // Inside a UUID (`logWords`: one word of its digits) until here: its dashes are skipped, not word ends.
  let uuidEnd = -1
  for (let i = 0; i < text.length; i++) {
    let c = text.charCodeAt(i)
    if (c >= 0x80) return undefined
    if (c === 0x2d && i < uuidEnd) continue
    if (c >= 0x41 && c <= 0x5a) c += 0x20
    const word = (c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39)
    if (word) {
      if (!inWord && isUuidAt(text, i)) uuidEnd = i + 36
      if (!inWord && length > 0) {
        if (length >= MAX_SEARCH_TEXT) return out.toString("latin1", 0, wordEnd)
        out[length++] = 0x20
      }
      if (length >= MAX_SEARCH_TEXT) return out.toString("latin1", 0, wordEnd)
      out[length++] = c
    } else if (inWord) wordEnd = length
    inWord = word
  }
  return out.toString("latin1", 0, length)
}

/** Every text field null: each entry starts as a copy of it, one object of one shape (fields added one by one cost 2.4 KB an entry). */
const NO_TEXT = Object.fromEntries(LOG_TEXT_FIELDS.map((name) => [name, null])) as Record<LogTextField, string | null>

export const logEntry = (input: LogEntryInput): LogEntryRecord => {
  const message = storable(input.message)
  const attributes = storableJson(input.attributes ?? {}) as Readonly<Record<string, unknown>>
  const payload = storableJson(input.payload ?? null)
  const entry: { -readonly [K in keyof LogEntryRecord]: LogEntryRecord[K] } = {
    ...NO_TEXT,
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
    search_text: ""
  }
  const parts = [message]
  for (const name of LOG_TEXT_FIELDS) {
    const value = input[name]
    if (value != null) parts.push(entry[name] = storable(value))
  }
  if (input.response_status != null) parts.push(String(input.response_status))
  leaves(attributes, parts)
  leaves(payload, parts)
  entry.search_text = searchTextOf(parts)
  return entry
}
