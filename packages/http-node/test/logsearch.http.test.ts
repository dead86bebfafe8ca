/** The log search HTTP suite (`logsearch.support.ts`) on memory ports. */
import { Ids } from "@parley/core"
import { layerMemoryJobQueue, layerMemoryStorage } from "@parley/core/testing"
import { Effect, Layer } from "effect"
import { logSearchOverHttp } from "./logsearch.support.ts"

logSearchOverHttp("memory", Effect.succeed(Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layer)))
