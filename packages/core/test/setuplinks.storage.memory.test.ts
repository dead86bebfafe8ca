import { setupLinksRepoConformance } from "../src/testing/conformance/index.ts"
import { layerMemoryStorage } from "../src/testing/index.ts"

setupLinksRepoConformance("SetupLinksRepo (memory)", layerMemoryStorage)
