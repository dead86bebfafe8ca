import { eventsStorageConformance } from "../src/testing/conformance/index.ts"
import { layerMemoryStorage } from "../src/testing/index.ts"

eventsStorageConformance("events storage (memory)", layerMemoryStorage)
