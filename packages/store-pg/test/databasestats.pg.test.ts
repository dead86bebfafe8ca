import { databaseStatsConformance } from "@parley/core/testing/conformance"
import { Layer } from "effect"
import { layerStorage } from "../src/Storage.ts"
import { layerTestDatabase } from "./pg.ts"

databaseStatsConformance("database stats (postgres)", layerStorage.pipe(Layer.provideMerge(layerTestDatabase)), { holdsConnections: true })
