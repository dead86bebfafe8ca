/** Shared translation of list requests: paging parameters in, `data` + `paging`/`meta` (+ headers) out. */
import { dateTimeRefusal, publicUrlOf, PublicUrl, toIso, unprocessable } from "@parley/core"
import { Effect } from "effect"
import type { HttpServerRequest } from "effect/http"

/** The list's public address with the caller's filters, for `paging.next`/`previous` and `Link`. */
export const locationOf = (request: HttpServerRequest.HttpServerRequest) =>
  PublicUrl.useSync((base) => ({ url: publicUrlOf(base, request.url) }))

/**
 * A date-time filter: any ISO 8601 offset accepted, stored UTC form returned; 422 naming the parameter otherwise
 * (also for an instant the store cannot hold, such as `9999-12-31T23:59:59-05:00`: every list's filters pass here).
 */
export const dateFilter = (name: string, value: string | undefined) => {
  if (value === undefined) return Effect.succeed(undefined)
  const iso = toIso(value)
  return iso === undefined
    ? Effect.fail(unprocessable(dateTimeRefusal(name, value) ?? `${name} must be an ISO 8601 date-time`, [{ path: name, message: "invalid date-time" }]))
    : Effect.succeed(iso)
}
