/** Log search: the principal's project and the parameters → `Logs` → encode (contract). */
import { CurrentPrincipal, Logs, ParleyApi } from "@parley/core"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"

const flag = (value: "true" | "false" | undefined) => (value === undefined ? undefined : value === "true")

export const LogSearchHandlers = HttpApiBuilder.group(
  ParleyApi,
  "logSearch",
  Effect.fn(function*(handlers) {
    const logs = yield* Logs
    return handlers
      .handle("search", ({ query }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          return yield* logs.search(principal.project.id, {
            ...query,
            problems_only: flag(query.problems_only),
            errors_only: flag(query.errors_only)
          })
        }))
      .handle("searchPost", ({ payload }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          return yield* logs.search(principal.project.id, payload)
        }))
      .handle("catalog", () => logs.catalog)
  })
)
