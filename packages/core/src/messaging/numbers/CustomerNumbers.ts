/** Tenancy's `CustomerNumbers` answered from the stored message configs. */
import { Effect, Layer, Option } from "effect"
import { CustomerNumbers } from "../../tenancy/CustomerNumbers.ts"
import type { ConnectionType } from "../../tenancy/SetupLink.ts"
import type { MessageConfigRecord } from "./MessageConfig.ts"
import { MessageConfigsRepo } from "./MessageConfigsRepo.ts"

/** The customer's live production config whose display number has these digits (a reconnect's target). */
export const findProductionConfig = Effect.fnUntraced(function*(
  configs: MessageConfigsRepo["Service"],
  projectId: string,
  customerId: string,
  digits: string
) {
  for (let page = 1;; page++) {
    const slice = yield* configs.list(projectId, { customer_id: customerId, kind: "production" }, { mode: "page", page, perPage: 100 })
    const found = slice.items.find((c) => c.deleted_at === null && c.display_phone_number_normalized === digits)
    if (found !== undefined) return Option.some(found)
    if (page * 100 >= slice.total) return Option.none<MessageConfigRecord>()
  }
})

/** A production config's connection type: on the business app too (coexistence), or dedicated to the API. */
export const connectionTypeOf = (config: MessageConfigRecord): ConnectionType =>
  config.facts.is_coexistence === true ? "coexistence" : "dedicated"

export const layerCustomerNumbers = Layer.effect(
  CustomerNumbers,
  Effect.gen(function*() {
    const configs = yield* MessageConfigsRepo
    return CustomerNumbers.of({
      anyConnected: (projectId, customerId) =>
        Effect.map(
          configs.list(projectId, { customer_id: customerId }, { mode: "page", page: 1, perPage: 1 }),
          (slice) => slice.total > 0
        ),
      productionConnection: (projectId, customerId, digits) =>
        Effect.map(findProductionConfig(configs, projectId, customerId, digits), Option.map(connectionTypeOf))
    })
  })
)
