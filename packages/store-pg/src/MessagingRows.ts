/**
 * What the messaging adapters share: their list windows (totals counted up to
 * a cap) and how they write optional json and batches of updates.
 */
import type { ListSlice, ListWindow } from "@parley/core"
import { Effect } from "effect"
import type { SqlClient } from "effect/sql"
import type { Fragment } from "effect/sql/Statement"
import { decodeCount, jsonb } from "./Rows.ts"

type Sql = SqlClient.SqlClient

export const jsonOrNull = (value: unknown): string | null => value === null ? null : jsonb(value)

/** The last of the records sharing an id, as updates applied one after another would leave it. */
export const lastOfEach = <A extends { readonly id: string }>(records: ReadonlyArray<A>): ReadonlyArray<A> => [
  ...new Map(records.map((r) => [r.id, r])).values()
]

/**
 * A list of `table` rows matching `where`, newest first by (created_at, id),
 * through the window; page totals counted up to `cap`.
 */
export const listWindow = <A>(
  sql: Sql,
  table: string,
  where: Fragment,
  window: ListWindow,
  toRecords: (rows: ReadonlyArray<unknown>) => Effect.Effect<ReadonlyArray<A>>,
  cap: number
): Effect.Effect<ListSlice<A>, unknown> =>
  Effect.gen(function*() {
    const from = sql(table)
    if (window.mode === "page") {
      const [{ total }] = yield* decodeCount(
        yield* sql`
        SELECT count(*)::int AS total FROM (SELECT 1 FROM ${from} WHERE ${where} LIMIT ${cap}) capped`
      )
      const rows = yield* sql`
        SELECT * FROM ${from} WHERE ${where}
        ORDER BY created_at DESC, id DESC LIMIT ${window.perPage + 1} OFFSET ${(window.page - 1) * window.perPage}`
      return { items: yield* toRecords(rows.slice(0, window.perPage)), hasMore: rows.length > window.perPage, total }
    }
    const { after, before, limit } = window
    const conditions = [
      where,
      ...(after !== undefined ? [sql`(created_at, id) < (${after.sortKey}::timestamptz, ${after.id})`] : []),
      ...(before !== undefined ? [sql`(created_at, id) > (${before.sortKey}::timestamptz, ${before.id})`] : [])
    ]
    const order = before !== undefined ? sql`created_at ASC, id ASC` : sql`created_at DESC, id DESC`
    const rows = yield* sql`SELECT * FROM ${from} WHERE ${sql.and(conditions)} ORDER BY ${order} LIMIT ${limit + 1}`
    const page = [...yield* toRecords(rows.slice(0, limit))]
    return { items: before !== undefined ? page.reverse() : page, hasMore: rows.length > limit, total: 0 }
  })
