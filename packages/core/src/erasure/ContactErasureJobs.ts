/**
 * The erasure job (`messaging.contact-erasure`, one per erasure, retried by
 * the queue) and the sweep that queues again the jobs of unfinished erasures
 * (at start, so a restarted host resumes what its previous life left, and
 * every 5 minutes: a job whose retries ran out, or one never queued).
 */
import { Effect, Layer, Schedule } from "effect"
import { decodingPayload, JobQueue } from "../ports/JobQueue.ts"
import { CONTACT_ERASURE_QUEUE, ContactErasureJob, ContactErasures } from "./ContactErasures.ts"

const SWEEP_EVERY_MS = 5 * 60 * 1000

export const layerContactErasureWorkers = Layer.effectDiscard(Effect.gen(function*() {
  const jobs = yield* JobQueue
  const erasures = yield* ContactErasures
  yield* jobs.work(CONTACT_ERASURE_QUEUE, { concurrency: 2 }, decodingPayload(ContactErasureJob, (p) => erasures.run(p.erasure_id)))
  yield* erasures.requeueUnfinished.pipe(
    Effect.catchCause((cause) => Effect.logError("The contact erasure sweep failed", cause)),
    Effect.repeat(Schedule.spaced(SWEEP_EVERY_MS)),
    Effect.forkScoped
  )
}))
