/** Connected numbers: the Platform API's phone numbers and the older surface's message configs. Translation only. */
import {
  createdCursorKeyOf,
  CurrentPrincipal,
  MessageConfigs,
  ParleyApi,
  resolveWindow,
  toListBody,
  toMessageConfig,
  toPhoneNumber
} from "@parley/core"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { locationOf } from "./Lists.ts"

export const PhoneNumbersHandlers = HttpApiBuilder.group(
  ParleyApi,
  "phoneNumbers",
  Effect.fn(function*(handlers) {
    const numbers = yield* MessageConfigs
    return handlers
      .handle("list", ({ query, request }) =>
        Effect.gen(function*() {
          const window = yield* resolveWindow(query)
          const slice = yield* numbers.list(yield* CurrentPrincipal, { customer_id: query.customer_id, kind: query.kind }, window)
          return toListBody(window, slice, createdCursorKeyOf, toPhoneNumber, yield* locationOf(request))
        }))
      .handle("connect", ({ payload }) =>
        Effect.gen(function*() {
          return { data: toPhoneNumber(yield* numbers.connect(yield* CurrentPrincipal, payload.msg_config)) }
        }))
      .handle("connectToCustomer", ({ params, payload }) =>
        Effect.gen(function*() {
          return { data: toPhoneNumber(yield* numbers.connectToCustomer(yield* CurrentPrincipal, params.id, payload.msg_config)) }
        }))
      .handle("get", ({ params }) =>
        Effect.gen(function*() {
          return { data: toPhoneNumber(yield* numbers.get(yield* CurrentPrincipal, params.phone_number_id)) }
        }))
      .handle("disconnect", ({ params }) =>
        Effect.gen(function*() {
          yield* numbers.disconnect(yield* CurrentPrincipal, params.phone_number_id)
        }))
  })
)

export const MsgConfigsHandlers = HttpApiBuilder.group(
  ParleyApi,
  "msgConfigs",
  Effect.fn(function*(handlers) {
    const numbers = yield* MessageConfigs
    return handlers.handle("update", ({ params, payload }) =>
      Effect.gen(function*() {
        return { data: toMessageConfig(yield* numbers.update(yield* CurrentPrincipal, params.id, payload.msg_config)) }
      }))
  })
)
