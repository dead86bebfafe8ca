/** The workflow lifecycle HTTP suite (`lifecycle.support.ts`) on memory ports. */
import { Ids } from "@parley/core"
import { layerMemoryJobQueue, layerMemoryStorage } from "@parley/core/testing"
import { Effect, Layer } from "effect"
import { lifecycleOverHttp } from "./lifecycle.support.ts"

lifecycleOverHttp("memory", Effect.succeed(Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layer)))
