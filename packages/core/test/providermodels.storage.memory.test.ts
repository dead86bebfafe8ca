import { Layer } from "effect"
import { providerModelsRepoConformance } from "../src/testing/conformance/index.ts"
import { layerMemoryStorage } from "../src/MemoryStorage.ts"

providerModelsRepoConformance("provider models repo (memory)", Layer.fresh(layerMemoryStorage))
