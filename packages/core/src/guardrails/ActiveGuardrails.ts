/**
 * Each number's effective guardrail settings (opt-out and opt-in keywords, confirmations, quiet hours, frequency
 * caps), remembered: every send and every inbound message needs them, and they rarely change. A change made by this
 * process is forgotten as soon as it is done (`forget`, called by `Guardrails.putSettings`); one made by any process
 * sharing the store reaches `GuardrailsRepo.changes`, which drops them all; entries also expire as a backstop
 * (`SignalledCache`).
 */
import { Context, Effect, Layer } from "effect"
import * as SignalledCache from "../shared/SignalledCache.ts"
import { type EffectiveSettings, effectiveSettings } from "./Guardrail.ts"
import { GuardrailsRepo } from "./GuardrailsRepo.ts"

export class ActiveGuardrails extends Context.Service<ActiveGuardrails, {
  /** The number's settings over the project's, as a send or an inbound message of the number applies them. */
  readonly settings: (projectId: string, msgConfigId: string) => Effect.Effect<EffectiveSettings>
  /** Drops everything remembered: call it once a change to settings is done. */
  readonly forget: Effect.Effect<void>
}>()("@parley/core/guardrails/ActiveGuardrails") {
  static readonly layer = Layer.effect(
    ActiveGuardrails,
    Effect.gen(function*() {
      const repo = yield* GuardrailsRepo
      const cache = yield* SignalledCache.make({
        // One read of the project's rows serves the number's and the project's settings.
        lookup: (scope: { readonly projectId: string; readonly msgConfigId: string }) =>
          Effect.map(repo.listSettings(scope.projectId), (rows) =>
            effectiveSettings(
              rows.find((r) => r.msg_config_id === null),
              rows.find((r) => r.msg_config_id === scope.msgConfigId)
            )),
        keyOf: (scope) => `${scope.projectId}\u0000${scope.msgConfigId}`,
        changes: repo.changes,
        ttlMs: 60_000,
        max: 10_000
      })
      return ActiveGuardrails.of({
        settings: (projectId, msgConfigId) => cache.get({ projectId, msgConfigId }),
        forget: cache.forget
      })
    })
  )
}
