/**
 * The active webhooks of a project or a number, remembered: every domain
 * event webhooks consume needs them, and they rarely change. A change made
 * by this process is forgotten as soon as it is done (`forget`, called by the
 * writers); one made by any process sharing the store reaches
 * `WebhooksRepo.changes`, which drops them all; entries also expire as a
 * backstop (`SignalledCache`).
 */
import { Context, Effect, Layer } from "effect"
import { WebhooksRepo } from "./WebhooksRepo.ts"
import * as SignalledCache from "../shared/SignalledCache.ts"
import type { WebhookRecord } from "./Webhook.ts"

export class ActiveWebhooks extends Context.Service<ActiveWebhooks, {
  /** `WebhooksRepo.listActive`, remembered. */
  readonly list: (projectId: string, phoneNumberId: string | null) => Effect.Effect<ReadonlyArray<WebhookRecord>>
  /** Drops everything remembered: call it once a change to a webhook is done. */
  readonly forget: Effect.Effect<void>
}>()("@parley/core/webhooks/ActiveWebhooks") {
  static readonly layer = Layer.effect(
    ActiveWebhooks,
    Effect.gen(function*() {
      const repo = yield* WebhooksRepo
      const cache = yield* SignalledCache.make({
        lookup: (scope: { readonly projectId: string; readonly phoneNumberId: string | null }) =>
          repo.listActive(scope.projectId, scope.phoneNumberId),
        keyOf: (scope) => `${scope.projectId}\u0000${scope.phoneNumberId ?? ""}`,
        changes: repo.changes,
        ttlMs: 60_000,
        max: 10_000
      })
      return ActiveWebhooks.of({
        list: (projectId, phoneNumberId) => cache.get({ projectId, phoneNumberId }),
        forget: cache.forget
      })
    })
  )
}
