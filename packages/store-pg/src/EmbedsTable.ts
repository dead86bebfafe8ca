/**
 * The reads and the `touch` the embed tables share (`inbox_embeds` 0022, `workflow_embeds` 0032): found by id in a
 * project or by token hash, listed newest first, `last_used_at` moved forward only. Inserts and updates name each
 * table's own columns (in `InboxEmbedsRepo.ts`, `WorkflowEmbedsRepo.ts`).
 */
import type { ListWindow } from "@parley/core"
import { Effect, Option } from "effect"
import type { SqlClient, Statement } from "effect/sql"
import { listNewestFirst } from "./Rows.ts"

export const embedsTable = <R>(
  sql: SqlClient.SqlClient,
  table: string,
  decode: (rows: ReadonlyArray<unknown>) => Effect.Effect<ReadonlyArray<R>>
) => {
  const first = (rows: ReadonlyArray<unknown>) => Effect.map(decode(rows), (records) => Option.fromNullishOr(records[0]))
  return {
    /** The first decoded row of an `UPDATE ... RETURNING *`. */
    first,
    findById: Effect.fnUntraced(function*(projectId: string, id: string) {
      return yield* first(yield* sql`SELECT * FROM ${sql(table)} WHERE project_id = ${projectId} AND id = ${id}`)
    }, Effect.orDie),
    findByTokenHash: Effect.fnUntraced(function*(tokenHash: string) {
      return yield* first(yield* sql`SELECT * FROM ${sql(table)} WHERE token_hash = ${tokenHash}`)
    }, Effect.orDie),
    list: (where: Statement.Fragment, window: ListWindow) =>
      Effect.orDie(listNewestFirst(sql, table, where, window, (row: object) => row)).pipe(
        Effect.flatMap((slice) => Effect.map(decode(slice.items), (items) => ({ ...slice, items })))
      ),
    touch: Effect.fnUntraced(function*(id: string, at: string) {
      yield* sql`
        UPDATE ${sql(table)} SET last_used_at = ${at}::timestamptz
        WHERE id = ${id} AND (last_used_at IS NULL OR last_used_at < ${at}::timestamptz)`
    }, Effect.orDie)
  }
}
