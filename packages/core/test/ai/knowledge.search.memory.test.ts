import { knowledgeSearchConformance } from "../../src/testing/conformance/index.ts"
import { layerMemoryKnowledgeSearch } from "../../src/testing/index.ts"

knowledgeSearchConformance("knowledge search (memory)", layerMemoryKnowledgeSearch)
