import { knowledgeSearchConformance } from "@parley/core/testing/conformance"
import { Layer } from "effect"
import { layerKnowledgeSearch } from "../src/KnowledgeSearch.ts"
import { layerTestDatabase } from "./pg.ts"

knowledgeSearchConformance("knowledge search (postgres)", layerKnowledgeSearch.pipe(Layer.provide(layerTestDatabase)))
