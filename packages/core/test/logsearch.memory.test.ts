import { Layer } from "effect"
import { logSearchConformance } from "../src/testing/conformance/index.ts"
import { layerMemoryStorage } from "../src/testing/index.ts"

logSearchConformance("log search (memory)", Layer.fresh(layerMemoryStorage))
