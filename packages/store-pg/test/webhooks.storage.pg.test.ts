import { webhooksStorageConformance } from "@parley/core/testing/conformance"
import { Layer } from "effect"
import { layerStorage } from "../src/Storage.ts"
import { layerTestDatabase } from "./pg.ts"

webhooksStorageConformance("webhooks storage (postgres)", layerStorage.pipe(Layer.provideMerge(layerTestDatabase)))
