/** `msg_numbers`: the project's connected numbers (decisions 4.8). */
import { Effect, Predicate, Schema } from "effect"
import { MsgConfigsApi, PhoneNumbersApi } from "../../messaging/numbers/NumbersApi.ts"
import { phoneDigits } from "../../messaging/numbers/MessageConfig.ts"
import { action, endpoint, request, type Tool, ToolFailure } from "../Action.ts"

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

export const MsgNumbers: Tool = {
  name: "msg_numbers",
  description: "The project's connected phone numbers and their message configs.",
  actions: [
    endpoint("list", PhoneNumbersApi.endpoints.list),
    endpoint("get", PhoneNumbersApi.endpoints.get),
    resolve,
    endpoint("create", PhoneNumbersApi.endpoints.connect),
    endpoint("update", MsgConfigsApi.endpoints.update),
    endpoint("delete", PhoneNumbersApi.endpoints.disconnect)
  ]
}
