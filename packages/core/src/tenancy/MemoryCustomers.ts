/** `CustomersRepo` in memory, with the keys the Postgres schema enforces. */
import { Effect, Layer, Option } from "effect"
import { CustomersRepo } from "./CustomersRepo.ts"
import { Duplicate } from "../ports/StorageError.ts"
import type { Project } from "../projects/Project.ts"
import type { ListWindow } from "../shared/Pagination.ts"
import type { CustomerFilter, CustomerRecord } from "./Customer.ts"
import { MemoryStore, memoryTable } from "../ports/MemoryStore.ts"
import { compareKeys, sliceWindow, timestamp, violation } from "../ports/MemoryRows.ts"

const Customers = memoryTable<CustomerRecord>("customers")
const Projects = memoryTable<Project>("projects")

const stored = (c: CustomerRecord): CustomerRecord => ({
  ...c,
  created_at: timestamp(c.created_at),
  updated_at: timestamp(c.updated_at)
})

const newestFirst = (rows: ReadonlyArray<CustomerRecord>) =>
  [...rows].sort((a, b) => compareKeys({ sortKey: b.created_at, id: b.id }, { sortKey: a.created_at, id: a.id }))

const matches = (filter: CustomerFilter) => (c: CustomerRecord) =>
  (filter.external_customer_id === undefined || c.external_customer_id === filter.external_customer_id) &&
  (filter.name_contains === undefined || c.name.toLowerCase().includes(filter.name_contains.toLowerCase()))

const collides = (rows: ReadonlyArray<CustomerRecord>, c: CustomerRecord) =>
  c.external_customer_id !== null &&
  rows.some((o) => o.id !== c.id && o.project_id === c.project_id && o.external_customer_id === c.external_customer_id)

export const layerMemoryCustomersRepo = Layer.effect(
  CustomersRepo,
  Effect.gen(function*() {
    const store = yield* MemoryStore
    const duplicate = new Duplicate({ field: "external_customer_id" })
    return CustomersRepo.of({
      insert: Effect.fn("CustomersRepo.insert")(function*(customer: CustomerRecord) {
        const ok = yield* store.run((db) => {
          if (db.get(Projects, customer.project_id) === undefined) violation(`no project ${customer.project_id}`)
          if (db.get(Customers, customer.id) !== undefined) violation(`duplicate customer id ${customer.id}`)
          if (collides(db.all(Customers), customer)) return false
          db.put(Customers, customer.id, stored(customer))
          return true
        })
        if (!ok) return yield* duplicate
      }),
      findById: Effect.fn("CustomersRepo.findById")((projectId: string, id: string) =>
        store.run((db) => Option.filter(Option.fromNullishOr(db.get(Customers, id)), (c) => c.project_id === projectId))
      ),
      list: Effect.fn("CustomersRepo.list")((projectId: string, filter: CustomerFilter, window: ListWindow) =>
        store.run((db) =>
          sliceWindow(newestFirst(db.all(Customers).filter((c) => c.project_id === projectId).filter(matches(filter))), window)
        )
      ),
      update: Effect.fn("CustomersRepo.update")(function*(customer: CustomerRecord) {
        const result = yield* store.run((db) => {
          const current = db.get(Customers, customer.id)
          if (current === undefined || current.project_id !== customer.project_id) return Option.none<CustomerRecord>()
          if (collides(db.all(Customers), customer)) return undefined
          const updated = stored({ ...current, name: customer.name, external_customer_id: customer.external_customer_id, updated_at: customer.updated_at })
          db.put(Customers, customer.id, updated)
          return Option.some(updated)
        })
        if (result === undefined) return yield* duplicate
        return result
      }),
      delete: Effect.fn("CustomersRepo.delete")((projectId: string, id: string) =>
        store.run((db) => {
          const current = db.get(Customers, id)
          return current !== undefined && current.project_id === projectId && db.remove(Customers, id)
        })
      )
    })
  })
)
