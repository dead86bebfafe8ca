/**
 * `msg.conversation.inactive` over real HTTP on PostgreSQL (the outbox relay,
 * pg-boss timers and the stores), to a loopback receiver (see
 * `webhooks.inactivity.support.ts`).
 */
import { Ids } from "@parley/core"
import { layerFromUrl, layerJobQueue, layerStorage } from "@parley/store-pg"
import { Effect, Layer } from "effect"
import { freshDatabase } from "../../store-pg/test/pg.ts"
import { inactivityOverHttp } from "./webhooks.inactivity.support.ts"

inactivityOverHttp(
  "PostgreSQL",
  Effect.map(freshDatabase, (url) =>
    Layer.mergeAll(layerStorage, layerJobQueue({ pollingIntervalSeconds: 0.5 }), Ids.layer).pipe(
      Layer.provideMerge(layerFromUrl(url))
    ))
)
