import { workflowLifecycleConformance } from "@parley/core/testing/conformance"
import { Layer } from "effect"
import { layerStorage } from "../src/Storage.ts"
import { layerTestDatabase } from "./pg.ts"

workflowLifecycleConformance("workflow lifecycle storage (postgres)", layerStorage.pipe(Layer.provideMerge(layerTestDatabase)))
