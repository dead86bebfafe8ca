import { guardrailsRepoConformance } from "@parley/core/testing/conformance"
import { Layer } from "effect"
import { layerStorage } from "../src/Storage.ts"
import { layerTestDatabase } from "./pg.ts"

guardrailsRepoConformance("guardrails repo (postgres)", layerStorage.pipe(Layer.provideMerge(layerTestDatabase)))
