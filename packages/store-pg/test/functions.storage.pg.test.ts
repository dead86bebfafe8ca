import { functionKvConformance, functionsStorageConformance } from "@parley/core/testing/conformance"
import { Effect, Layer } from "effect"
import { layerFunctionKv } from "../src/FunctionKv.ts"
import { layerFunctionsStorage } from "../src/FunctionsRepo.ts"
import { layerProjectsRepo } from "../src/ProjectsRepo.ts"
import { layerTransactor, PgTransactions } from "../src/Transactor.ts"
import { layerTestDatabase } from "./pg.ts"

functionsStorageConformance(
  "functions storage (postgres)",
  Layer.mergeAll(layerTransactor, layerProjectsRepo, layerFunctionsStorage).pipe(
    Layer.provide(PgTransactions.layer),
    Layer.provideMerge(layerTestDatabase)
  )
)

// Real time: expiries are read from the clock the rows were written with.
functionKvConformance("FunctionKv (postgres)", {
  layer: layerFunctionKv.pipe(Layer.provideMerge(layerTestDatabase)),
  advance: (ms) => Effect.sleep(ms),
  live: true,
  timeout: 30_000
})
