/**
 * Contact erasure (decisions 4.8): `DELETE /msg/contacts/<identifier>`
 * resolves the contact, opens its erasure record (or finds the unfinished one)
 * and queues the job; the job runs the steps in order, each a bounded,
 * idempotent deletion repeated until a batch comes back short, and records
 * each step before running it, so a job that crashed resumes at its step.
 *
 * The steps are one ordered list (`ErasureStep`: a name and a deletion):
 * executions go first (a live run is fenced off by its missing row), then
 * what mentions the contact (job payloads among it), then its media,
 * messages and conversations, and the contact row last, so every earlier
 * step can still find what is the contact's. A capability with rows of its
 * own that name a contact adds one entry before `contact`.
 */
import { Clock, Context, Effect, Layer, Option, Schema } from "effect"
import { JobQueue } from "../ports/JobQueue.ts"
import { LogRecorder } from "../logs/LogRecorder.ts"
import { LogSearch } from "../logs/LogSearch.ts"
import {
  type ContactErasureRecord,
  ContactErasureRepo,
  type ErasureDeletion,
  type ErasureSubject,
  erasureTerms
} from "./ContactErasureRepo.ts"
import { ContactHoldings } from "./ContactHoldings.ts"
import { type NotFound, notFound, type Unprocessable, unprocessable } from "../shared/ApiError.ts"
import { Ids } from "../shared/Ids.ts"
import type { ContactRecord } from "../messaging/Message.ts"
import { isUserId, normalizePhone } from "../network/Contacts.ts"

/** Erase one contact: `{ erasure_id }`. */
export const CONTACT_ERASURE_QUEUE = "messaging.contact-erasure"
export const ContactErasureJob = Schema.Struct({ erasure_id: Schema.String })

/** Rows one statement of a step removes at most. */
export const ERASURE_BATCH = 500

export interface ErasureStep {
  readonly name: string
  readonly run: ErasureDeletion
}

/**
 * The steps in the order they run (see the module's comment for why this
 * order), over the services that hold what they erase: a capability adds its
 * entry before `contact`, taking its own service here.
 */
export const erasureSteps: Effect.Effect<
  ReadonlyArray<ErasureStep>,
  never,
  JobQueue | LogSearch | LogRecorder | ContactHoldings
> = Effect.gen(function*() {
  const jobs = yield* JobQueue
  const logs = yield* LogSearch
  const recorder = yield* LogRecorder
  const holdings = yield* ContactHoldings
  return [
    { name: "step_events", run: holdings.deleteStepEvents },
    { name: "executions", run: holdings.deleteExecutions },
    { name: "project_events", run: holdings.deleteProjectEvents },
    { name: "webhook_deliveries", run: holdings.deleteDeliveries },
    { name: "domain_events", run: holdings.deleteDomainEvents },
    // The relay's jobs carry the outbox entries they hand on; a store keeps finished jobs for days.
    { name: "job_payloads", run: (s, limit) => jobs.eraseMentions(erasureTerms(s), limit) },
    { name: "upstream_payloads", run: holdings.deleteUpstreamPayloads },
    // Log search's entries (API requests, upstream events, step events, deliveries) that mention the contact; those
    // this process still holds in its recorder's batch are written first, so none lands after the erasure.
    { name: "log_entries", run: (s) => Effect.as(Effect.andThen(recorder.flush, logs.eraseMentions(s.project_id, erasureTerms(s))), 0) },
    // Broadcast recipients keep their rows (the broadcast's counts stay true) without the number or parameters.
    {
      name: "broadcast_recipients",
      run: (s) => s.target.wa_id === null ? Effect.succeed(0) : Effect.as(holdings.anonymiseBroadcastRecipients(s.project_id, s.target.wa_id), 0)
    },
    // Its opt-outs, own time zone and the marketing sends frequency caps count (keyed by phone number or user id).
    {
      name: "guardrails",
      run: (s) =>
        Effect.as(
          Effect.forEach([s.target.wa_id, s.target.business_scoped_user_id].filter((k): k is string => k !== null), (k) =>
            holdings.eraseGuardrails(s.project_id, k)),
          0
        )
    },
    { name: "media", run: holdings.deleteMedia },
    { name: "messages", run: holdings.deleteMessages },
    { name: "conversations", run: holdings.deleteConversations },
    { name: "contact", run: holdings.deleteContact }
  ]
})

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
/** Only what a phone number is written with: digits, `+`, spaces, dashes, dots, parentheses. */
const phoneCharacters = /^[\d\s\-().+]+$/

export const enqueueErasure = (jobs: JobQueue["Service"], erasureId: string) =>
  jobs.enqueue(CONTACT_ERASURE_QUEUE, { erasure_id: erasureId } satisfies typeof ContactErasureJob.Type, {
    dedupeKey: `erasure:${erasureId}`,
    retryLimit: 10,
    retryDelayMs: 5_000
  }).pipe(Effect.asVoid)

