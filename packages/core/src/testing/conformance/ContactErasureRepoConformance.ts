/**
 * The behaviour every `ContactErasureRepo` adapter owes, written once: the
 * erasure records; and each deletion step removing the contact's rows only,
 * `limit` at a time, idempotently, through the erasure ports each capability
 * owns (`ExecutionsErasure`, `EventsErasure`, `WebhooksErasure`, the outbox's
 * `eraseMentions`, `MessagingErasure`) as `Parley.ts` wires them into
 * erasure (`layerContactHoldings`). Rows are seeded through the capabilities'
 * ports, so the same suite proves each adapter reads its tables as they store
 * them.
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import type { ContactRecord } from "../../messaging/Message.ts"
import {
  type ContactErasureRecord,
  ContactErasureRepo,
  type ErasureDeletion,
  type ErasureSubject
} from "../../erasure/ContactErasureRepo.ts"
import { ContactHoldings } from "../../erasure/ContactHoldings.ts"
import { EventsErasure } from "../../events/EventsErasure.ts"
import { EventsRepo } from "../../events/EventsRepo.ts"
import { ExecutionsErasure } from "../../executions/ExecutionsErasure.ts"
import { BroadcastsRepo } from "../../broadcasts/BroadcastsRepo.ts"
import { GuardrailsRepo } from "../../guardrails/GuardrailsRepo.ts"
import { MessagingErasure } from "../../messaging/MessagingErasure.ts"
import { layerContactHoldings } from "../../Parley.ts"
import { WebhooksErasure } from "../../webhooks/WebhooksErasure.ts"
import { ExecutionInputsRepo, ExecutionsRepo, StepEventsRepo } from "../../executions/ExecutionsRepo.ts"
import { MessageConfigsRepo } from "../../messaging/numbers/MessageConfigsRepo.ts"
import {
  ContactsRepo,
  ConversationsRepo,
  MediaRepo,
  MessagesRepo,
  UpstreamInboxRepo
} from "../../messaging/MessagingRepo.ts"
import { Outbox } from "../../ports/Outbox.ts"
import type { ProjectsRepo } from "../../projects/ProjectsRepo.ts"
import { WebhookBuffersRepo, WebhookDeliveriesRepo, WebhooksRepo } from "../../webhooks/WebhooksRepo.ts"
import { WorkflowsRepo } from "../../workflows/WorkflowsRepo.ts"
import { makeEvent } from "./EventsStorageConformance.ts"
import { makeExecution, makeInput, makeStepEvent } from "./ExecutionsStorageConformance.ts"
import { at, givenProject, makeWorkflow, uniqueId } from "./fixtures.ts"
import { makeConfig, makeContact, makeConversation, makeMessage } from "./MessagingStorageConformance.ts"
import { makeDelivery, makeWebhook } from "./WebhooksStorageConformance.ts"

export type ContactErasureStoragePorts =
  | ContactErasureRepo
  | ProjectsRepo
  | MessageConfigsRepo
  | ContactsRepo
  | ConversationsRepo
  | MessagesRepo
  | MediaRepo
  | UpstreamInboxRepo
  | WorkflowsRepo
  | ExecutionsRepo
  | StepEventsRepo
  | ExecutionInputsRepo
  | EventsRepo
  | Outbox
  | WebhooksRepo
  | WebhookDeliveriesRepo
  | WebhookBuffersRepo
  | ExecutionsErasure
  | EventsErasure
  | WebhooksErasure
  | MessagingErasure
  | BroadcastsRepo
  | GuardrailsRepo

const makeErasure = (projectId: string, contact: ContactRecord, overrides: Partial<ContactErasureRecord> = {}): ContactErasureRecord => ({
  id: uniqueId("era"),
  project_id: projectId,
  contact_id: contact.id,
  status: "queued",
  step: null,
  target: {
    wa_id: contact.wa_id,
    business_scoped_user_id: contact.business_scoped_user_id,
    parent_business_scoped_user_id: contact.parent_business_scoped_user_id
  },
  created_at: at(0),
  updated_at: at(0),
  finished_at: null,
  ...overrides
})

const utf8 = (text: string) => new TextEncoder().encode(text)

/**
 * Everything one contact leaves behind: two messages (one with stored media
 * and a status report), a running execution of its conversation with step
 * events and a queued input, a linked project event, a delivery (with an
 * attempt) and a buffer naming its number, an outbox entry, a raw upstream
 * payload. `domainType` is the outbox entry's type (unique per test). Every
 * row that can carry the contact's name carries its `profile_name`.
 */
