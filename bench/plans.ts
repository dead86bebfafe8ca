/** What the plan benches (`partitionPlans.ts`, `stepEventPlans.ts`) share: a statement's plan as it ran, and medians. */
import { Data, Effect } from "effect"
import type { SqlClient } from "effect/sql"

/** Ends a transaction whose work was only measured; carries the plan read inside it. */
export class RolledBack extends Data.TaggedError("RolledBack")<{ readonly lines: ReadonlyArray<string> }> {}

export const median = (values: ReadonlyArray<number>) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!

/** The plan of `text` as it ran, in a transaction rolled back: a delete measured deletes nothing for good. */
export const explained = (sql: SqlClient.SqlClient, text: string, params: ReadonlyArray<unknown> = []) =>
  sql.withTransaction(Effect.flatMap(
    sql.unsafe<{ readonly "QUERY PLAN": string }>(`EXPLAIN (ANALYZE, COSTS OFF, SUMMARY ON) ${text}`, params),
    (rows) => Effect.fail(new RolledBack({ lines: rows.map((r) => r["QUERY PLAN"]) }))
  )).pipe(Effect.catch((e) => e instanceof RolledBack ? Effect.succeed(e.lines) : Effect.die(e)))
