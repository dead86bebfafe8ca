/** The template mirror: decode (contract) → one service call → encode (contract). */
import { createdCursorKeyOf, CurrentPrincipal, ParleyApi, resolveWindow, Templates, toListBody, toMsgTemplate } from "@parley/core"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { locationOf } from "./Lists.ts"

export const MsgTemplatesHandlers = HttpApiBuilder.group(
  ParleyApi,
  "msgTemplates",
  Effect.fn(function*(handlers) {
    const templates = yield* Templates
    return handlers
      .handle("list", ({ query, request }) =>
        Effect.gen(function*() {
          const window = yield* resolveWindow(query)
          const slice = yield* templates.list(yield* CurrentPrincipal, {
            phone_number_id: query.phone_number_id,
            business_account_id: query.business_account_id,
            name: query.name,
            language: query.language,
            status: query.status,
            category: query.category
          }, window)
          return toListBody(window, slice, createdCursorKeyOf, toMsgTemplate, yield* locationOf(request))
        }))
      .handle("get", ({ params }) =>
        Effect.gen(function*() {
          return { data: toMsgTemplate(yield* templates.get(yield* CurrentPrincipal, params.id)) }
        }))
  })
)
