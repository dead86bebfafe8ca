import { Layer } from "effect"
import { projectSecretsRepoConformance } from "../src/testing/conformance/index.ts"
import { layerMemoryStorage } from "../src/testing/index.ts"

projectSecretsRepoConformance("project secrets repo (memory)", Layer.fresh(layerMemoryStorage))
