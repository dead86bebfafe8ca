/**
 * The Postgres adapter of every embed kind's repository (`inbox_embeds` 0022, `workflow_embeds` 0032): one table a
 * kind, the shared columns plus the kind's own (`EmbedTable`), rows decoded with the kind's answer Schema.
 */
import { type EmbedRecordOf, embedColumns, type EmbedsRepo, type EmbedTable, filterEntries, type ListWindow, updatedColumns } from "@parley/core"
import { Effect, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { decodeRows, IsoFromDate, jsonb, listNewestFirst, Nullable } from "./Rows.ts"

/** A row of the kind's table, decoded into the record (the answer's fields, the owner, the token hash, ISO times). */
export const embedRow = <Fields extends Schema.Struct.Fields>(answer: Fields) =>
  Schema.Struct({
    ...answer,
    project_id: Schema.String,
    token_hash: Schema.String,
    expires_at: Nullable(IsoFromDate),
    last_used_at: Nullable(IsoFromDate),
    created_at: IsoFromDate,
    updated_at: IsoFromDate
  })

export const pgEmbedsRepo = <R extends EmbedRecordOf<string>, F extends object>(
  kind: EmbedTable<R>,
  row: Schema.Decoder<R>
) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const table = sql(kind.table)
    const decode = decodeRows(kind.table, row)
    const first = (rows: ReadonlyArray<unknown>) => Effect.map(decode(rows), (records) => Option.fromNullishOr(records[0]))
    const columns = embedColumns(kind)
    const editable = updatedColumns(kind)
    const value = (e: R, column: keyof R & string) =>
      column === "allowed_origins" ? sql`${jsonb(e.allowed_origins)}::jsonb` : sql`${e[column] as string | null}`

    const repo: EmbedsRepo<R, F> = {
      insert: Effect.fnUntraced(function*(e: R) {
        yield* sql`
          INSERT INTO ${table} (${sql.csv(columns.map((column) => sql`${sql(column)}`))})
          VALUES (${sql.csv(columns.map((column) => value(e, column)))})`
      }, Effect.orDie),
      findById: Effect.fnUntraced(function*(projectId: string, id: string) {
        return yield* first(yield* sql`SELECT * FROM ${table} WHERE project_id = ${projectId} AND id = ${id}`)
      }, Effect.orDie),
      findByTokenHash: Effect.fnUntraced(function*(tokenHash: string) {
        return yield* first(yield* sql`SELECT * FROM ${table} WHERE token_hash = ${tokenHash}`)
      }, Effect.orDie),
      list: (projectId: string, filter: F, window: ListWindow) =>
        Effect.orDie(listNewestFirst(
          sql,
          kind.table,
          sql.and([sql`project_id = ${projectId}`, ...filterEntries(filter).map(([column, v]) => sql`${sql(column)} = ${v as string}`)]),
          window,
          decode
        )),
      update: Effect.fnUntraced(function*(e: R) {
        const rows = yield* sql`
          UPDATE ${table} SET ${sql.csv(editable.map((column) => sql`${sql(column)} = ${value(e, column)}`))}
          WHERE project_id = ${e.project_id} AND id = ${e.id} RETURNING *`
        return yield* first(rows)
      }, Effect.orDie),
      touch: Effect.fnUntraced(function*(id: string, at: string) {
        yield* sql`
          UPDATE ${table} SET last_used_at = ${at}::timestamptz
          WHERE id = ${id} AND (last_used_at IS NULL OR last_used_at < ${at}::timestamptz)`
      }, Effect.orDie)
    }
    return repo
  })
