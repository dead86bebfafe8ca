import { messagingStorageConformance } from "../src/testing/conformance/MessagingStorageConformance.ts"
import { layerMemoryStorage } from "../src/testing/index.ts"

messagingStorageConformance("messaging storage (memory)", layerMemoryStorage)
