import { Layer } from "effect"
import { broadcastsRepoConformance } from "../src/testing/conformance/index.ts"
import { layerMemoryStorage } from "../src/testing/index.ts"

broadcastsRepoConformance("broadcasts repo (memory)", Layer.fresh(layerMemoryStorage))
