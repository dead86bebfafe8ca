/**
 * The engine's background work on the `JobQueue`: `executions.run` (a slice
 * handed to whichever host takes it: recovery when the host that started it
 * died) and `executions.timer` (a wait's timeout or a delay's end; ignored
 * once the wait moved on).
 */
import { Effect, Layer, Schema } from "effect"
import { JobQueue } from "../ports/JobQueue.ts"
import { ExecutionEngine, RUN_QUEUE, TIMER_QUEUE } from "./Engine.ts"

const RunJob = Schema.Struct({ id: Schema.String })
const TimerJob = Schema.Struct({ id: Schema.String, seq: Schema.Finite })

export const layerExecutionsWorkers = Layer.effectDiscard(Effect.gen(function*() {
  const jobs = yield* JobQueue
  const engine = yield* ExecutionEngine
  yield* jobs.work(RUN_QUEUE, { concurrency: 16 }, (job) =>
    Schema.decodeUnknownEffect(RunJob)(job.payload).pipe(Effect.flatMap((p) => engine.runSlice(p.id))))
  yield* jobs.work(TIMER_QUEUE, { concurrency: 16 }, (job) =>
    Schema.decodeUnknownEffect(TimerJob)(job.payload).pipe(Effect.flatMap(engine.fire)))
}))
