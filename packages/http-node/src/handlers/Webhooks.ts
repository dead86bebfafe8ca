/** Webhooks and their delivery log: decode (contract) → one service call → encode (contract). */
import {
  CurrentPrincipal,
  deliveryCursorKeyOf,
  ParleyApi,
  resolveWindow,
  toListBody,
  toMsgWebhook,
  toWebhookDelivery,
  toWebhookDeliveryDetail,
  WebhookDeliveries,
  webhookCursorKeyOf,
  Webhooks
} from "@parley/core"
import { Effect } from "effect"
import type { HttpServerRequest } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { dateFilter, locationOf } from "./Lists.ts"

interface ListQuery {
  readonly url_contains?: string | undefined
  readonly kind?: "ext" | "upstream" | undefined
  readonly active?: "true" | "false" | undefined
  readonly created_after?: string | undefined
  readonly created_before?: string | undefined
  readonly phone_number_id?: string | undefined
}

const webhookFilter = (query: ListQuery) =>
  Effect.gen(function*() {
    return {
      phone_number_id: query.phone_number_id,
      url_contains: query.url_contains,
      kind: query.kind,
      active: query.active === undefined ? undefined : query.active === "true",
      created_after: yield* dateFilter("created_after", query.created_after),
      created_before: yield* dateFilter("created_before", query.created_before)
    }
  })

export const WebhooksHandlers = HttpApiBuilder.group(
  ParleyApi,
  "webhooks",
  Effect.fn(function*(handlers) {
    const webhooks = yield* Webhooks

    const list = (
      query: ListQuery & Parameters<typeof resolveWindow>[0],
      request: HttpServerRequest.HttpServerRequest,
      phoneNumberId?: string
    ) =>
      Effect.gen(function*() {
        const principal = yield* CurrentPrincipal
        const window = yield* resolveWindow(query)
        const scope = phoneNumberId === undefined ? undefined : { phoneNumberId }
        const slice = yield* webhooks.list(principal, yield* webhookFilter(query), window, scope)
        return toListBody(window, slice, webhookCursorKeyOf, toMsgWebhook, yield* locationOf(request))
      })

    return handlers
      .handle("listForNumber", ({ params, query, request }) => list(query, request, params.phone_number_id))
      .handle("createForNumber", ({ params, payload }) =>
        Effect.gen(function*() {
          const scope = { phoneNumberId: params.phone_number_id }
          return { data: toMsgWebhook(yield* webhooks.create(yield* CurrentPrincipal, payload.msg_webhook, scope)) }
        }))
      .handle("getForNumber", ({ params }) =>
        Effect.gen(function*() {
          const scope = { phoneNumberId: params.phone_number_id }
          return { data: toMsgWebhook(yield* webhooks.get(yield* CurrentPrincipal, params.id, scope)) }
        }))
      .handle("updateForNumber", ({ params, payload }) =>
        Effect.gen(function*() {
          const scope = { phoneNumberId: params.phone_number_id }
          return {
            data: toMsgWebhook(yield* webhooks.update(yield* CurrentPrincipal, params.id, payload.msg_webhook, scope))
          }
        }))
      .handle("deleteForNumber", ({ params }) =>
        Effect.gen(function*() {
          yield* webhooks.delete(yield* CurrentPrincipal, params.id, { phoneNumberId: params.phone_number_id })
        }))
      .handle("list", ({ query, request }) => list(query, request))
      .handle("create", ({ payload }) =>
        Effect.gen(function*() {
          return { data: toMsgWebhook(yield* webhooks.create(yield* CurrentPrincipal, payload.msg_webhook)) }
        }))
      .handle("get", ({ params }) =>
        Effect.gen(function*() {
          return { data: toMsgWebhook(yield* webhooks.get(yield* CurrentPrincipal, params.id)) }
        }))
      .handle("update", ({ params, payload }) =>
        Effect.gen(function*() {
          return { data: toMsgWebhook(yield* webhooks.update(yield* CurrentPrincipal, params.id, payload.msg_webhook)) }
        }))
      .handle("delete", ({ params }) =>
        Effect.gen(function*() {
          yield* webhooks.delete(yield* CurrentPrincipal, params.id)
        }))
      .handle("test", ({ params, payload }) =>
        Effect.gen(function*() {
          const eventType = payload?.event_type ?? undefined
          return { data: yield* webhooks.test(yield* CurrentPrincipal, params.id, eventType) }
        }))
  })
)

export const WebhookDeliveriesHandlers = HttpApiBuilder.group(
  ParleyApi,
  "webhookDeliveries",
  Effect.fn(function*(handlers) {
    const deliveries = yield* WebhookDeliveries
    return handlers
      .handle("list", ({ query, request }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const window = yield* resolveWindow(query)
          const filter = {
            status: query.status,
            event: query.event,
            webhook_id: query.webhook_id,
            errors_only: query.errors_only === undefined ? undefined : query.errors_only === "true",
            period: query.period
          }
          const slice = yield* deliveries.list(principal, filter, window)
          return toListBody(window, slice, deliveryCursorKeyOf, toWebhookDelivery, yield* locationOf(request))
        }))
      .handle("get", ({ params }) =>
        Effect.gen(function*() {
          const { attempts, delivery } = yield* deliveries.get(yield* CurrentPrincipal, params.id)
          return { data: toWebhookDeliveryDetail(delivery, attempts) }
        }))
      .handle("retry", ({ params }) =>
        Effect.gen(function*() {
          return { data: toWebhookDelivery(yield* deliveries.retry(yield* CurrentPrincipal, params.id)) }
        }))
  })
)
