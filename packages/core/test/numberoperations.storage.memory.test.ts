import { Layer } from "effect"
import { numberOperationsConformance } from "../src/testing/conformance/index.ts"
import { layerMemoryStorage } from "../src/testing/index.ts"

numberOperationsConformance("number operations storage (memory)", Layer.fresh(layerMemoryStorage))
