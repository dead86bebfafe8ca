import { Layer } from "effect"
import { databaseStatsConformance } from "../src/testing/conformance/index.ts"
import { layerMemoryStorage } from "../src/testing/index.ts"

databaseStatsConformance("database stats (memory)", Layer.fresh(layerMemoryStorage), { holdsConnections: false })
