/** Broadcasts on both surfaces: decode (contract) → one service call → encode (contract). */
import {
  type BroadcastView,
  Broadcasts,
  CurrentPrincipal,
  pageBody,
  ParleyApi,
  resolvePageWindow,
  toMsgBroadcast,
  toMsgBroadcastRecipient
} from "@parley/core"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { locationOf } from "./Lists.ts"

const render = (v: BroadcastView) => toMsgBroadcast(v.broadcast, v.counts)
const one = (v: BroadcastView) => ({ data: render(v) })

export const MsgBroadcastsHandlers = HttpApiBuilder.group(
  ParleyApi,
  "msgBroadcasts",
  Effect.fn(function*(handlers) {
    const broadcasts = yield* Broadcasts
    return handlers
      .handle("list", ({ query, request }) =>
        Effect.gen(function*() {
          const window = yield* resolvePageWindow(query)
          const filter = { status: query.status, msg_config_id: query.msg_config_id, msg_template_id: query.msg_template_id }
          const slice = yield* broadcasts.list(yield* CurrentPrincipal, filter, window)
          return pageBody(window, slice.total, slice.items.map(render), yield* locationOf(request))
        }))
      .handle("create", ({ payload }) =>
        Effect.map(Effect.flatMap(CurrentPrincipal, (p) => broadcasts.create(p, payload.msg_broadcast)), one))
      .handle("get", ({ params }) => Effect.map(Effect.flatMap(CurrentPrincipal, (p) => broadcasts.get(p, params.id)), one))
      .handle("update", ({ params, payload }) =>
        Effect.map(Effect.flatMap(CurrentPrincipal, (p) => broadcasts.update(p, params.id, payload)), one))
      .handle("send", ({ params }) => Effect.map(Effect.flatMap(CurrentPrincipal, (p) => broadcasts.send(p, params.id)), one))
      .handle("schedule", ({ params, payload }) =>
        Effect.map(Effect.flatMap(CurrentPrincipal, (p) => broadcasts.schedule(p, params.id, payload.scheduled_at)), one))
      .handle("cancel", ({ params }) => Effect.map(Effect.flatMap(CurrentPrincipal, (p) => broadcasts.cancel(p, params.id)), one))
      .handle("addRecipients", ({ params, payload }) =>
        Effect.map(Effect.flatMap(CurrentPrincipal, (p) => broadcasts.addRecipients(p, params.id, payload.recipients)), (data) => ({ data })))
      .handle("listRecipients", ({ params, query, request }) =>
        Effect.gen(function*() {
          const window = yield* resolvePageWindow(query)
          const slice = yield* broadcasts.listRecipients(yield* CurrentPrincipal, params.id, query.status, window)
          return pageBody(window, slice.total, slice.items.map(toMsgBroadcastRecipient), yield* locationOf(request))
        }))
      .handle("clearRecipients", ({ params }) =>
        Effect.map(Effect.flatMap(CurrentPrincipal, (p) => broadcasts.clearRecipients(p, params.id)), one))
  })
)

export const LegacyBroadcastsHandlers = HttpApiBuilder.group(
  ParleyApi,
  "legacyBroadcasts",
  Effect.fn(function*(handlers) {
    const broadcasts = yield* Broadcasts
    return handlers.handle("list", ({ query, request }) =>
      Effect.gen(function*() {
        const window = yield* resolvePageWindow(query)
        const filter = { msg_config_id: query["q[msg_config_id_eq]"], msg_template_id: query["q[msg_template_id_eq]"] }
        const slice = yield* broadcasts.list(yield* CurrentPrincipal, filter, window)
        return pageBody(window, slice.total, slice.items.map(render), yield* locationOf(request))
      }))
  })
)
