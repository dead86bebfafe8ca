/**
 * The rules an emitted event must meet (spec "Limits", decisions 7.2), with
 * the spec's refusal messages. Pure checks, shared by every way of emitting
 * (API, emit_event node, agent tool, function answer).
 */
import { Effect } from "effect"
import { invalid, unprocessable, type Unprocessable } from "../shared/ApiError.ts"
import type { EventProperties, EventPropertySchema, EventPropertyType, EventPropertyValue } from "./Event.ts"

export const NAME_MAX_CHARACTERS = 128
export const MAX_PROPERTIES = 25
export const PROPERTY_KEY_MAX_CHARACTERS = 64
export const STRING_VALUE_MAX_BYTES = 1024
export const PROPERTIES_MAX_BYTES = 8192
export const FUTURE_TOLERANCE_MS = 5 * 60_000
export const DAY_MS = 86_400_000

const characters = (s: string) => [...s].length
const bytes = (s: string) => new TextEncoder().encode(s).length

/** ISO 8601 date-time with a time and an offset (`Z` or `±hh:mm`); a bare date or local time is ambiguous. */
const ISO_DATE_TIME = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:[Zz]|[+-]\d{2}(?::?\d{2})?)$/

/** 1–128 characters, no uppercase letter (decisions 2.3.13: the dotted snake_case pattern is only recommended). */
export const isEventName = (name: string): boolean =>
  name.trim().length > 0 && characters(name) <= NAME_MAX_CHARACTERS && name === name.toLowerCase()

export const invalidName = () => invalid("name", "must be lowercase, at most 128 characters")

export const checkName = (name: string): Effect.Effect<string, Unprocessable> =>
  isEventName(name) ? Effect.succeed(name) : Effect.fail(invalidName())

export const pendingDeletion = (name: string) => unprocessable(`Event name ${name} is pending deletion`)

const isScalar = (value: unknown): value is EventPropertyValue =>
  value === null || typeof value === "string" || typeof value === "boolean" ||
  (typeof value === "number" && Number.isFinite(value))

/** A flat object of scalars within the limits, or the first refusal in key order. */
export const checkProperties = (
  input: Readonly<Record<string, unknown>> | null | undefined
): Effect.Effect<EventProperties, Unprocessable> => {
  if (input === undefined || input === null) return Effect.succeed({})
  const keys = Object.keys(input)
  if (keys.length > MAX_PROPERTIES) return Effect.fail(invalid("properties", "may contain at most 25 keys"))
  const properties: Record<string, EventPropertyValue> = {}
  for (const key of keys) {
    if (characters(key) > PROPERTY_KEY_MAX_CHARACTERS) {
      return Effect.fail(invalid(`properties.${key}`, "key is longer than 64 characters", `property key ${key} is longer than 64 characters`))
    }
    const value = input[key]
    if (!isScalar(value)) return Effect.fail(invalid(`properties.${key}`, "must be a string, number, boolean or null", `property ${key} must be a string, number, boolean or null`))
    if (typeof value === "string" && bytes(value) > STRING_VALUE_MAX_BYTES) {
      return Effect.fail(invalid(`properties.${key}`, "exceeds 1 KB", `property ${key} exceeds 1 KB`))
    }
    Object.defineProperty(properties, key, { value, enumerable: true, writable: true, configurable: true })
  }
  if (bytes(JSON.stringify(properties)) > PROPERTIES_MAX_BYTES) return Effect.fail(invalid("properties", "exceed 8 KB"))
  return Effect.succeed(properties)
}

/**
 * The occurrence time in stored form: now when absent or blank; otherwise an
 * ISO 8601 date-time at most 5 minutes ahead and inside the retention window.
 */
export const checkOccurredAt = (
  input: string | null | undefined,
  nowMs: number,
  retentionDays: number
): Effect.Effect<string, Unprocessable> => {
  if (input === undefined || input === null || input.trim() === "") return Effect.succeed(new Date(nowMs).toISOString())
  const ms = ISO_DATE_TIME.test(input.trim()) ? Date.parse(input.trim()) : Number.NaN
  if (Number.isNaN(ms)) return Effect.fail(invalid("occurred_at", "must be an ISO 8601 date-time"))
  if (ms > nowMs + FUTURE_TOLERANCE_MS) {
    return Effect.fail(invalid("occurred_at", "cannot be more than 5 minutes in the future"))
  }
  if (ms < nowMs - retentionDays * DAY_MS) {
    return Effect.fail(invalid("occurred_at", "is older than the event retention window"))
  }
  return Effect.succeed(new Date(ms).toISOString())
}

const typeOf = (value: EventPropertyValue): EventPropertyType | undefined =>
  typeof value === "string" ? "string" : typeof value === "number" ? "number" : typeof value === "boolean" ? "boolean" : undefined

/** The schema an auto definition learns from an event: each key's type; null values teach nothing. */
export const inferSchema = (properties: EventProperties): EventPropertySchema => {
  const schema: Record<string, { readonly type: EventPropertyType }> = {}
  for (const [key, value] of Object.entries(properties)) {
    const type = typeOf(value)
    if (type !== undefined) Object.defineProperty(schema, key, { value: { type }, enumerable: true, writable: true, configurable: true })
  }
  return schema
}
