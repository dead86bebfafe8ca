import { Layer } from "effect"
import { inboxEmbedsRepoConformance } from "../src/testing/conformance/index.ts"
import { layerMemoryStorage } from "../src/testing/index.ts"

inboxEmbedsRepoConformance("inbox embeds repo (memory)", Layer.fresh(layerMemoryStorage))
