import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { functionKvConformance, functionRuntimeConformance } from "../src/testing/conformance/FunctionRuntimeConformance.ts"
import { layerMemoryFunctionKv, layerMemoryFunctions } from "../src/functions/MemoryFunctionRuntime.ts"

// Let the fibers woken by the clock run before the test looks.
const settle = Effect.yieldNow.pipe(Effect.repeat({ times: 20 }))
const advance = (ms: number) => settle.pipe(Effect.andThen(TestClock.adjust(ms)), Effect.andThen(settle))

functionRuntimeConformance("FunctionRuntime (memory, TestClock)", {
  layer: Layer.fresh(layerMemoryFunctions()),
  advance,
  live: false,
  timeout: 10_000
})

functionKvConformance("FunctionKv (memory, TestClock)", {
  layer: Layer.fresh(layerMemoryFunctionKv),
  advance,
  live: false,
  timeout: 5_000
})
