import { Layer } from "effect"
import { layerMemoryProjectsRepo, layerMemoryTransactor, layerMemoryWebhooksStorage, MemoryStore } from "../src/testing/index.ts"
import { webhooksStorageConformance } from "../src/testing/conformance/index.ts"

webhooksStorageConformance(
  "webhooks storage (memory)",
  Layer.mergeAll(layerMemoryTransactor, layerMemoryProjectsRepo, layerMemoryWebhooksStorage).pipe(
    Layer.provideMerge(MemoryStore.layer)
  )
)
