/** The workflow lifecycle HTTP suite (`lifecycle.support.ts`) on PostgreSQL with the pg-boss queue. */
import { Ids } from "@parley/core"
import { layerFromUrl, layerJobQueue, layerStorage } from "@parley/store-pg"
import { Effect, Layer } from "effect"
import { freshDatabase } from "../../store-pg/test/pg.ts"
import { lifecycleOverHttp } from "./lifecycle.support.ts"

lifecycleOverHttp(
  "PostgreSQL",
  Effect.map(freshDatabase, (url) =>
    Layer.mergeAll(layerStorage, layerJobQueue({ pollingIntervalSeconds: 0.5 }), Ids.layer).pipe(Layer.provideMerge(layerFromUrl(url))))
)
