import { storageConformance } from "../src/testing/conformance/index.ts"
import { layerMemoryStorage } from "../src/testing/index.ts"

storageConformance("storage (memory)", layerMemoryStorage)
