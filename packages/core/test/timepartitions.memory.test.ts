import { Layer } from "effect"
import { timePartitionsConformance } from "../src/testing/conformance/index.ts"
import { layerMemoryStorage } from "../src/testing/index.ts"

timePartitionsConformance("time partitions (memory)", Layer.fresh(layerMemoryStorage))
