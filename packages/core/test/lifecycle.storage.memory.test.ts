import { workflowLifecycleConformance } from "../src/testing/conformance/index.ts"
import { layerMemoryStorage } from "../src/testing/index.ts"

workflowLifecycleConformance("workflow lifecycle storage (memory)", layerMemoryStorage)
