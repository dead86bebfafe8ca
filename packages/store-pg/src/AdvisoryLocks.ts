/**
 * Locks held until the transaction ends (`pg_advisory_xact_lock`), keyed by a 64-bit hash of a text key: what
 * messaging's `MessagingLocks` and executions' `RouteLocks` answer with. One statement and one hash for both, so a
 * key means one lock whichever port takes it (hosts before `RouteLocks` took route keys through `MessagingLocks`).
 */
import { Effect } from "effect"
import type { SqlClient } from "effect/sql"
import { deferred } from "./Transactor.ts"

/** Holds every key of the set, taken in ascending hash order: two holders of overlapping sets never wait in a cycle. */
export const advisoryLocks = (sql: SqlClient.SqlClient) => {
  const later = deferred(sql)
  return Effect.fnUntraced(function*(keys: ReadonlyArray<string>) {
    if (keys.length === 0) return
    yield* later(sql`
      SELECT pg_advisory_xact_lock(h)
      FROM (SELECT DISTINCT hashtextextended(k, 0) AS h FROM unnest(${keys}::text[]) AS k ORDER BY h) AS s`)
  }, Effect.orDie)
}
