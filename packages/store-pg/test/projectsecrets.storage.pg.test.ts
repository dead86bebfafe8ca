import { projectSecretsRepoConformance } from "@parley/core/testing/conformance"
import { Layer } from "effect"
import { layerStorage } from "../src/Storage.ts"
import { layerTestDatabase } from "./pg.ts"

projectSecretsRepoConformance("project secrets repo (postgres)", layerStorage.pipe(Layer.provideMerge(layerTestDatabase)))
