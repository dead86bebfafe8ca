/**
 * The live config of a network phone number id, remembered: the proxy looks
 * one up per request and ingestion per webhook, and configs rarely change. A
 * change by any process sharing the store (`MessageConfigsRepo.changes`)
 * drops everything remembered; this process's own writes through
 * `forgetting` drop it at once.
 */
import { Context, Effect, Layer, type Option } from "effect"
import { MessageConfigsRepo } from "./MessageConfigsRepo.ts"
import * as SignalledCache from "../../shared/SignalledCache.ts"
import type { MessageConfigRecord } from "./MessageConfig.ts"

export class LiveNumbers extends Context.Service<LiveNumbers, {
  /** `MessageConfigsRepo.findByPhoneNumberId`, remembered. */
  readonly byPhoneNumberId: (phoneNumberId: string) => Effect.Effect<Option.Option<MessageConfigRecord>>
  /** The repository, its writes followed by forgetting what is remembered. */
  readonly forgetting: (repo: MessageConfigsRepo["Service"]) => MessageConfigsRepo["Service"]
}>()("@parley/core/messaging/LiveNumbers") {
  static readonly layer = Layer.effect(
    LiveNumbers,
    Effect.gen(function*() {
      const repo = yield* MessageConfigsRepo
      const cache = yield* SignalledCache.make({
        lookup: repo.findByPhoneNumberId,
        keyOf: (phoneNumberId: string) => phoneNumberId,
        changes: repo.changes,
        ttlMs: 60_000,
        max: 10_000
      })
      return LiveNumbers.of({
        byPhoneNumberId: cache.get,
        forgetting: (inner) => ({
          ...inner,
          insert: (config) => Effect.tap(inner.insert(config), () => cache.forget),
          update: (config) => Effect.tap(inner.update(config), () => cache.forget),
          markDeleted: (projectId, id, at) => Effect.tap(inner.markDeleted(projectId, id, at), () => cache.forget)
        })
      })
    })
  )
}
