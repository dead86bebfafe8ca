import { simulatorStoreConformance } from "@parley/core/testing/conformance"
import { Layer } from "effect"
import { layerSimulatorStore } from "../src/SimulatorStore.ts"
import { layerTestDatabase } from "./pg.ts"

simulatorStoreConformance("simulator store (postgres)", layerSimulatorStore.pipe(Layer.provide(layerTestDatabase)))
