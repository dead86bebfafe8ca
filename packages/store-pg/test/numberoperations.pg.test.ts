import { numberOperationsConformance } from "@parley/core/testing/conformance"
import { Layer } from "effect"
import { layerStorage } from "../src/Storage.ts"
import { layerTestDatabase } from "./pg.ts"

numberOperationsConformance("number operations storage (postgres)", layerStorage.pipe(Layer.provideMerge(layerTestDatabase)))
