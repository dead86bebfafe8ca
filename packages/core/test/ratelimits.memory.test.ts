import { Layer } from "effect"
import { rateLimitsConformance } from "../src/testing/conformance/index.ts"
import { layerMemoryStorage } from "../src/testing/index.ts"

rateLimitsConformance("rate limits (memory)", Layer.fresh(layerMemoryStorage))
