import { routeLocksConformance } from "../src/testing/conformance/index.ts"
import { layerMemoryStorage } from "../src/testing/index.ts"

routeLocksConformance("route locks (memory)", layerMemoryStorage)
