import { timePartitionsConformance } from "@parley/core/testing/conformance"
import { Layer } from "effect"
import { layerStorage } from "../src/Storage.ts"
import { layerTestDatabase } from "./pg.ts"

timePartitionsConformance("time partitions (postgres)", layerStorage.pipe(Layer.provideMerge(layerTestDatabase)))
