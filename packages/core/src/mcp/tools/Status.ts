/** `status`: who the key is and what the project has (decisions 4.12): project, plan, key name, numbers count. */
import { Effect, Predicate, Schema } from "effect"
import { PhoneNumbersApi } from "../../messaging/numbers/NumbersApi.ts"
import { EventPlans } from "../../events/EventPlans.ts"
import { action, McpCaller, request, type Tool } from "../Action.ts"

export const Status: Tool = {
  name: "status",
  description: "The project this key belongs to, its plan, the key's name and how many numbers are connected.",
  actions: [
    action("status", "The project, its plan, the key's name and the number of connected numbers", Schema.Struct({}), () =>
      Effect.gen(function*() {
        const { principal } = yield* McpCaller
        const plan = yield* EventPlans.use((plans) => plans.get(principal.project.id)).pipe(Effect.orDie)
        // Page mode answers the count (`meta.total_count`) the Platform API gives for the same list.
        const numbers = yield* request(PhoneNumbersApi.endpoints.list, { page: 1, per_page: 1 })
        const count = Predicate.hasProperty(numbers, "meta") && Predicate.hasProperty(numbers.meta, "total_count")
          ? numbers.meta.total_count
          : null
        return {
          project: { id: principal.project.id, name: principal.project.name },
          plan: {
            events_enabled: plan.events_enabled,
            monthly_allowance: plan.monthly_allowance,
            metered_overage: plan.metered_overage,
            retention_days: plan.retention_days,
            period: plan.period,
            used_this_period: plan.used_this_period
          },
          api_key: { name: principal.apiKey.name },
          numbers_count: count
        }
      }))
  ]
}
