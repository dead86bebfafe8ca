/** The execution engine's shared suite on memory ports and the network simulator. */
import { Ids } from "../src/shared/Ids.ts"
import { Layer } from "effect"
import { engineConformance } from "../src/testing/conformance/EngineConformance.ts"
import { layerMemoryJobQueue, layerMemoryStorage } from "../src/testing/index.ts"

engineConformance("execution engine (memory)", Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layer))
