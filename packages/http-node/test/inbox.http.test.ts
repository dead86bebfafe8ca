/** The inbox embeds HTTP suite (`inbox.support.ts`) on memory ports. */
import { Ids } from "@parley/core"
import { layerMemoryJobQueue, layerMemoryStorage } from "@parley/core/testing"
import { Effect, Layer } from "effect"
import { inboxOverHttp } from "./inbox.support.ts"

inboxOverHttp("memory", Effect.succeed(Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layer)))
