/**
 * The background work of project events, on the `JobQueue`:
 *
 * - `events.definition-deletion`: removes a definition marked for deletion
 *   and every event with its name (DELETE answers 202 at once).
 * - `events.maintenance`, daily at 00:00 UTC (and once when a host starts):
 *   purges events older than each project's retention window, re-requests
 *   deletions whose job was lost, and drops outbox entries nobody took within
 *   a week. Each run enqueues the next day's before working; the dedupe key
 *   names the day, so hosts sharing the queue keep one chain between them.
 */
import { Clock, Effect, Layer, Option, Schema } from "effect"
import { EventDefinitionsRepo, EventsRepo } from "./EventsRepo.ts"
import { decodingPayload, JobQueue, SlotJob } from "../ports/JobQueue.ts"
import { Outbox } from "../ports/Outbox.ts"
import { Projects } from "../projects/Projects.ts"
import { EventPlans } from "./EventPlans.ts"
import { DAY_MS } from "./Rules.ts"

export const EVENT_DEFINITION_DELETION_QUEUE = "events.definition-deletion"
/** Daily (`SlotJob`). */
export const EVENTS_MAINTENANCE_QUEUE = "events.maintenance"

/** Rows removed per statement, so a large purge never holds one huge transaction. */
const BATCH = 1000
/** Outbox entries older than this were never going to be taken: no consumer runs for their type. */
const OUTBOX_KEEP_MS = 7 * DAY_MS

const DeletionPayload = Schema.Struct({ project_id: Schema.String, definition_id: Schema.String })
type DeletionPayload = typeof DeletionPayload.Type

/** Asks for the removal of a definition already marked pending deletion; one job per definition at a time. */
export const requestDefinitionDeletion = (jobs: JobQueue["Service"], projectId: string, definitionId: string) =>
  jobs.enqueue(EVENT_DEFINITION_DELETION_QUEUE, { project_id: projectId, definition_id: definitionId } satisfies DeletionPayload, {
    dedupeKey: `definition:${definitionId}`,
    retryLimit: 5
  })

/** Removes everything in batches until a batch comes back short. */
const drain = (batch: (limit: number) => Effect.Effect<number>) =>
  Effect.gen(function*() {
    let removed = 0
    while (true) {
      const n = yield* batch(BATCH)
      removed += n
      if (n < BATCH) return removed
    }
  })

/**
 * Registers the workers of project events with the `JobQueue` for the life of
 * the layer, and starts the daily maintenance chain.
 */
export const layerEventsWorkers = Layer.effectDiscard(Effect.gen(function*() {
  const jobs = yield* JobQueue
  const events = yield* EventsRepo
  const definitions = yield* EventDefinitionsRepo
  const projects = yield* Projects
  const plans = yield* EventPlans
  const outbox = yield* Outbox

  const purgeDefinition = Effect.fn("EventsJobs.purgeDefinition")(function*(projectId: string, definitionId: string) {
    const found = yield* definitions.findById(projectId, definitionId)
    // Gone already (a retry after success), or never marked: nothing to do.
    if (Option.isNone(found) || found.value.deletion_requested_at === null) return
    // New events with the name are refused while the mark stands, so this converges.
    yield* drain((limit) => events.deleteByName(projectId, found.value.name, limit))
    yield* definitions.delete(projectId, definitionId)
  })

  const purgeExpired = Effect.fn("EventsJobs.purgeExpired")(function*() {
    const now = yield* Clock.currentTimeMillis
    let removed = 0
    for (const project of yield* projects.list) {
      const plan = yield* plans.effective(project.id)
      const cutoff = new Date(now - plan.retention_days * DAY_MS).toISOString()
      removed += yield* drain((limit) => events.deleteOccurredBefore(project.id, cutoff, limit))
    }
    return removed
  })

  const maintenance = Effect.fn("EventsJobs.maintenance")(function*(slot: number) {
    const now = yield* Clock.currentTimeMillis
    const next = Math.max(slot, Math.floor(now / DAY_MS)) + 1
    yield* jobs.enqueue(EVENTS_MAINTENANCE_QUEUE, { slot: next }, { runAt: next * DAY_MS, dedupeKey: `slot:${next}` })
    const purged = yield* purgeExpired()
    for (const pending of yield* definitions.listPendingDeletion) {
      yield* requestDefinitionDeletion(jobs, pending.project_id, pending.id)
    }
    const pruned = yield* outbox.prune(new Date(now - OUTBOX_KEEP_MS).toISOString())
    yield* Effect.logDebug("Events maintenance done").pipe(Effect.annotateLogs({ purged, pruned }))
  })

  yield* jobs.work(EVENT_DEFINITION_DELETION_QUEUE, { concurrency: 2 }, decodingPayload(DeletionPayload, (payload) =>
    purgeDefinition(payload.project_id, payload.definition_id)))

  yield* jobs.work(EVENTS_MAINTENANCE_QUEUE, { concurrency: 1 }, decodingPayload(SlotJob, (payload) => maintenance(payload.slot)))

  const today = Math.floor((yield* Clock.currentTimeMillis) / DAY_MS)
  yield* jobs.enqueue(EVENTS_MAINTENANCE_QUEUE, { slot: today }, { dedupeKey: `slot:${today}` })
}))
