/**
 * Contact erasure's rules on memory ports (decisions 4.8): which identifiers
 * name a contact (404 unknown, 422 malformed phone), one erasure per contact
 * while unfinished, its job queued under one key, the steps run in order and
 * resumed at the step reached, and a progress log line per step that carries
 * counts, never the contact's identifiers.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect, Exit, Layer, Logger, Option } from "effect"
import { CONTACT_ERASURE_QUEUE, ContactErasures, erasureSteps } from "../src/erasure/ContactErasures.ts"
import { LogRecorder } from "../src/logs/LogRecorder.ts"
import { layerContactHoldings } from "../src/Parley.ts"
import { ContactErasureRepo } from "../src/erasure/ContactErasureRepo.ts"
import { LogSearch } from "../src/logs/LogSearch.ts"
import { type EnqueueOptions, JobQueue } from "../src/ports/JobQueue.ts"
import { ContactsRepo, MediaRepo, MessagesRepo } from "../src/messaging/MessagingRepo.ts"
import { MessagingErasure } from "../src/messaging/MessagingErasure.ts"
import { Ids } from "../src/shared/Ids.ts"
import { givenContactRows, givenProject, makeContact, uniqueId } from "../src/testing/conformance/index.ts"
import { layerMemoryJobQueue, layerMemoryStorage } from "../src/testing/index.ts"

const enqueued: Array<{ readonly queue: string; readonly payload: unknown; readonly options: EnqueueOptions | undefined }> = []
const logs: Array<string> = []
const failing = { step: "", times: 0 }

/** Records every enqueue before the memory queue takes it. */
const layerRecordingQueue = Layer.effect(
  JobQueue,
  Effect.gen(function*() {
    const jobs = yield* JobQueue
    return JobQueue.of({
      ...jobs,
      enqueue: (queue, payload, options) => Effect.andThen(Effect.sync(() => enqueued.push({ queue, payload, options })), jobs.enqueue(queue, payload, options))
    })
  })
).pipe(Layer.provide(layerMemoryJobQueue))

/** Fails the step named in `failing` its next `times` calls. */
const layerFlakyRepo = Layer.effect(
  MessagingErasure,
  Effect.gen(function*() {
    const erasure = yield* MessagingErasure
    const flaky = (name: string, deletion: typeof erasure.deleteMedia): typeof erasure.deleteMedia => (projectId, contactId, limit) =>
      failing.step === name && failing.times-- > 0 ? Effect.die(new Error(`crash in ${name}`)) : deletion(projectId, contactId, limit)
    return MessagingErasure.of({
      ...erasure,
      deleteMedia: flaky("media", erasure.deleteMedia),
      deleteMessages: flaky("messages", erasure.deleteMessages)
    })
  })
)

const Env = ContactErasures.layer.pipe(
  Layer.provideMerge(layerContactHoldings),
  Layer.provideMerge(LogRecorder.layer),
  Layer.provideMerge(layerFlakyRepo),
  Layer.provideMerge(Layer.mergeAll(layerRecordingQueue, Ids.layerSequential)),
  Layer.provideMerge(Layer.fresh(layerMemoryStorage)),
  Layer.provideMerge(Logger.layer([Logger.map(Logger.formatJson, (line) => void logs.push(line))]))
)

