/** The behaviour every `CustomersRepo` adapter owes, written once and run against each adapter. */
import { assert, layer } from "@effect/vitest"
import { Effect, type Layer, Option } from "effect"
import { CustomersRepo } from "../../tenancy/CustomersRepo.ts"
import type { ProjectsRepo } from "../../projects/ProjectsRepo.ts"
import type { CustomerRecord } from "../../tenancy/Customer.ts"
import { at, givenProject, uniqueId } from "./fixtures.ts"

const makeCustomer = (projectId: string, overrides: Partial<CustomerRecord> = {}): CustomerRecord => ({
  id: uniqueId("cus"),
  project_id: projectId,
  name: "Acme",
  external_customer_id: null,
  created_at: at(0),
  updated_at: at(0),
  ...overrides
})

export const customersRepoConformance = <E>(name: string, storage: Layer.Layer<CustomersRepo | ProjectsRepo, E>): void =>
  layer(storage, { excludeTestServices: true })(name, (it) => {
    it.effect("stores, finds, updates and deletes a customer, only within its project", () =>
      Effect.gen(function*() {
        const repo = yield* CustomersRepo
        const a = yield* givenProject()
        const b = yield* givenProject()
        const customer = makeCustomer(a.id, { external_customer_id: "ext-1" })
        yield* repo.insert(customer)
        assert.deepStrictEqual(yield* repo.findById(a.id, customer.id), Option.some(customer))
        assert.isTrue(Option.isNone(yield* repo.findById(b.id, customer.id)))
        const renamed = { ...customer, name: "Acme Ltd", updated_at: at(5) }
        assert.deepStrictEqual(yield* repo.update(renamed), Option.some(renamed))
        assert.isTrue(Option.isNone(yield* repo.update({ ...renamed, project_id: b.id })))
        assert.isFalse(yield* repo.delete(b.id, customer.id))
        assert.isTrue(yield* repo.delete(a.id, customer.id))
        assert.isTrue(Option.isNone(yield* repo.findById(a.id, customer.id)))
      }))

    it.effect("keeps external ids unique per project, not across projects", () =>
      Effect.gen(function*() {
        const repo = yield* CustomersRepo
        const a = yield* givenProject()
        const b = yield* givenProject()
        yield* repo.insert(makeCustomer(a.id, { external_customer_id: "same" }))
        const dup = yield* repo.insert(makeCustomer(a.id, { external_customer_id: "same" })).pipe(Effect.flip)
        assert.strictEqual(dup.field, "external_customer_id")
        yield* repo.insert(makeCustomer(b.id, { external_customer_id: "same" }))
        // Customers without an external id never collide.
        yield* repo.insert(makeCustomer(a.id))
        yield* repo.insert(makeCustomer(a.id))
        const other = makeCustomer(a.id, { external_customer_id: "other" })
        yield* repo.insert(other)
        const clash = yield* repo.update({ ...other, external_customer_id: "same" }).pipe(Effect.flip)
        assert.strictEqual(clash.field, "external_customer_id")
      }))

    it.effect("lists newest first with filters, in both paging modes", () =>
      Effect.gen(function*() {
        const repo = yield* CustomersRepo
        const p = yield* givenProject()
        const c1 = makeCustomer(p.id, { name: "Blue Shop", created_at: at(1), updated_at: at(1), external_customer_id: "b" })
        const c2 = makeCustomer(p.id, { name: "Green Shop", created_at: at(2), updated_at: at(2) })
        const c3 = makeCustomer(p.id, { name: "Red Bakery", created_at: at(3), updated_at: at(3) })
        for (const c of [c1, c2, c3]) yield* repo.insert(c)
        const all = yield* repo.list(p.id, {}, { mode: "cursor", limit: 2 })
        assert.deepStrictEqual(all.items.map((c) => c.id), [c3.id, c2.id])
        assert.isTrue(all.hasMore)
        const next = yield* repo.list(p.id, {}, { mode: "cursor", limit: 2, after: { sortKey: c2.created_at, id: c2.id } })
        assert.deepStrictEqual(next.items.map((c) => c.id), [c1.id])
        assert.isFalse(next.hasMore)
        const shops = yield* repo.list(p.id, { name_contains: "SHOP" }, { mode: "page", page: 1, perPage: 10 })
        assert.deepStrictEqual(shops.items.map((c) => c.id), [c2.id, c1.id])
        assert.strictEqual(shops.total, 2)
        const byExternal = yield* repo.list(p.id, { external_customer_id: "b" }, { mode: "page", page: 1, perPage: 10 })
        assert.deepStrictEqual(byExternal.items.map((c) => c.id), [c1.id])
      }))
  })
