import { Layer } from "effect"
import { templatesRepoConformance } from "../src/testing/conformance/index.ts"
import { layerMemoryStorage } from "../src/testing/index.ts"

templatesRepoConformance("templates repo (memory)", Layer.fresh(layerMemoryStorage))
