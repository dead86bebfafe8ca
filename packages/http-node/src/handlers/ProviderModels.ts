/** Provider models: one service call → encode (contract). */
import { ParleyApi, ProviderModels } from "@parley/core"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"

export const ProviderModelsHandlers = HttpApiBuilder.group(
  ParleyApi,
  "providerModels",
  Effect.fn(function*(handlers) {
    const models = yield* ProviderModels
    return handlers.handle("list", () => Effect.map(models.list, (data) => ({ data })))
  })
)
