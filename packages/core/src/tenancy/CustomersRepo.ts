/** Storage of customers, scoped by project. */
import { Context, type Effect, type Option } from "effect"
import type { ListSlice, ListWindow } from "../shared/Pagination.ts"
import type { CustomerFilter, CustomerRecord } from "./Customer.ts"
import type { Duplicate } from "../ports/StorageError.ts"

export class CustomersRepo extends Context.Service<CustomersRepo, {
  /** Duplicate("external_customer_id") when the project has a customer with the same one. */
  readonly insert: (customer: CustomerRecord) => Effect.Effect<void, Duplicate>
  readonly findById: (projectId: string, id: string) => Effect.Effect<Option.Option<CustomerRecord>>
  /** Newest first by (created_at, id). */
  readonly list: (
    projectId: string,
    filter: CustomerFilter,
    window: ListWindow
  ) => Effect.Effect<ListSlice<CustomerRecord>>
  /** Replaces name, external id and updated_at; None when gone. */
  readonly update: (customer: CustomerRecord) => Effect.Effect<Option.Option<CustomerRecord>, Duplicate>
  readonly delete: (projectId: string, id: string) => Effect.Effect<boolean>
}>()("@parley/core/ports/CustomersRepo") {}
