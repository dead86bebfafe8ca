/** `CustomersRepo` on PostgreSQL. */
import { Customer, type CustomerFilter, type CustomerRecord, CustomersRepo, type ListWindow } from "@parley/core"
import { Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { decodeFirst, decodeRows, IsoFromDate, listNewestFirst, mapUnique } from "./Rows.ts"

/** A row of `customers`: the answer's fields, the owner, ISO times. */
const CustomerRow = Schema.Struct({
  ...Customer.fields,
  project_id: Schema.String,
  created_at: IsoFromDate,
  updated_at: IsoFromDate
})
const toCustomers: (rows: ReadonlyArray<unknown>) => Effect.Effect<ReadonlyArray<CustomerRecord>> = decodeRows(
  "customers",
  CustomerRow
)
const firstCustomer = decodeFirst("customers", CustomerRow)

const duplicates = mapUnique({ customers_project_external_key: "external_customer_id" })

export const layerCustomersRepo = Layer.effect(
  CustomersRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const where = (projectId: string, filter: CustomerFilter) =>
      sql.and([
        sql`project_id = ${projectId}`,
        ...(filter.external_customer_id !== undefined ? [sql`external_customer_id = ${filter.external_customer_id}`] : []),
        // strpos, not LIKE: the text is taken literally, % and _ included.
        ...(filter.name_contains !== undefined ? [sql`strpos(lower(name), lower(${filter.name_contains})) > 0`] : [])
      ])

    const list = (projectId: string, filter: CustomerFilter, window: ListWindow) =>
      Effect.orDie(listNewestFirst(sql, "customers", where(projectId, filter), window, toCustomers))

    return CustomersRepo.of({
      insert: Effect.fnUntraced(function*(c: CustomerRecord) {
        yield* sql`
          INSERT INTO customers (id, project_id, name, external_customer_id, created_at, updated_at)
          VALUES (${c.id}, ${c.project_id}, ${c.name}, ${c.external_customer_id}, ${c.created_at}, ${c.updated_at})`
      }, Effect.catchTag("SqlError", duplicates)),
      findById: Effect.fnUntraced(function*(projectId: string, id: string) {
        return yield* firstCustomer(yield* sql`SELECT * FROM customers WHERE project_id = ${projectId} AND id = ${id}`)
      }, Effect.orDie),
      list,
      update: Effect.fnUntraced(function*(c: CustomerRecord) {
        const rows = yield* sql`
          UPDATE customers SET name = ${c.name}, external_customer_id = ${c.external_customer_id}, updated_at = ${c.updated_at}
          WHERE project_id = ${c.project_id} AND id = ${c.id} RETURNING *`
        return yield* firstCustomer(rows)
      }, Effect.catchTag("SqlError", duplicates)),
      delete: Effect.fnUntraced(function*(projectId: string, id: string) {
        const rows = yield* sql`DELETE FROM customers WHERE project_id = ${projectId} AND id = ${id} RETURNING id`
        return rows.length > 0
      }, Effect.orDie)
    })
  })
)
