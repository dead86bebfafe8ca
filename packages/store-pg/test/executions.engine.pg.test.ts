/** The execution engine's shared suite on PostgreSQL: storage, pg-boss and the simulator's store in one database. */
import { Ids } from "@parley/core"
import { engineConformance } from "@parley/core/testing/conformance"
import { Layer } from "effect"
import { layerJobQueue } from "../src/JobQueue.ts"
import { layerSimulatorStore } from "../src/SimulatorStore.ts"
import { layerStorage } from "../src/Storage.ts"
import { layerTestDatabase } from "./pg.ts"

engineConformance(
  "execution engine (postgres)",
  Layer.mergeAll(layerStorage, layerJobQueue({ pollingIntervalSeconds: 0.2 }), layerSimulatorStore, Ids.layer).pipe(
    Layer.provideMerge(layerTestDatabase)
  )
)
