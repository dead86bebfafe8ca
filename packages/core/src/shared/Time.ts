/** Timestamps as the API shows them: ISO 8601 in UTC with milliseconds, read from Effect's `Clock`. */
import { Clock, Effect } from "effect"

export const nowIso: Effect.Effect<string> = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms).toISOString())

/**
 * Normalises any accepted date-time input (any offset) to the stored UTC form; undefined when unparsable or outside
 * the years 0001-9999 once in UTC. Beyond them JavaScript writes a six-digit year (`+010000-01-01T...`) that
 * PostgreSQL refuses, so a filter like `9999-12-31T23:59:59-05:00` would fail in the store instead of at the door.
 */
export const toIso = (input: string): string | undefined => {
  const ms = Date.parse(input)
  if (Number.isNaN(ms)) return undefined
  const iso = new Date(ms).toISOString()
  return ISO_RANGE.test(iso) ? iso : undefined
}

/** The stored form within the years 0001-9999. */
const ISO_RANGE = /^(?!0000)\d{4}-/

/**
 * Why `input` cannot be a stored date-time, as an error message naming `name`; undefined when `toIso` takes it.
 * Unparsable text and an instant outside the years 0001-9999 (UTC) are told apart.
 */
export const dateTimeRefusal = (name: string, input: string): string | undefined => {
  const ms = Date.parse(input)
  if (Number.isNaN(ms)) return `${name} must be an ISO 8601 date-time`
  return toIso(input) === undefined ? `${name} must be between 0001-01-01 and 9999-12-31 (UTC)` : undefined
}
