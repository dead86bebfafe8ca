/**
 * The engine's background work on the `JobQueue`: `executions.run` (a slice
 * handed to whichever host takes it: recovery when the host that started it
 * died) and `executions.timer` (a wait's timeout or a delay's end; ignored
 * once the wait moved on), and the recovery sweep every host runs.
 *
 * Jobs alone do not recover everything: a host can die between a commit and
 * the enqueue after it (no job), and pg-boss retries a dead worker's job once
 * its heartbeat lapsed (10 s, found by a supervise pass every 5 s: ~15 s),
 * while the run's lease still names the dead host — the retry then finds the
 * run held and completes having done nothing. The sweep closes both
 * gaps: every `sweepIntervalMs` it asks the store for runs whose lease ended
 * (or that were never leased and stayed quiet a lease long) and for waits
 * whose timer is due, and runs or fires them here. The lease and the
 * compare-and-set make a sweep racing a job or another host's sweep
 * harmless. A run whose host died is thus taken over at most `leaseMs` +
 * `sweepIntervalMs` (75 s by default) after that host's last checkpoint.
 *
 * `executions.maintenance`, daily at 00:00 UTC and once when a host starts,
 * drops step events older than 90 days (decisions 4.2: records live as long
 * as their workflow, their step logs do not): whole weeks at once where the
 * store keeps them a week a partition (`TimePartitions`, PostgreSQL), so an
 * event is kept between 90 and 97 days there.
 */
import { Clock, Effect, Layer, Schedule } from "effect"
import { ExecutionsRepo, StepEventsRepo } from "./ExecutionsRepo.ts"
import { decodingPayload, JobQueue, SlotJob } from "../ports/JobQueue.ts"
import { retainByTime, TimePartitions } from "../ports/TimePartitions.ts"
import { ExecutionEngine, ExecutionsSettings, RUN_QUEUE, RunJob, TIMER_QUEUE, TimerJob } from "./Engine.ts"

/** Daily (`SlotJob`). */
export const MAINTENANCE_QUEUE = "executions.maintenance"
/** How long step events are kept. */
export const STEP_EVENTS_KEEP_MS = 90 * 24 * 60 * 60 * 1000
const DAY_MS = 24 * 60 * 60 * 1000
/** Step events deleted per statement: a large backlog goes in bounded deletes. */
const PRUNE_BATCH = 10_000

/** Drops step events older than the retention; answers how many were deleted one by one. */
export const pruneStepEvents = Effect.gen(function*() {
  const events = yield* StepEventsRepo
  const before = (yield* Clock.currentTimeMillis) - STEP_EVENTS_KEEP_MS
  return yield* retainByTime("workflow_step_events", before, events.prune, PRUNE_BATCH)
})

/** Runs looked at per sweep; a backlog larger than this drains over the next sweeps. */
export const SWEEP_BATCH = 500

/** One recovery pass: runs whose host died and waits whose timer is due, handed to the engine here. */
export const sweep = Effect.gen(function*() {
  const repo = yield* ExecutionsRepo
  const engine = yield* ExecutionEngine
  const { leaseMs } = yield* ExecutionsSettings
  const now = yield* Clock.currentTimeMillis
  const iso = (ms: number) => new Date(ms).toISOString()
  // Unleased runs get a lease's worth of quiet: the host that just started or resumed one is about to run it.
  const found = yield* repo.listRecoverable(iso(now), iso(now - leaseMs), SWEEP_BATCH)
  yield* Effect.forEach(found, (e) => {
    const due = e.wait !== null && e.wait.due_at !== null && Date.parse(e.wait.due_at) <= now
    return (due ? engine.fire({ id: e.id, seq: e.wait!.seq }) : engine.runSlice(e.id)).pipe(
      Effect.catchCause((cause) => Effect.logError("Recovering an execution failed", cause).pipe(Effect.annotateLogs({ execution_id: e.id })))
    )
  }, { concurrency: 16, discard: true })
  return found.length
}).pipe(Effect.withSpan("ExecutionsJobs.sweep"))

export const layerExecutionsWorkers = Layer.effectDiscard(Effect.gen(function*() {
  const jobs = yield* JobQueue
  const engine = yield* ExecutionEngine
  const { sweepIntervalMs } = yield* ExecutionsSettings
  yield* jobs.work(RUN_QUEUE, { concurrency: 16 }, decodingPayload(RunJob, (p) => engine.runSlice(p.id)))
  yield* jobs.work(TIMER_QUEUE, { concurrency: 16 }, decodingPayload(TimerJob, (p) => engine.fire(p)))
  const retention = yield* Effect.context<StepEventsRepo | TimePartitions>()
  const maintenance = Effect.fn("ExecutionsJobs.maintenance")(function*(slot: number) {
    const now = yield* Clock.currentTimeMillis
    const next = Math.max(slot, Math.floor(now / DAY_MS)) + 1
    yield* jobs.enqueue(MAINTENANCE_QUEUE, { slot: next }, { runAt: next * DAY_MS, dedupeKey: `slot:${next}` })
    const pruned = yield* pruneStepEvents.pipe(Effect.provideContext(retention))
    yield* Effect.logDebug("Executions maintenance done").pipe(Effect.annotateLogs({ pruned }))
  })
  yield* jobs.work(MAINTENANCE_QUEUE, { concurrency: 1 }, decodingPayload(SlotJob, (p) => maintenance(p.slot)))
  const today = Math.floor((yield* Clock.currentTimeMillis) / DAY_MS)
  yield* jobs.enqueue(MAINTENANCE_QUEUE, { slot: today }, { dedupeKey: `slot:${today}` })

  const context = yield* Effect.context<ExecutionsRepo | ExecutionEngine>()
  // At start (a restarted host finds what its previous life left) and then on a fixed beat, without jitter.
  yield* sweep.pipe(
    Effect.provideContext(context),
    Effect.catchCause((cause) => Effect.logError("The executions recovery sweep failed", cause)),
    Effect.repeat(Schedule.spaced(sweepIntervalMs)),
    Effect.forkScoped
  )
}))
