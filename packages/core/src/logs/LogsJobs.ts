/**
 * Retention of log search: `logs.maintenance`, daily at 00:00 UTC and once when a host starts, deletes the entries
 * older than `LogSettings.retentionDays` (14 by default): whole days at once where the store keeps the entries a day
 * a partition (`TimePartitions`, PostgreSQL), the rest `PRUNE_BATCH` at a time, so a large backlog goes in bounded deletes; an
 * entry is kept between the retention and a day more.
 */
import { Clock, Effect, Layer } from "effect"
import { decodingPayload, JobQueue, SlotJob } from "../ports/JobQueue.ts"
import { retainByTime, TimePartitions } from "../ports/TimePartitions.ts"
import { LogSearch } from "./LogSearch.ts"
import { LogSettings } from "./LogRecorder.ts"

/** Daily (`SlotJob`). */
export const LOGS_MAINTENANCE_QUEUE = "logs.maintenance"
const DAY_MS = 24 * 60 * 60 * 1000
/** Entries deleted per statement. */
const PRUNE_BATCH = 10_000

/** Drops the entries older than the retention; answers how many were deleted one by one. */
export const pruneLogEntries = Effect.gen(function*() {
  const logs = yield* LogSearch
  const { retentionDays } = yield* LogSettings
  const before = (yield* Clock.currentTimeMillis) - retentionDays * DAY_MS
  return yield* retainByTime("log_entries", before, logs.prune, PRUNE_BATCH)
})

export const layerLogsWorkers = Layer.effectDiscard(Effect.gen(function*() {
  const jobs = yield* JobQueue
  const context = yield* Effect.context<LogSearch | LogSettings | TimePartitions>()
  const maintenance = Effect.fn("LogsJobs.maintenance")(function*(slot: number) {
    const now = yield* Clock.currentTimeMillis
    const next = Math.max(slot, Math.floor(now / DAY_MS)) + 1
    yield* jobs.enqueue(LOGS_MAINTENANCE_QUEUE, { slot: next }, { runAt: next * DAY_MS, dedupeKey: `slot:${next}` })
    const pruned = yield* pruneLogEntries.pipe(Effect.provideContext(context))
    yield* Effect.logDebug("Log search maintenance done").pipe(Effect.annotateLogs({ pruned }))
  })
  yield* jobs.work(LOGS_MAINTENANCE_QUEUE, { concurrency: 1 }, decodingPayload(SlotJob, (p) => maintenance(p.slot)))
  const today = Math.floor((yield* Clock.currentTimeMillis) / DAY_MS)
  yield* jobs.enqueue(LOGS_MAINTENANCE_QUEUE, { slot: today }, { dedupeKey: `slot:${today}` })
}))
