/** Guardrails (opt-outs, settings, contacts' time zones): decode (contract) → one service call → encode. */
import { CurrentPrincipal, Guardrails, OptOuts, ParleyApi, pageBody, resolvePageWindow, toGuardrailSettings, toOptOut } from "@parley/core"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { locationOf } from "./Lists.ts"

export const GuardrailsHandlers = HttpApiBuilder.group(
  ParleyApi,
  "guardrails",
  Effect.fn(function*(handlers) {
    const optOuts = yield* OptOuts
    const guardrails = yield* Guardrails
    return handlers
      .handle("listOptOuts", ({ query, request }) =>
        Effect.gen(function*() {
          const window = yield* resolvePageWindow(query)
          const principal = yield* CurrentPrincipal
          const slice = yield* optOuts.list(principal.project.id, { msg_config_id: query.msg_config_id, phone_number: query.phone_number }, window)
          return pageBody(window, slice.total, slice.items.map(toOptOut), yield* locationOf(request))
        }))
      .handle("addOptOut", ({ payload }) =>
        Effect.gen(function*() {
          return { data: toOptOut(yield* optOuts.add((yield* CurrentPrincipal).project.id, payload.opt_out)) }
        }))
      .handle("removeOptOut", ({ params }) =>
        Effect.gen(function*() {
          yield* optOuts.remove((yield* CurrentPrincipal).project.id, params.id)
        }))
      .handle("listSettings", () =>
        Effect.gen(function*() {
          return { data: (yield* guardrails.listSettings((yield* CurrentPrincipal).project.id)).map(toGuardrailSettings) }
        }))
      .handle("putSettings", ({ payload }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          return { data: toGuardrailSettings(yield* guardrails.putSettings(principal.project.id, payload.msg_config_id ?? null, payload.guardrails)) }
        }))
      .handle("setTimeZone", ({ params, payload }) =>
        Effect.gen(function*() {
          yield* guardrails.setTimeZone((yield* CurrentPrincipal).project.id, params.phone_number, payload.time_zone)
        }))
      .handle("clearTimeZone", ({ params }) =>
        Effect.gen(function*() {
          yield* guardrails.clearTimeZone((yield* CurrentPrincipal).project.id, params.phone_number)
        }))
  })
)
