import { logSearchConformance } from "@parley/core/testing/conformance"
import { Layer } from "effect"
import { layerStorage } from "../src/Storage.ts"
import { layerTestDatabase } from "./pg.ts"

logSearchConformance("log search (postgres)", layerStorage.pipe(Layer.provideMerge(layerTestDatabase)))
