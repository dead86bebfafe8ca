/** The older API log list: the principal's project, filters and cursor → `ApiLogs` → encode (contract). */
import { apiLogCursorKeyOf, ApiLogs, CurrentPrincipal, ParleyApi, resolveWindow, toListBody } from "@parley/core"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { locationOf } from "./Lists.ts"

export const ApiLogsHandlers = HttpApiBuilder.group(
  ParleyApi,
  "apiLogs",
  Effect.fn(function*(handlers) {
    const logs = yield* ApiLogs
    return handlers.handle("list", ({ query, request }) =>
      Effect.gen(function*() {
        const principal = yield* CurrentPrincipal
        const window = yield* resolveWindow(query)
        const slice = yield* logs.list(principal.project.id, {
          endpoint: query.endpoint,
          status_code: query.status_code,
          errors_only: query.errors_only === undefined ? undefined : query.errors_only === "true",
          period: query.period
        }, window)
        return toListBody(window, slice, apiLogCursorKeyOf, (r) => r, yield* locationOf(request))
      }))
  })
)
