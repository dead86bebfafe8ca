import { functionRuntimeConformance } from "@parley/core/testing/conformance"
import { layerMemoryFunctionKv } from "@parley/core/testing"
import { Effect, Layer } from "effect"
import { layerWorkerdFunctionRuntime } from "../src/adapters/workerd/Workerd.ts"

// Real processes and real time: each test starts workerd processes of its own.
functionRuntimeConformance("FunctionRuntime (workerd)", {
  layer: Layer.fresh(layerWorkerdFunctionRuntime({ processes: 2 }).pipe(Layer.provideMerge(layerMemoryFunctionKv))),
  advance: (ms) => Effect.sleep(ms),
  live: true,
  timeout: 30_000
})
