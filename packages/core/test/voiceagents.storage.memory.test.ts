import { Layer } from "effect"
import { voiceAgentsRepoConformance } from "../src/testing/conformance/index.ts"
import { layerMemoryStorage } from "../src/testing/index.ts"

voiceAgentsRepoConformance("voice agents repo (memory)", Layer.fresh(layerMemoryStorage))
