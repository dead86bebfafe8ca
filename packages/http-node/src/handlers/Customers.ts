/** Customers: decode (contract) → one service call → encode (contract). */
import {
  createdCursorKeyOf,
  CurrentPrincipal,
  Customers,
  ParleyApi,
  resolveWindow,
  toCustomer,
  toListBody
} from "@parley/core"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { locationOf } from "./Lists.ts"

export const CustomersHandlers = HttpApiBuilder.group(
  ParleyApi,
  "customers",
  Effect.fn(function*(handlers) {
    const customers = yield* Customers
    return handlers
      .handle("list", ({ query, request }) =>
        Effect.gen(function*() {
          const window = yield* resolveWindow(query)
          const filter = { external_customer_id: query.external_customer_id, name_contains: query.name_contains }
          const slice = yield* customers.list(yield* CurrentPrincipal, filter, window)
          return toListBody(window, slice, createdCursorKeyOf, toCustomer, yield* locationOf(request))
        }))
      .handle("create", ({ payload }) =>
        Effect.gen(function*() {
          return { data: toCustomer(yield* customers.create(yield* CurrentPrincipal, payload.customer)) }
        }))
      .handle("get", ({ params }) =>
        Effect.gen(function*() {
          return { data: toCustomer(yield* customers.get(yield* CurrentPrincipal, params.id)) }
        }))
      .handle("update", ({ params, payload }) =>
        Effect.gen(function*() {
          return { data: toCustomer(yield* customers.update(yield* CurrentPrincipal, params.id, payload.customer)) }
        }))
      .handle("delete", ({ params }) =>
        Effect.gen(function*() {
          yield* customers.delete(yield* CurrentPrincipal, params.id)
        }))
  })
)
