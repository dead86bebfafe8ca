import { providerModelsRepoConformance } from "@parley/core/testing/conformance"
import { Layer } from "effect"
import { layerStorage } from "../src/Storage.ts"
import { layerTestDatabase } from "./pg.ts"

providerModelsRepoConformance("provider models repo (postgres)", layerStorage.pipe(Layer.provideMerge(layerTestDatabase)))
