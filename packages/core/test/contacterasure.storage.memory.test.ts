import { Layer } from "effect"
import { contactErasureRepoConformance } from "../src/testing/conformance/index.ts"
import { layerMemoryStorage } from "../src/testing/index.ts"

contactErasureRepoConformance("contact erasure repo (memory)", Layer.fresh(layerMemoryStorage))
