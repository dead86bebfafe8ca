/** Connected numbers: the Platform API's phone numbers and the older surface's message configs. Translation only. */
import {
  createdCursorKeyOf,
  CurrentPrincipal,
  DisplayNames,
  MediaIngest,
  MessageConfigs,
  NumberHealth,
  ParleyApi,
  resolveWindow,
  toDisplayNameRequest,
  toListBody,
  toMessageConfig,
  toPhoneNumber
} from "@parley/core"
import { Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import { HttpApiBuilder, HttpApiSchema } from "effect/http-api"
import { locationOf } from "./Lists.ts"

export const PhoneNumbersHandlers = HttpApiBuilder.group(
  ParleyApi,
  "phoneNumbers",
  Effect.fn(function*(handlers) {
    const numbers = yield* MessageConfigs
    const health = yield* NumberHealth
    const displayNames = yield* DisplayNames
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
      .handle("health", ({ params, query }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const { rateLimit, report } = yield* health.check(principal, params.phone_number_id, {
            testMessageTo: query.test_message_to
          })
          return HttpApiSchema.withHeaders({
            body: { data: report },
            headers: {
              "x-health-ratelimit-second-limit": String(rateLimit.secondLimit),
              "x-health-ratelimit-second-remaining": String(rateLimit.secondRemaining),
              "x-health-ratelimit-minute-limit": String(rateLimit.minuteLimit),
              "x-health-ratelimit-minute-remaining": String(rateLimit.minuteRemaining)
            }
          })
        }).pipe(
          // Decisions 8.1: the refused window's headers and `Retry-After` go with the refusal.
          Effect.catchTag("HealthRateLimited", (limited) =>
            Effect.succeed(HttpServerResponse.jsonUnsafe({ error: "Rate limit exceeded", message: limited.message }, {
              status: 429,
              headers: {
                "retry-after": String(limited.retryAfterSeconds),
                [`x-health-ratelimit-${limited.window}-limit`]: String(limited.limit),
                [`x-health-ratelimit-${limited.window}-remaining`]: "0"
              }
            })))
        ))
      .handle("requestDisplayName", ({ params, payload }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const request = yield* displayNames.create(principal, params.phone_number_id, payload.display_name_request)
          return { data: toDisplayNameRequest(request) }
        }))
      .handle("listDisplayNameRequests", ({ params, query, request }) =>
        Effect.gen(function*() {
          const window = yield* resolveWindow(query)
          const slice = yield* displayNames.list(yield* CurrentPrincipal, params.phone_number_id, window)
          return toListBody(window, slice, createdCursorKeyOf, toDisplayNameRequest, yield* locationOf(request))
        }))
      .handle("getDisplayNameRequest", ({ params }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          return { data: toDisplayNameRequest(yield* displayNames.get(principal, params.phone_number_id, params.id)) }
        }))
      .handle("cancelDisplayNameRequest", ({ params }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          return { data: toDisplayNameRequest(yield* displayNames.cancel(principal, params.phone_number_id, params.id)) }
        }))
  })
)

export const MsgMediaHandlers = HttpApiBuilder.group(
  ParleyApi,
  "msgMedia",
  Effect.fn(function*(handlers) {
    const media = yield* MediaIngest
    return handlers.handle("ingest", ({ payload }) =>
      Effect.gen(function*() {
        return { data: yield* media.ingest(yield* CurrentPrincipal, payload.media_ingest) }
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
