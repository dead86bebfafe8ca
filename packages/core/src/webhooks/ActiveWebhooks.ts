/**
 * The active webhooks of a project or a number, remembered: every domain
 * event webhooks consume needs them, and they rarely change. A change made
 * by this process is forgotten as soon as it is done (`forget`, called by the
 * writers); one made by any process sharing the store reaches
 * `WebhooksRepo.changes`, which drops them all; entries also expire as a
 * backstop.
 */
import { Clock, Context, Effect, Layer, Stream } from "effect"
import { WebhooksRepo } from "../ports/WebhooksRepo.ts"
import type { WebhookRecord } from "./Webhook.ts"

const CACHE_TTL_MS = 60_000
const CACHE_MAX = 10_000

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
      const cache = new Map<string, { readonly webhooks: ReadonlyArray<WebhookRecord>; readonly until: number }>()
      let generation = 0
      const forget = Effect.sync(() => {
        cache.clear()
        generation++
      })
      yield* Effect.forkScoped(Stream.runForEach(repo.changes, () => forget))

      const list = Effect.fn("ActiveWebhooks.list")(function*(projectId: string, phoneNumberId: string | null) {
        const key = `${projectId}\u0000${phoneNumberId ?? ""}`
        const now = yield* Clock.currentTimeMillis
        const cached = cache.get(key)
        if (cached !== undefined && cached.until > now) return cached.webhooks
        const seen = generation
        const webhooks = yield* repo.listActive(projectId, phoneNumberId)
        // A change signalled during the read may not be in it: do not remember it then.
        if (seen === generation) {
          if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value!)
          cache.set(key, { webhooks, until: now + CACHE_TTL_MS })
        }
        return webhooks
      })

      return ActiveWebhooks.of({ list, forget })
    })
  )
}