export const givenContactRows = (
  projectId: string,
  domainType: string,
  contact: ContactRecord,
  mediaBytes: Uint8Array = new Uint8Array([1, 2, 3, 4])
) =>
  Effect.gen(function*() {
    const config = makeConfig(projectId)
    yield* (yield* MessageConfigsRepo).insert(config)
    yield* (yield* ContactsRepo).insert(contact)
    const conversation = makeConversation(config, contact)
    yield* (yield* ConversationsRepo).insert(conversation)
    const media = {
      id: uniqueId("media"),
      project_id: projectId,
      msg_config_id: config.id,
      network_media_id: uniqueId("net"),
      filename: "photo.jpg",
      content_type: "image/jpeg",
      byte_size: mediaBytes.length,
      sha256: "00",
      bytes: mediaBytes,
      created_at: at(0)
    }
    yield* (yield* MediaRepo).insert(media)
    const withMedia = makeMessage(conversation, {
      has_media: true,
      type: "image",
      media: { id: media.id, filename: media.filename, content_type: media.content_type, byte_size: mediaBytes.length },
      contact_name: contact.profile_name
    })
    const text = makeMessage(conversation, { contact_name: contact.profile_name })
    const messages = yield* MessagesRepo
    yield* messages.insert(withMedia)
    yield* messages.insert(text)
    yield* messages.recordStatuses([{
      phone_number_id: config.phone_number_id,
      network_id: text.network_id!,
      status: "read",
      timestamp: "1772600800",
      raw: { id: text.network_id, recipient_id: contact.wa_id, status: "read" },
      received_at: at(1)
    }])

    const workflow = makeWorkflow(projectId)
    yield* (yield* WorkflowsRepo).insert(workflow)
    const execution = makeExecution(workflow, {
      msg_conversation_id: conversation.id,
      msg_config_id: config.id,
      contact_id: contact.id,
      status: "waiting",
      execution_context: {
        vars: {},
        system: {},
        context: { phone_number: `+${contact.wa_id}`, contact: { name: contact.profile_name } },
        metadata: {}
      }
    })
    yield* (yield* ExecutionsRepo).insert(execution)
    const stepEvents = [
      makeStepEvent(execution, { seq: 1 }),
      makeStepEvent(execution, { seq: 2, payload: { node_type: "send_text", text: `Hi ${contact.profile_name}` } })
    ]
    yield* (yield* StepEventsRepo).append(stepEvents)
    const input = makeInput(projectId, { msg_config_id: config.id, contact_id: contact.id, conversation_id: conversation.id })
    yield* (yield* ExecutionInputsRepo).add(input)

    const event = makeEvent(projectId, { conversation_id: conversation.id, properties: { customer: contact.profile_name } })
    yield* (yield* EventsRepo).insert(event)

    const webhook = makeWebhook(projectId)
    yield* (yield* WebhooksRepo).insert(webhook)
    const delivery = makeDelivery(webhook, {
      body: Buffer.from(JSON.stringify({ conversation: { phone_number: contact.wa_id, contact_name: contact.profile_name } }))
        .toString("base64")
    })
    yield* (yield* WebhookDeliveriesRepo).insert(delivery, {
      delivery_id: delivery.id,
      attempt: 1,
      attempted_at: at(0),
      response_status: 500,
      duration_ms: 3,
      error: null
    })
    // Named by its business-scoped id only: found by the text of its items.
    const { buffer } = yield* (yield* WebhookBuffersRepo).append({
      id: uniqueId("buf"),
      project_id: projectId,
      webhook_id: webhook.id,
      conversation_key: conversation.id,
      event: "msg.message.received",
      items: [{ received_at: at(0), payload: { from: contact.business_scoped_user_id } }],
      payload_version: "v2",
      first_at: at(0),
      due_at: at(5_000),
      msg_config_id: config.id,
      phone_number_id: config.phone_number_id,
      conversation_phone_number: null
    }, { received_at: at(0), payload: { from: contact.business_scoped_user_id } }, 60_000)

    yield* (yield* Outbox).append({
      id: uniqueId("dom"),
      project_id: projectId,
      type: domainType,
      payload: { message: { from: contact.wa_id }, conversation: { contact_name: contact.profile_name } },
      created_at: at(0)
    })
    const inbox = { id: uniqueId("inbox"), msg_config_id: null, body: utf8(JSON.stringify({ contacts: [{ wa_id: contact.wa_id, profile: { name: contact.profile_name } }] })), signature: "sha256=00", received_at: at(0), fanned_out_at: at(0), processed_at: at(0), senders: [] }
    yield* (yield* UpstreamInboxRepo).insert(inbox)
    return { config, contact, conversation, media, messages: [withMedia, text], execution, stepEvents, input, event, delivery, buffer, inbox }
  })