export class ContactErasures extends Context.Service<ContactErasures, {
  /**
   * Resolves `identifier` (contact uuid, phone number, business-scoped id or
   * its parent id) to the project's contact, opens its erasure (or finds the
   * unfinished one) and queues its job: done when both are stored. 404 for
   * an unknown contact, 422 for a malformed phone number or an identifier of
   * none of those forms.
   */
  readonly request: (projectId: string, identifier: string) => Effect.Effect<ContactErasureRecord, NotFound | Unprocessable>
  /** Runs an erasure from the step its record reached to the end; nothing for a done or unknown one. */
  readonly run: (erasureId: string) => Effect.Effect<void>
  /** Queues again the job of every unfinished erasure (a lost job; the queue drops a duplicate); answers how many. */
  readonly requeueUnfinished: Effect.Effect<number>
}>()("@parley/core/messaging/erasure/ContactErasures") {
  static readonly layer = Layer.effect(
    ContactErasures,
    Effect.gen(function*() {
      const repo = yield* ContactErasureRepo
      const holdings = yield* ContactHoldings
      const jobs = yield* JobQueue
      const ids = yield* Ids
      const steps = yield* erasureSteps
      const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms).toISOString())

      const resolve = Effect.fn("ContactErasures.resolve")(function*(projectId: string, identifier: string) {
        let found: Option.Option<ContactRecord>
        // A uuid first: one of only digits and dashes would read as a (too long) phone number.
        if (uuidPattern.test(identifier)) found = yield* holdings.contactById(projectId, identifier)
        else if (isUserId(identifier)) found = yield* holdings.contactByUserId(projectId, identifier)
        else if (phoneCharacters.test(identifier)) {
          const digits = normalizePhone(identifier)
          if (digits === undefined) {
            return yield* unprocessable("identifier is not a valid phone number (6 to 15 digits)", [
              { path: "identifier", message: "must be a contact id, a phone number of 6 to 15 digits or a business-scoped id" }
            ])
          }
          found = yield* holdings.contactByWaId(projectId, digits)
        } else {
          // None of the identifier's forms (decisions 4.8): malformed, not an unknown contact (a contact stored under
          // an id of another shape, as older test data, is still found).
          found = yield* holdings.contactById(projectId, identifier)
          if (Option.isSome(found)) return found.value
          return yield* unprocessable("identifier must be a contact id, a phone number or a business-scoped id", [
            { path: "identifier", message: "must be a contact id (uuid), a phone number of 6 to 15 digits or a business-scoped id" }
          ])
        }
        if (Option.isNone(found)) return yield* notFound("Contact", identifier)
        return found.value
      })

      const run = Effect.fn("ContactErasures.run")(function*(erasureId: string) {
        const found = yield* repo.find(erasureId)
        if (Option.isNone(found) || found.value.status === "done") return
        const record = found.value
        const target = record.target
        if (target === null) return
        const subject: ErasureSubject = { project_id: record.project_id, contact_id: record.contact_id, target }
        // A step this version does not know (renamed since) starts over: every step is idempotent.
        const from = Math.max(0, steps.findIndex((s) => s.name === record.step))
        for (let index = from; index < steps.length; index++) {
          const step = steps[index]!
          yield* repo.reach(erasureId, step.name, yield* now)
          let rows = 0
          let batch: number
          do {
            batch = yield* step.run(subject, ERASURE_BATCH)
            rows += batch
          } while (batch >= ERASURE_BATCH)
          // Ids and counts only: the contact's identifiers stay out of the log.
          yield* Effect.logInfo("Contact erasure step done").pipe(Effect.annotateLogs({
            erasure_id: erasureId,
            step: step.name,
            step_index: index + 1,
            steps: steps.length,
            rows
          }))
        }
        yield* repo.finish(erasureId, yield* now)
        yield* Effect.logInfo("Contact erasure done").pipe(Effect.annotateLogs({ erasure_id: erasureId }))
      })

      return ContactErasures.of({
        request: Effect.fn("ContactErasures.request")(function*(projectId, identifier) {
          const contact = yield* resolve(projectId, identifier)
          const at = yield* now
          const { record } = yield* repo.open({
            id: yield* ids.uuid,
            project_id: projectId,
            contact_id: contact.id,
            status: "queued",
            step: null,
            target: {
              wa_id: contact.wa_id,
              business_scoped_user_id: contact.business_scoped_user_id,
              parent_business_scoped_user_id: contact.parent_business_scoped_user_id
            },
            created_at: at,
            updated_at: at,
            finished_at: null
          })
          // A repeated request queues again: dropped while its job waits or runs, a new one if it was lost.
          yield* enqueueErasure(jobs, record.id)
          return record
        }),
        run,
        requeueUnfinished: Effect.gen(function*() {
          const unfinished = yield* repo.listUnfinished(ERASURE_BATCH)
          yield* Effect.forEach(unfinished, (e) => enqueueErasure(jobs, e.id), { discard: true })
          return unfinished.length
        }).pipe(Effect.withSpan("ContactErasures.requeueUnfinished"))
      })
    })
  )
}
