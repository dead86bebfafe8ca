import { executionsStorageConformance } from "@parley/core/testing/conformance"
import { Layer } from "effect"
import { layerStorage } from "../src/Storage.ts"
import { layerTestDatabase } from "./pg.ts"

executionsStorageConformance("executions storage (postgres)", layerStorage.pipe(Layer.provideMerge(layerTestDatabase)))
