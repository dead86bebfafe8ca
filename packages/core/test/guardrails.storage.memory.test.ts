import { Layer } from "effect"
import { guardrailsRepoConformance } from "../src/testing/conformance/index.ts"
import { layerMemoryStorage } from "../src/testing/index.ts"

guardrailsRepoConformance("guardrails repo (memory)", Layer.fresh(layerMemoryStorage))
