/**
 * Customers (decisions 2.13, 4.8): the businesses a project connects numbers
 * for. External ids are unique per project; a customer with connected numbers
 * cannot be deleted. Numbers connect to a customer through messaging's
 * `MessageConfigs.connectToCustomer`: customers know nothing of messaging.
 */
import { Context, Effect, Layer, Option } from "effect"
import type { Principal } from "../projects/Projects.ts"
import { CustomersRepo } from "./CustomersRepo.ts"
import { CustomerNumbers } from "./CustomerNumbers.ts"
import { Transactor } from "../ports/Transactor.ts"
import { type NotFound, notFound, type Unprocessable, unprocessable } from "../shared/ApiError.ts"
import { Ids } from "../shared/Ids.ts"
import type { ListSlice, ListWindow } from "../shared/Pagination.ts"
import { nowIso } from "../shared/Time.ts"
import type { CustomerCreateInput, CustomerFilter, CustomerRecord, CustomerUpdateInput } from "./Customer.ts"

const customerNotFound = (id: string) => notFound("Customer", id)
const externalTaken = () =>
  unprocessable("external_customer_id has already been taken", [
    { path: "customer.external_customer_id", message: "has already been taken" }
  ])

const checkName = (name: string) => {
  const trimmed = name.trim()
  return trimmed.length === 0 || trimmed.length > 200
    ? Effect.fail(unprocessable("name must be 1-200 characters", [{ path: "customer.name", message: "must be 1-200 characters" }]))
    : Effect.succeed(trimmed)
}

/** A blank external id is no external id. */
const externalId = (given: string | null | undefined): string | null =>
  given === undefined || given === null || given.trim() === "" ? null : given.trim()

export class Customers extends Context.Service<Customers, {
  readonly create: (principal: Principal, input: CustomerCreateInput) => Effect.Effect<CustomerRecord, Unprocessable>
  readonly list: (principal: Principal, filter: CustomerFilter, window: ListWindow) => Effect.Effect<ListSlice<CustomerRecord>>
  readonly get: (principal: Principal, id: string) => Effect.Effect<CustomerRecord, NotFound>
  /** The project's customer, if any (for the capabilities that name one: inbox scopes, onboarding). */
  readonly find: (projectId: string, id: string) => Effect.Effect<Option.Option<CustomerRecord>>
  readonly update: (
    principal: Principal,
    id: string,
    input: CustomerUpdateInput
  ) => Effect.Effect<CustomerRecord, NotFound | Unprocessable>
  /** 422 while numbers are connected to the customer. */
  readonly delete: (principal: Principal, id: string) => Effect.Effect<void, NotFound | Unprocessable>
}>()("@parley/core/tenancy/Customers") {
  static readonly layer = Layer.effect(
    Customers,
    Effect.gen(function*() {
      const repo = yield* CustomersRepo
      const numbers = yield* CustomerNumbers
      const tx = yield* Transactor
      const ids = yield* Ids

      const find = (projectId: string, id: string) =>
        repo.findById(projectId, id).pipe(
          Effect.flatMap(Option.match({ onNone: () => Effect.fail(customerNotFound(id)), onSome: Effect.succeed }))
        )

      return Customers.of({
        create: Effect.fn("Customers.create")(function*(principal: Principal, input: CustomerCreateInput) {
          const now = yield* nowIso
          const customer: CustomerRecord = {
            id: yield* ids.uuid,
            project_id: principal.project.id,
            name: yield* checkName(input.name),
            external_customer_id: externalId(input.external_customer_id),
            created_at: now,
            updated_at: now
          }
          yield* repo.insert(customer).pipe(Effect.catchTag("Duplicate", () => Effect.fail(externalTaken())))
          return customer
        }),
        list: (principal, filter, window) => repo.list(principal.project.id, filter, window),
        get: (principal, id) => find(principal.project.id, id),
        find: repo.findById,
        update: Effect.fn("Customers.update")(function*(principal: Principal, id: string, input: CustomerUpdateInput) {
          const current = yield* find(principal.project.id, id)
          const next: CustomerRecord = {
            ...current,
            name: input.name !== undefined ? yield* checkName(input.name) : current.name,
            external_customer_id: input.external_customer_id !== undefined
              ? externalId(input.external_customer_id)
              : current.external_customer_id,
            updated_at: yield* nowIso
          }
          const stored = yield* repo.update(next).pipe(Effect.catchTag("Duplicate", () => Effect.fail(externalTaken())))
          return yield* Option.match(stored, { onNone: () => Effect.fail(customerNotFound(id)), onSome: Effect.succeed })
        }),
        delete: Effect.fn("Customers.delete")(function*(principal: Principal, id: string) {
          const projectId = principal.project.id
          yield* tx.withTransaction(Effect.gen(function*() {
            yield* find(projectId, id)
            if (yield* numbers.anyConnected(projectId, id)) {
              return yield* unprocessable("Disconnect the customer's phone numbers before deleting it")
            }
            yield* repo.delete(projectId, id)
          }))
        })
      })
    })
  )
}
