import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { jobQueueConformance } from "../src/testing/conformance/index.ts"
import { layerMemoryJobQueue } from "../src/ports/MemoryJobQueue.ts"

// Let the fibers woken by the clock run before the test looks.
const settle = Effect.yieldNow.pipe(Effect.repeat({ times: 20 }))

jobQueueConformance("JobQueue (memory, TestClock)", {
  layer: layerMemoryJobQueue,
  advance: (ms) => TestClock.adjust(ms).pipe(Effect.andThen(settle)),
  live: false,
  timeout: 5_000
})
