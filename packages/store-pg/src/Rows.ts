/** Row shapes as the PostgreSQL client returns them, and the mapping back to records. */
import { Effect } from "effect"
import type { SqlError } from "effect/sql/SqlError"
import { Duplicate } from "@parley/core"

/** timestamptz comes back as a Date; records carry the ISO form they went in with. */
export const iso = (date: Date): string => date.toISOString()
export const isoOrNull = (date: Date | null): string | null => (date === null ? null : date.toISOString())

/** jsonb parameters travel as text and are parsed by the server, so any JSON value fits. */
export const jsonb = (value: unknown): string => JSON.stringify(value)

/**
 * A unique index the domain can act on becomes `Duplicate`; any other SQL
 * failure is a bug or an outage, so a defect.
 */
export const mapUnique = (fields: Readonly<Record<string, string>>) => (error: SqlError) => {
  if (error.reason._tag === "UniqueViolation") {
    const field = fields[error.reason.constraint]
    if (field !== undefined) return Effect.fail(new Duplicate({ field }))
  }
  return Effect.die(error)
}
