import { functionsStorageConformance } from "../src/testing/conformance/index.ts"
import { layerMemoryStorage } from "../src/testing/index.ts"

functionsStorageConformance("functions storage (memory)", layerMemoryStorage)