describe("ContactErasures", () => {
  layer(Env)("request", (it) => {
    it.effect("names a contact by its id, phone number in any usual format, business-scoped id or its parent", () =>
      Effect.gen(function*() {
        const erasures = yield* ContactErasures
        const project = yield* givenProject()
        const contact = makeContact(project.id, {
          id: "0190a0a0-0000-7000-8000-00000000c0de",
          wa_id: "15550403001",
          business_scoped_user_id: "US.13491208655302741918",
          parent_business_scoped_user_id: "US.ENT.11815799212886844830"
        })
        yield* (yield* ContactsRepo).insert(contact)
        const identifiers = [
          contact.id,
          "15550403001",
          "+15550403001",
          "+1 555-040-3001",
          "+1 (555) 040.3001",
          "US.13491208655302741918",
          "US.ENT.11815799212886844830"
        ]
        const records = yield* Effect.forEach(identifiers, (i) => erasures.request(project.id, i))
        assert.deepStrictEqual(new Set(records.map((r) => r.contact_id)), new Set([contact.id]))
        assert.deepStrictEqual(new Set(records.map((r) => r.id)).size, 1, "one erasure while it is unfinished")
        const jobs = enqueued.filter((e) => (e.payload as { erasure_id: string }).erasure_id === records[0]!.id)
        assert.strictEqual(jobs.length, identifiers.length)
        for (const job of jobs) {
          assert.strictEqual(job.queue, CONTACT_ERASURE_QUEUE)
          assert.strictEqual(job.options?.dedupeKey, `erasure:${records[0]!.id}`)
        }
      }))

    it.effect("answers 404 for an unknown contact or another project's, 422 for a malformed phone number or identifier", () =>
      Effect.gen(function*() {
        const erasures = yield* ContactErasures
        const project = yield* givenProject()
        const other = yield* givenProject()
        // Contact ids are uuids (decisions 1.2): another project's is a well-formed identifier, unknown here.
        const contact = makeContact(other.id, { id: crypto.randomUUID(), wa_id: "15550403002" })
        yield* (yield* ContactsRepo).insert(contact)
        for (const identifier of ["15550403002", contact.id, "US.00000000000000000000", "0190a0a0-0000-7000-8000-000000000000"]) {
          const error = yield* Effect.flip(erasures.request(project.id, identifier))
          assert.strictEqual(error._tag, "NotFound", identifier)
          // The identifier is not echoed: the answer is logged, and it may be an erased contact's number.
          assert.strictEqual(error.error, "Contact not found")
        }
        for (const identifier of ["+12345", "1234567890123456", "+", "(555) 0", "nobody", "+1 555 CALL-NOW"]) {
          const error = yield* Effect.flip(erasures.request(project.id, identifier))
          assert.strictEqual(error._tag, "Unprocessable", identifier)
          assert.deepStrictEqual(error.details?.map((d) => d.path), ["identifier"])
        }
      }))
  })

  layer(Env)("run", (it) => {
    it.effect("runs the steps in order, resumes at the step a failure stopped it in, and logs progress without identifiers", () =>
      Effect.gen(function*() {
        const erasures = yield* ContactErasures
        const repo = yield* ContactErasureRepo
        const stepNames = (yield* erasureSteps).map((s) => s.name)
        const project = yield* givenProject()
        const contact = makeContact(project.id, { profile_name: "Ulla Unique" })
        const rows = yield* givenContactRows(project.id, uniqueId("erasure.core"), contact)
        const record = yield* erasures.request(project.id, contact.wa_id!)

        failing.step = "messages"
        failing.times = 1
        assert.isTrue(Exit.isFailure(yield* Effect.exit(erasures.run(record.id))))
        const stopped = Option.getOrThrow(yield* repo.find(record.id))
        assert.deepStrictEqual([stopped.status, stopped.step], ["running", "messages"])
        assert.isTrue(Option.isNone(yield* (yield* MediaRepo).find(project.id, rows.media.id)))
        assert.isTrue(Option.isSome(yield* (yield* MessagesRepo).findById(project.id, rows.messages[0]!.id)))

        const before = logs.length
        yield* erasures.run(record.id)
        const done = Option.getOrThrow(yield* repo.find(record.id))
        assert.deepStrictEqual([done.status, done.target, done.step], ["done", null, "contact"])
        assert.isTrue(Option.isNone(yield* (yield* ContactsRepo).findById(project.id, contact.id)))

        const lines = logs.slice(before).map((l) => JSON.parse(l) as { message: ReadonlyArray<string> | string; annotations: Record<string, unknown> })
        const steps = lines.filter((l) => String(l.message).includes("Contact erasure step done")).map((l) => l.annotations)
        assert.deepStrictEqual(steps.map((a) => a.step), stepNames.slice(stepNames.indexOf("messages")))
        assert.deepStrictEqual(steps[0], { erasure_id: record.id, step: "messages", step_index: stepNames.indexOf("messages") + 1, steps: stepNames.length, rows: 2 })
        for (const line of logs) {
          for (const secret of [contact.wa_id!, contact.business_scoped_user_id!, "Ulla Unique"]) assert.notInclude(line, secret)
        }

        // Done: running it again does nothing, and the contact is gone for a new request.
        yield* erasures.run(record.id)
        assert.strictEqual((yield* Effect.flip(erasures.request(project.id, contact.wa_id!)))._tag, "NotFound")
      }))

    it.effect("erases the log entries this process still holds in its recorder's batch, not only the written ones", () =>
      Effect.gen(function*() {
        const erasures = yield* ContactErasures
        const recorder = yield* LogRecorder
        const project = yield* givenProject()
        const contact = makeContact(project.id)
        yield* givenContactRows(project.id, uniqueId("erasure.core"), contact)
        const at = new Date().toISOString()
        // Recorded just before the erasure: the batch lingers (the test clock does not move), so it is not written yet.
        yield* recorder.record([{ project_id: project.id, source: "msg_webhook_event", occurred_at: at, problem: false, message: `message text from ${contact.wa_id}` }])
        const record = yield* erasures.request(project.id, contact.id)
        yield* erasures.run(record.id)
        yield* recorder.flush
        const found = yield* (yield* LogSearch).search({
          projectId: project.id,
          sources: ["msg_webhook_event"],
          since: "2000-01-01T00:00:00.000Z",
          until: "2100-01-01T00:00:00.000Z",
          words: [contact.wa_id!],
          filters: [],
          problemsOnly: false,
          limit: 10,
          after: null
        })
        assert.deepStrictEqual(found.entries, [])
      }))

    it.effect("starts over from the first step when the recorded step is one this version does not know", () =>
      Effect.gen(function*() {
        const erasures = yield* ContactErasures
        const repo = yield* ContactErasureRepo
        const project = yield* givenProject()
        const contact = makeContact(project.id)
        const rows = yield* givenContactRows(project.id, uniqueId("erasure.core"), contact)
        const record = yield* erasures.request(project.id, contact.id)
        assert.isTrue(yield* repo.reach(record.id, "a_step_since_renamed", record.created_at))
        yield* erasures.run(record.id)
        assert.strictEqual(Option.getOrThrow(yield* repo.find(record.id)).status, "done")
        assert.isTrue(Option.isNone(yield* (yield* MediaRepo).find(project.id, rows.media.id)))
        assert.isTrue(Option.isNone(yield* (yield* ContactsRepo).findById(project.id, contact.id)))
      }))
  })
})
