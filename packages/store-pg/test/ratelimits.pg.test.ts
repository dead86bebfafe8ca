import { rateLimitsConformance } from "@parley/core/testing/conformance"
import { Layer } from "effect"
import { layerStorage } from "../src/Storage.ts"
import { layerTestDatabase } from "./pg.ts"

rateLimitsConformance("rate limits (postgres)", layerStorage.pipe(Layer.provideMerge(layerTestDatabase)))
