import { simulatorStoreConformance } from "../src/testing/conformance/SimulatorStoreConformance.ts"
import { layerMemorySimulatorStore } from "../src/testing/index.ts"

simulatorStoreConformance("simulator store (memory)", layerMemorySimulatorStore)