type Rows = Effect.Success<ReturnType<typeof givenContactRows>>

/** Which of the rows of `rows` are still stored, by kind (the outbox entries are read by `remainingOutbox`). */
const remaining = (projectId: string, rows: Rows) =>
  Effect.gen(function*() {
    const some = <A>(o: Option.Option<A>): number => (Option.isSome(o) ? 1 : 0)
    const messages = yield* MessagesRepo
    const stepEvents = yield* StepEventsRepo
    const statusReports = yield* messages.statusEvents(rows.config.phone_number_id, rows.messages.map((m) => m.network_id!))
    const inputs = yield* (yield* ExecutionInputsRepo).list(rows.config.id, rows.contact.id, "buffered")
    const events = yield* (yield* EventsRepo).list(projectId, { conversation_id: rows.conversation.id }, { mode: "cursor", limit: 10 })
    const attempts = yield* (yield* WebhookDeliveriesRepo).attempts(rows.delivery.id)
    return {
      step_events: (yield* Effect.forEach(rows.stepEvents, (e) => stepEvents.find(projectId, e.id))).map(some).reduce((a, b) => a + b),
      executions: some(yield* (yield* ExecutionsRepo).get(rows.execution.id)) + inputs.length,
      project_events: events.items.length,
      webhook_deliveries: some(yield* (yield* WebhookDeliveriesRepo).findById(projectId, rows.delivery.id)) + attempts.length +
        some(yield* (yield* WebhookBuffersRepo).find(rows.buffer.id)),
      upstream_payloads: statusReports.length + some(yield* (yield* UpstreamInboxRepo).find(rows.inbox.id)),
      media: some(yield* (yield* MediaRepo).find(projectId, rows.media.id)),
      messages: (yield* Effect.forEach(rows.messages, (m) => messages.findById(projectId, m.id))).map(some).reduce((a, b) => a + b),
      conversations: some(yield* (yield* ConversationsRepo).findById(projectId, rows.conversation.id)),
      contact: some(yield* (yield* ContactsRepo).findById(projectId, rows.contact.id))
    }
  })

const all = {
  step_events: 2,
  executions: 2,
  project_events: 1,
  webhook_deliveries: 3,
  upstream_payloads: 2,
  media: 1,
  messages: 2,
  conversations: 1,
  contact: 1
}

const subjectOf = (projectId: string, contact: ContactRecord): ErasureSubject => ({
  project_id: projectId,
  contact_id: contact.id,
  target: {
    wa_id: contact.wa_id,
    business_scoped_user_id: contact.business_scoped_user_id,
    parent_business_scoped_user_id: contact.parent_business_scoped_user_id
  }
})

/** Calls `deletion` with `limit` until it answers less; answers every count it gave. */
const drain = (deletion: ErasureDeletion, subject: ErasureSubject, limit: number) =>
  Effect.gen(function*() {
    const counts: Array<number> = []
    for (;;) {
      const n = yield* deletion(subject, limit)
      counts.push(n)
      if (n < limit) return counts
    }
  })

