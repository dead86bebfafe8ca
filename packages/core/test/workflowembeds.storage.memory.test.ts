import { Layer } from "effect"
import { workflowEmbedsRepoConformance } from "../src/testing/conformance/index.ts"
import { layerMemoryStorage } from "../src/testing/index.ts"

workflowEmbedsRepoConformance("workflow embeds repo (memory)", Layer.fresh(layerMemoryStorage))
