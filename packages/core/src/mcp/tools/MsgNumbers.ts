/** `msg_numbers`: the project's connected numbers (decisions 4.8). */
import { Effect, Predicate, Schema } from "effect"
import { MsgConfigsApi, PhoneNumbersApi } from "../../messaging/numbers/NumbersApi.ts"
import { phoneDigits } from "../../messaging/numbers/MessageConfig.ts"
import { CustomersApi } from "../../tenancy/CustomersApi.ts"
import { SetupLinksApi } from "../../tenancy/SetupLinksApi.ts"
import { action, callEndpoint, endpoint, request, type Tool, ToolFailure } from "../Action.ts"

/** Reads the numbers list (100 a page, its limit) until the display number matches. */
const resolve = action(
  "resolve",
  "The `phone_number_id` of a connected number given its display number (`+`, spaces, dashes tolerated)",
  Schema.Struct({ display_phone_number: Schema.String }),
  ({ display_phone_number }) =>
    Effect.gen(function*() {
      const wanted = phoneDigits(display_phone_number)
      if (wanted.length === 0) return yield* new ToolFailure({ error: "display_phone_number must contain digits" })
      let after: string | undefined
      while (true) {
        const page = yield* request(PhoneNumbersApi.endpoints.list, { limit: 100, ...(after !== undefined ? { after } : {}) })
        const items = Predicate.hasProperty(page, "data") && Array.isArray(page.data) ? page.data : []
        const found = items.find((n: unknown) =>
          Predicate.hasProperty(n, "display_phone_number") && Predicate.isString(n.display_phone_number) &&
          phoneDigits(n.display_phone_number) === wanted
        )
        if (found !== undefined) return found
        const next = Predicate.hasProperty(page, "paging") && Predicate.hasProperty(page.paging, "next") &&
            Predicate.isString(page.paging.next)
          ? new URL(page.paging.next).searchParams.get("after") ?? undefined
          : undefined
        if (next === undefined || items.length === 0) {
          return yield* new ToolFailure({ error: `No connected number with display number ${display_phone_number}` })
        }
        after = next
      }
    })
)

const idOf = (record: unknown): string | undefined =>
  Predicate.hasProperty(record, "id") && Predicate.isString(record.id) ? record.id : undefined

/**
 * A setup link for a customer: the one named by `customer_id`, else the one with `external_customer_id`, else a new
 * customer named `customer_name` (with that external id). Answers the customer and the link (`url` to send them).
 */
const startSetup = action(
  "start_setup",
  "Starts connecting a customer's number: finds or creates the customer, then creates its setup link (`url`)",
  Schema.Struct({
    customer_id: Schema.optionalKey(Schema.String),
    external_customer_id: Schema.optionalKey(Schema.String),
    customer_name: Schema.optionalKey(Schema.String),
    setup_link: Schema.optionalKey(Schema.Record(Schema.String, Schema.Unknown))
  }),
  (params) =>
    Effect.gen(function*() {
      const existing = params.customer_id !== undefined
        ? yield* callEndpoint(CustomersApi.endpoints.get, { id: params.customer_id })
        : params.external_customer_id !== undefined
        ? yield* callEndpoint(CustomersApi.endpoints.list, { external_customer_id: params.external_customer_id }).pipe(
          Effect.map((list) => Array.isArray(list) ? list[0] : undefined)
        )
        : undefined
      const customer = existing ?? (params.customer_name === undefined
        ? yield* new ToolFailure({ error: "params.customer_name is required when no customer matches" })
        : yield* callEndpoint(CustomersApi.endpoints.create, {
          customer: {
            name: params.customer_name,
            ...(params.external_customer_id !== undefined ? { external_customer_id: params.external_customer_id } : {})
          }
        }))
      const customerId = idOf(customer)
      if (customerId === undefined) return yield* new ToolFailure({ error: "The customer could not be read" })
      const setupLink = yield* callEndpoint(SetupLinksApi.endpoints.create, {
        customer_id: customerId,
        setup_link: params.setup_link ?? {}
      })
      return { customer, setup_link: setupLink }
    })
)

export const MsgNumbers: Tool = {
  name: "msg_numbers",
  description: "The project's connected phone numbers and their message configs.",
  actions: [
    endpoint("list", PhoneNumbersApi.endpoints.list),
    endpoint("get", PhoneNumbersApi.endpoints.get),
    resolve,
    startSetup,
    endpoint("create", PhoneNumbersApi.endpoints.connect),
    endpoint("update", MsgConfigsApi.endpoints.update),
    endpoint("delete", PhoneNumbersApi.endpoints.disconnect)
  ]
}