export const contactErasureRepoConformance = <E>(name: string, storage: Layer.Layer<ContactErasureStoragePorts, E>): void =>
  layer(Layer.provideMerge(layerContactHoldings, storage), { excludeTestServices: true })(name, (it) => {
    it.effect("opens one unfinished erasure per contact, moves it through its steps and finishes it without its target", () =>
      Effect.gen(function*() {
        const repo = yield* ContactErasureRepo
        const project = yield* givenProject()
        const contact = makeContact(project.id)
        const first = makeErasure(project.id, contact)
        assert.deepStrictEqual(yield* repo.open(first), { record: first, created: true })
        const again = yield* repo.open(makeErasure(project.id, contact, { created_at: at(5) }))
        assert.deepStrictEqual(again, { record: first, created: false })
        assert.isTrue(yield* repo.reach(first.id, "media", at(10)))
        const running = { ...first, status: "running" as const, step: "media", updated_at: at(10) }
        assert.deepStrictEqual(yield* repo.find(first.id), Option.some(running))
        assert.isTrue((yield* repo.listUnfinished(10_000)).some((e) => e.id === first.id))

        yield* repo.finish(first.id, at(20))
        const done = { ...running, status: "done" as const, target: null, updated_at: at(20), finished_at: at(20) }
        assert.deepStrictEqual(yield* repo.find(first.id), Option.some(done))
        assert.isFalse(yield* repo.reach(first.id, "messages", at(30)))
        assert.isFalse(yield* repo.reach(uniqueId("missing"), "media", at(30)))
        assert.isFalse((yield* repo.listUnfinished(10_000)).some((e) => e.id === first.id))
        assert.isTrue(Option.isNone(yield* repo.find(uniqueId("missing"))))

        // Done: a new request of the same contact opens a new erasure.
        const second = makeErasure(project.id, contact, { created_at: at(40), updated_at: at(40) })
        assert.deepStrictEqual(yield* repo.open(second), { record: second, created: true })
      }))

    it.effect("lists unfinished erasures oldest first", () =>
      Effect.gen(function*() {
        const repo = yield* ContactErasureRepo
        const project = yield* givenProject()
        // An era of their own, before every other test's records.
        const later = makeErasure(project.id, makeContact(project.id), { created_at: "2001-01-01T00:00:02.000Z" })
        const earlier = makeErasure(project.id, makeContact(project.id), { created_at: "2001-01-01T00:00:01.000Z" })
        yield* repo.open(later)
        yield* repo.open(earlier)
        assert.deepStrictEqual((yield* repo.listUnfinished(2)).map((e) => e.id), [earlier.id, later.id])
      }))

    it.effect("each step removes the contact's rows only, limit rows at a time, and then finds nothing", () =>
      Effect.gen(function*() {
        const holdings = yield* ContactHoldings
        const project = yield* givenProject()
        const domainType = uniqueId("erasure.test")
        const erased = yield* givenContactRows(project.id, domainType, makeContact(project.id))
        const kept = yield* givenContactRows(project.id, domainType, makeContact(project.id))
        assert.deepStrictEqual(yield* remaining(project.id, erased), all)
        const subject = subjectOf(project.id, erased.contact)
        const steps: ReadonlyArray<readonly [keyof typeof all | "domain_events", ErasureDeletion]> = [
          ["step_events", holdings.deleteStepEvents],
          ["executions", holdings.deleteExecutions],
          ["project_events", holdings.deleteProjectEvents],
          ["webhook_deliveries", holdings.deleteDeliveries],
          ["domain_events", holdings.deleteDomainEvents],
          ["upstream_payloads", holdings.deleteUpstreamPayloads],
          ["media", holdings.deleteMedia],
          ["messages", holdings.deleteMessages],
          ["conversations", holdings.deleteConversations],
          ["contact", holdings.deleteContact]
        ]
        // Attempts go with their delivery, so that step counts deliveries and buffers.
        const removedRows = { ...all, webhook_deliveries: 2, domain_events: 1 }
        for (const [step, deletion] of steps) {
          const counts = yield* drain(deletion, subject, 1)
          assert.strictEqual(counts.reduce((a, b) => a + b), removedRows[step], step)
          assert.isTrue(counts.slice(0, -1).every((n) => n === 1), `${step} removes at most limit rows`)
          assert.strictEqual(yield* deletion(subject, 100), 0, `${step} again finds nothing`)
        }
        assert.deepStrictEqual(yield* remaining(project.id, erased), Object.fromEntries(Object.keys(all).map((k) => [k, 0])))
        assert.deepStrictEqual(yield* remaining(project.id, kept), all)
        const outbox = yield* (yield* Outbox).take([domainType], 10)
        assert.deepStrictEqual(outbox.map((e) => e.payload), [
          { message: { from: kept.contact.wa_id }, conversation: { contact_name: kept.contact.profile_name } }
        ])
      }))
  })
