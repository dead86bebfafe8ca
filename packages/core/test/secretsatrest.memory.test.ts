import { layerMemoryStorage } from "../src/testing/index.ts"
import { secretsAtRestConformance } from "../src/testing/conformance/index.ts"

secretsAtRestConformance("secrets at rest (memory)", layerMemoryStorage)
