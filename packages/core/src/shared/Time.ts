/** Timestamps as the API shows them: ISO 8601 in UTC with milliseconds, read from Effect's `Clock`. */
import { Clock, Effect } from "effect"

export const nowIso: Effect.Effect<string> = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms).toISOString())

/** Normalises any accepted date-time input (any offset) to the stored UTC form; undefined when unparsable. */
export const toIso = (input: string): string | undefined => {
  const ms = Date.parse(input)
  return Number.isNaN(ms) ? undefined : new Date(ms).toISOString()
}
