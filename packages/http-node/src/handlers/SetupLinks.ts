/** Setup links on both surfaces: decode (contract) → one service call → encode (contract). */
import {
  CurrentPrincipal,
  ParleyApi,
  pageBody,
  resolvePageWindow,
  type SetupLinkRecord,
  SetupLinks,
  toSetupLink
} from "@parley/core"
import { Clock, Effect } from "effect"
import type { HttpServerRequest } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { locationOf } from "./Lists.ts"

const listWith = (links: SetupLinks["Service"]) =>
({ params, query, request }: {
  readonly params: { readonly customer_id: string }
  readonly query: { readonly page?: string | undefined; readonly per_page?: string | undefined }
  readonly request: HttpServerRequest.HttpServerRequest
}) =>
  Effect.gen(function*() {
    const window = yield* resolvePageWindow(query)
    const slice = yield* links.list(yield* CurrentPrincipal, params.customer_id, window)
    const now = yield* Clock.currentTimeMillis
    return pageBody(window, slice.total, slice.items.map((l) => toSetupLink(l, now)), yield* locationOf(request))
  })

const render = (link: SetupLinkRecord) => Effect.map(Clock.currentTimeMillis, (now) => ({ data: toSetupLink(link, now) }))

export const SetupLinksHandlers = HttpApiBuilder.group(
  ParleyApi,
  "setupLinks",
  Effect.fn(function*(handlers) {
    const links = yield* SetupLinks
    return handlers
      .handle("list", listWith(links))
      .handle("create", ({ params, payload }) =>
        Effect.gen(function*() {
          const created = yield* links.create(yield* CurrentPrincipal, params.customer_id, payload.setup_link)
          const now = yield* Clock.currentTimeMillis
          return { data: toSetupLink(created.link, now, { token: created.token, url: created.url }) }
        }))
      .handle("get", ({ params }) =>
        Effect.gen(function*() {
          return yield* render(yield* links.get(yield* CurrentPrincipal, params.customer_id, params.id))
        }))
      .handle("update", ({ params, payload }) =>
        Effect.gen(function*() {
          return yield* render(yield* links.update(yield* CurrentPrincipal, params.customer_id, params.id, payload.setup_link))
        }))
  })
)

export const LegacySetupLinksHandlers = HttpApiBuilder.group(
  ParleyApi,
  "legacySetupLinks",
  Effect.fn(function*(handlers) {
    return handlers.handle("list", listWith(yield* SetupLinks))
  })
)
