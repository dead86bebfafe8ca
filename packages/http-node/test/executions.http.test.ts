/** The executions HTTP suite (`executions.support.ts`) on memory ports. */
import { Ids } from "@parley/core"
import { layerMemoryJobQueue, layerMemoryStorage } from "@parley/core/testing"
import { Effect, Layer } from "effect"
import { executionsOverHttp } from "./executions.support.ts"

executionsOverHttp("memory", Effect.succeed(Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layer)))
