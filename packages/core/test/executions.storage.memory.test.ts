import { executionsStorageConformance } from "../src/testing/conformance/index.ts"
import { layerMemoryStorage } from "../src/testing/index.ts"

executionsStorageConformance("executions storage (memory)", layerMemoryStorage)
