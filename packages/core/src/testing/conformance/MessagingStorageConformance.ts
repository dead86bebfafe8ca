/**
 * The behaviour every adapter of the messaging ports (`MessageConfigsRepo`,
 * `ContactsRepo`, `ConversationsRepo`, `MessagesRepo`, `MediaRepo`,
 * `UpstreamInboxRepo`, `MessagingLocks`) owes, written once and run against
 * each adapter.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect, Exit, type Layer, Option, Redacted } from "effect"
import type {
  ContactRecord,
  ConversationRecord,
  InboxEntry,
  MessageRecord,
  StoredMedia
} from "../../messaging/Message.ts"
import { MessageConfigsRepo } from "../../messaging/numbers/MessageConfigsRepo.ts"
import {
  ContactsRepo,
  ConversationsRepo,
  MediaRepo,
  MessagesRepo,
  MessagingLocks,
  UpstreamInboxRepo
} from "../../messaging/MessagingRepo.ts"
import type { ProjectsRepo } from "../../projects/ProjectsRepo.ts"
import { Duplicate } from "../../ports/StorageError.ts"
import { Transactor } from "../../ports/Transactor.ts"
import type { ListWindow } from "../../shared/Pagination.ts"
import { emptyFacts, type MessageConfigRecord } from "../../messaging/numbers/MessageConfig.ts"
import { at, dies, givenProject, listenTo, uniqueId, waitsForHolder as waitsFor } from "./fixtures.ts"

export type MessagingStoragePorts =
  | Transactor
  | ProjectsRepo
  | MessageConfigsRepo
  | ContactsRepo
  | ConversationsRepo
  | MessagesRepo
  | MediaRepo
  | UpstreamInboxRepo
  | MessagingLocks

const digits = () => String(Math.floor(Math.random() * 1e12)).padStart(12, "1")

export const makeConfig = (projectId: string, overrides: Partial<MessageConfigRecord> = {}): MessageConfigRecord => ({
  id: uniqueId("cfg"),
  project_id: projectId,
  name: "Support line",
  display_name: "Acme Support",
  kind: "production",
  phone_number_id: `pn${digits()}`,
  business_account_id: `waba${digits()}`,
  display_phone_number: "+1 555-010-0001",
  display_phone_number_normalized: "15550100001",
  customer_id: null,
  inbound_processing_enabled: true,
  access_token: Redacted.make(`token-${crypto.randomUUID()}`),
  webhook_verify_token: null,
  app_secret: null,
  webhook_destination_url: null,
  facts: { ...emptyFacts, quality_rating: "GREEN", status: "CONNECTED", throughput_tier: "TIER_10K" },
  refreshed_at: at(0),
  webhook_verified_at: null,
  provisioned: false,
  deleted_at: null,
  created_at: at(0),
  updated_at: at(0),
  ...overrides
})

export const makeContact = (projectId: string, overrides: Partial<ContactRecord> = {}): ContactRecord => ({
  id: uniqueId("ct"),
  project_id: projectId,
  wa_id: digits(),
  business_scoped_user_id: `US.${digits()}${digits()}`,
  parent_business_scoped_user_id: null,
  username: null,
  profile_name: "Ada",
  created_at: at(0),
  updated_at: at(0),
  ...overrides
})

export const makeConversation = (
  config: MessageConfigRecord,
  contact: ContactRecord,
  overrides: Partial<ConversationRecord> = {}
): ConversationRecord => ({
  id: uniqueId("cv"),
  project_id: config.project_id,
  msg_config_id: config.id,
  phone_number_id: config.phone_number_id,
  contact_id: contact.id,
  phone_number: contact.wa_id,
  business_scoped_user_id: contact.business_scoped_user_id,
  parent_business_scoped_user_id: null,
  username: null,
  contact_name: contact.profile_name,
  status: "active",
  end_reason: null,
  ended_at: null,
  last_active_at: at(0),
  metadata: null,
  assigned_user_id: null,
  messages_count: 0,
  last_message_id: null,
  last_message_type: null,
  last_message_timestamp: null,
  last_message_text: null,
  last_inbound_at: null,
  last_outbound_at: null,
  created_at: at(0),
  updated_at: at(0),
  ...overrides
})

export const makeMessage = (
  conversation: ConversationRecord,
  overrides: Partial<MessageRecord> = {}
): MessageRecord => ({
  id: uniqueId("msg"),
  project_id: conversation.project_id,
  msg_config_id: conversation.msg_config_id,
  phone_number_id: conversation.phone_number_id,
  conversation_id: conversation.id,
  contact_id: conversation.contact_id,
  network_id: `wamid.${crypto.randomUUID()}`,
  direction: "inbound",
  type: "text",
  timestamp: "1772600767",
  fields: { from: conversation.phone_number, text: { body: "hi ☕" } },
  status: "delivered",
  processing_status: "completed",
  origin: null,
  has_media: false,
  content: "hi ☕",
  transcript: null,
  media: null,
  message_type_data: null,
  statuses: [],
  ext_data: {},
  contact_name: "Ada",
  phone_number: conversation.phone_number,
  created_at: at(0),
  updated_at: at(0),
  ...overrides
})

const ids = (items: ReadonlyArray<{ readonly id: string }>) => items.map((i) => i.id)

/** Answers "in no particular order" put in one: by id. */
const byId = <A extends { readonly id: string }>(items: ReadonlyArray<A>) =>
  [...items].sort((a, b) => a.id < b.id ? -1 : a.id > b.id ? 1 : 0)

const cursor = (limit: number, edge: { after?: { created_at: string; id: string }; before?: { created_at: string; id: string } } = {}): ListWindow => ({
  mode: "cursor",
  limit,
  after: edge.after && { sortKey: edge.after.created_at, id: edge.after.id },
  before: edge.before && { sortKey: edge.before.created_at, id: edge.before.id }
})

/** A project with one connected number, a contact and an active conversation. */
const givenConversation = Effect.gen(function*() {
  const project = yield* givenProject()
  const config = makeConfig(project.id)
  yield* (yield* MessageConfigsRepo).insert(config)
  const contact = makeContact(project.id)
  yield* (yield* ContactsRepo).insert(contact)
  const conversation = makeConversation(config, contact)
  yield* (yield* ConversationsRepo).insert(conversation)
  return { project, config, contact, conversation }
})

const secrets = (c: MessageConfigRecord) => ({
  access_token: Redacted.value(c.access_token),
  webhook_verify_token: c.webhook_verify_token === null ? null : Redacted.value(c.webhook_verify_token),
  app_secret: c.app_secret === null ? null : Redacted.value(c.app_secret),
  webhook_destination_url: c.webhook_destination_url === null ? null : Redacted.value(c.webhook_destination_url)
})

/** A config without its `Redacted` members (they compare by reference), and those members revealed. */
const comparable = (c: MessageConfigRecord) => {
  const { access_token: _a, app_secret: _b, webhook_destination_url: _c, webhook_verify_token: _d, ...rest } = c
  return { ...rest, ...secrets(c) }
}

const randomBytes = (n: number) => {
  const bytes = new Uint8Array(n)
  for (let offset = 0; offset < n; offset += 65536) crypto.getRandomValues(bytes.subarray(offset, Math.min(n, offset + 65536)))
  return bytes
}

export const messagingStorageConformance = <E>(name: string, storage: Layer.Layer<MessagingStoragePorts, E>): void => {
  describe(name, () => {
    layer(storage, { excludeTestServices: true })("MessageConfigsRepo", (it) => {
      it.effect("stores a config with its credentials and finds it by id, number and account", () =>
        Effect.gen(function*() {
          const repo = yield* MessageConfigsRepo
          const a = yield* givenProject()
          const b = yield* givenProject()
          const config = makeConfig(a.id, {
            webhook_verify_token: Redacted.make("verify-me"),
            app_secret: Redacted.make("app-secret"),
            webhook_destination_url: Redacted.make("https://example.com/hook?x=1"),
            customer_id: "0f8fad5b-d9cb-469f-a165-70867728950e",
            facts: { ...emptyFacts, verified_name: "Acme ☕", is_coexistence: false, quality_rating: "YELLOW" }
          })
          yield* repo.insert(config)
          const found = yield* repo.findById(a.id, config.id)
          assert.isTrue(Option.isSome(found))
          assert.deepStrictEqual(comparable(Option.getOrThrow(found)), comparable(config))
          assert.isTrue(Option.isNone(yield* repo.findById(b.id, config.id)), "another project's id is unknown")
          assert.deepStrictEqual(Option.map(yield* repo.findLiveById(config.id), (c) => c.id), Option.some(config.id))
          assert.deepStrictEqual(
            Option.map(yield* repo.findByPhoneNumberId(config.phone_number_id), (c) => c.id),
            Option.some(config.id)
          )
          const sibling = makeConfig(b.id, { business_account_id: config.business_account_id, created_at: at(5) })
          yield* repo.insert(sibling)
          assert.deepStrictEqual(ids(yield* repo.listByBusinessAccount(config.business_account_id)), [config.id, sibling.id])
        }))

      it.effect("keeps whether the service provisioned the number as it was created; updates never change it", () =>
        Effect.gen(function*() {
          const repo = yield* MessageConfigsRepo
          const project = yield* givenProject()
          const provisioned = makeConfig(project.id, { provisioned: true })
          yield* repo.insert(provisioned)
          yield* repo.insert(makeConfig(project.id))
          assert.isTrue(Option.getOrThrow(yield* repo.findById(project.id, provisioned.id)).provisioned)
          const updated = yield* repo.update({ ...provisioned, provisioned: false, name: "Renamed", updated_at: at(9) })
          assert.isTrue(Option.getOrThrow(updated).provisioned)
          assert.isTrue(Option.getOrThrow(yield* repo.findLiveById(provisioned.id)).provisioned)
          const deleted = yield* repo.markDeleted(project.id, provisioned.id, at(10))
          assert.isTrue(Option.getOrThrow(deleted).provisioned)
        }))

      it.effect("lists live provisioned production configs without a message since a time, of any project", () =>
        Effect.gen(function*() {
          const repo = yield* MessageConfigsRepo
          const project = yield* givenProject()
          const idle = makeConfig(project.id, { provisioned: true, created_at: at(0) })
          const busy = makeConfig(project.id, { provisioned: true, created_at: at(0) })
          const brought = makeConfig(project.id, { created_at: at(0) })
          const young = makeConfig(project.id, { provisioned: true, created_at: at(100) })
          const gone = makeConfig(project.id, { provisioned: true, created_at: at(0) })
          for (const config of [idle, busy, brought, young, gone]) yield* repo.insert(config)
          yield* repo.markDeleted(project.id, gone.id, at(1))
          const contact = makeContact(project.id)
          yield* (yield* ContactsRepo).insert(contact)
          const messages = yield* MessagesRepo
          for (const [config, sentAt] of [[idle, 10], [busy, 60]] as const) {
            const conversation = makeConversation(config, contact)
            yield* (yield* ConversationsRepo).insert(conversation)
            yield* messages.insert(makeMessage(conversation, { created_at: at(sentAt) }))
          }
          const listed = (yield* repo.listIdleProvisioned(at(50), 10_000)).filter((c) => c.project_id === project.id)
          assert.deepStrictEqual(listed.map((c) => c.id), [idle.id])
          assert.strictEqual(Redacted.value(listed[0]!.access_token), Redacted.value(idle.access_token))
        }))

      it.effect("keeps a number on one live config across the host; a disconnected one frees it", () =>
        Effect.gen(function*() {
          const repo = yield* MessageConfigsRepo
          const a = yield* givenProject()
          const b = yield* givenProject()
          const config = makeConfig(a.id)
          yield* repo.insert(config)
          const clash = yield* Effect.flip(repo.insert(makeConfig(b.id, { phone_number_id: config.phone_number_id })))
          assert.deepStrictEqual(clash, new Duplicate({ field: "phone_number_id" }))
          assert.isTrue(Option.isNone(yield* repo.markDeleted(b.id, config.id, at(10))), "only its project disconnects it")
          const deleted = yield* repo.markDeleted(a.id, config.id, at(10))
          assert.strictEqual(Option.getOrThrow(deleted).deleted_at, at(10))
          assert.isTrue(Option.isNone(yield* repo.markDeleted(a.id, config.id, at(11))))
          assert.isTrue(Option.isNone(yield* repo.findById(a.id, config.id)))
          assert.isTrue(Option.isNone(yield* repo.findLiveById(config.id)))
          assert.isTrue(Option.isNone(yield* repo.findByPhoneNumberId(config.phone_number_id)))
          assert.deepStrictEqual(yield* repo.listByBusinessAccount(config.business_account_id), [])
          const again = makeConfig(b.id, { phone_number_id: config.phone_number_id })
          yield* repo.insert(again)
          assert.deepStrictEqual(Option.map(yield* repo.findByPhoneNumberId(config.phone_number_id), (c) => c.id), Option.some(again.id))
          assert.isTrue(Option.isNone(yield* repo.update({ ...config, name: "ghost" })), "a disconnected config stays as it was")
        }))

      it.effect("updates every field but identity, project and creation time", () =>
        Effect.gen(function*() {
          const repo = yield* MessageConfigsRepo
          const project = yield* givenProject()
          const other = yield* givenProject()
          const config = makeConfig(project.id)
          const taken = makeConfig(project.id)
          yield* repo.insert(config)
          yield* repo.insert(taken)
          const changed: MessageConfigRecord = {
            ...config,
            project_id: other.id,
            name: "Renamed",
            kind: "sandbox",
            access_token: Redacted.make("new-token"),
            app_secret: Redacted.make("s3cret"),
            inbound_processing_enabled: false,
            facts: { ...config.facts, quality_rating: "RED" },
            webhook_verified_at: at(50),
            created_at: at(99),
            updated_at: at(60)
          }
          assert.isTrue(Option.isNone(yield* repo.update(changed)), "the project is part of the key")
          const stored = Option.getOrThrow(yield* repo.update({ ...changed, project_id: project.id }))
          assert.deepStrictEqual(comparable(stored), comparable({ ...changed, project_id: project.id, created_at: config.created_at }))
          const clash = yield* Effect.flip(repo.update({ ...stored, phone_number_id: taken.phone_number_id }))
          assert.deepStrictEqual(clash, new Duplicate({ field: "phone_number_id" }))
        }))

      it.effect("lists a project's live configs newest first, with filters and both paging modes", () =>
        Effect.gen(function*() {
          const repo = yield* MessageConfigsRepo
          const project = yield* givenProject()
          const c1 = makeConfig(project.id, { created_at: at(1) })
          const c2 = makeConfig(project.id, { created_at: at(2), kind: "sandbox" })
          const c3 = makeConfig(project.id, { created_at: at(3), customer_id: "cust-1" })
          const gone = makeConfig(project.id, { created_at: at(4) })
          for (const c of [c2, c1, gone, c3]) yield* repo.insert(c)
          yield* repo.markDeleted(project.id, gone.id, at(5))
          const list = (filter: Parameters<MessageConfigsRepo["Service"]["list"]>[1], window: ListWindow = cursor(10)) =>
            repo.list(project.id, filter, window)
          assert.deepStrictEqual(ids((yield* list({})).items), ids([c3, c2, c1]))
          assert.deepStrictEqual(ids((yield* list({ kind: "sandbox" })).items), ids([c2]))
          assert.deepStrictEqual(ids((yield* list({ customer_id: "cust-1" })).items), ids([c3]))
          const first = yield* list({}, cursor(2))
          assert.deepStrictEqual([ids(first.items), first.hasMore], [ids([c3, c2]), true])
          const next = yield* list({}, cursor(2, { after: c2 }))
          assert.deepStrictEqual([ids(next.items), next.hasMore], [ids([c1]), false])
          const back = yield* list({}, cursor(2, { before: c1 }))
          assert.deepStrictEqual(ids(back.items), ids([c3, c2]))
          const page = yield* list({}, { mode: "page", page: 2, perPage: 2 })
          assert.deepStrictEqual([ids(page.items), page.total], [ids([c1]), 3])
        }))

      it.effect("signals each connection, update and disconnection once it is done", () =>
        Effect.gen(function*() {
          const repo = yield* MessageConfigsRepo
          const project = yield* givenProject()
          const config = makeConfig(project.id)
          const signals = yield* listenTo(repo.changes)
          yield* repo.insert(config)
          yield* signals.next
          yield* repo.update({ ...config, name: "Sales line", updated_at: at(1) })
          yield* signals.next
          yield* repo.markDeleted(project.id, config.id, at(2))
          yield* signals.next
          yield* signals.stop
        }))

      it.effect("refuses a config of an unknown project", () =>
        Effect.gen(function*() {
          yield* dies((yield* MessageConfigsRepo).insert(makeConfig(uniqueId("nobody"))))
        }))
    })

    layer(storage, { excludeTestServices: true })("ContactsRepo", (it) => {
      it.effect("finds contacts by id, phone number, business-scoped id and parent id, per project", () =>
        Effect.gen(function*() {
          const repo = yield* ContactsRepo
          const a = yield* givenProject()
          const b = yield* givenProject()
          const contact = makeContact(a.id, { parent_business_scoped_user_id: "US.ENT.parent1", username: "ada" })
          const onlyScoped = makeContact(a.id, { wa_id: null, profile_name: null })
          yield* repo.insert(contact)
          yield* repo.insert(onlyScoped)
          // The same phone number in another project is another contact.
          const twin = makeContact(b.id, { wa_id: contact.wa_id, business_scoped_user_id: contact.business_scoped_user_id })
          yield* repo.insert(twin)
          assert.deepStrictEqual(yield* repo.findById(a.id, contact.id), Option.some(contact))
          assert.isTrue(Option.isNone(yield* repo.findById(b.id, contact.id)))
          assert.deepStrictEqual(yield* repo.findByWaId(a.id, contact.wa_id!), Option.some(contact))
          assert.deepStrictEqual(yield* repo.findByWaId(b.id, contact.wa_id!), Option.some(twin))
          assert.deepStrictEqual(yield* repo.findByUserId(a.id, contact.business_scoped_user_id!), Option.some(contact))
          assert.deepStrictEqual(yield* repo.findByUserId(a.id, "US.ENT.parent1"), Option.some(contact))
          assert.deepStrictEqual(yield* repo.findByUserId(a.id, onlyScoped.business_scoped_user_id!), Option.some(onlyScoped))
          assert.isTrue(Option.isNone(yield* repo.findByUserId(a.id, "US.000")))
          // Both lookups at once, each as its own method answers.
          assert.deepStrictEqual(
            yield* repo.findByIdentity(a.id, contact.wa_id!, onlyScoped.business_scoped_user_id!),
            { byPhone: Option.some(contact), byUser: Option.some(onlyScoped) }
          )
          assert.deepStrictEqual(
            yield* repo.findByIdentity(a.id, "10000000000", "US.ENT.parent1"),
            { byPhone: Option.none(), byUser: Option.some(contact) }
          )
          assert.deepStrictEqual(
            yield* repo.findByIdentity(b.id, contact.wa_id!, undefined),
            { byPhone: Option.some(twin), byUser: Option.none() }
          )
          assert.deepStrictEqual(
            yield* repo.findByIdentity(a.id, undefined, contact.business_scoped_user_id!),
            { byPhone: Option.none(), byUser: Option.some(contact) }
          )
        }))

      it.effect("updates identity and profile, and refuses a second contact with one phone number", () =>
        Effect.gen(function*() {
          const repo = yield* ContactsRepo
          const project = yield* givenProject()
          const contact = makeContact(project.id, { wa_id: null })
          yield* repo.insert(contact)
          const learnt = { ...contact, wa_id: "4915112345678", profile_name: "Ada L.", updated_at: at(9), created_at: at(99) }
          yield* repo.update(learnt)
          assert.deepStrictEqual(yield* repo.findById(project.id, contact.id), Option.some({ ...learnt, created_at: contact.created_at }))
          yield* dies(repo.insert(makeContact(project.id, { wa_id: "4915112345678" })))
          yield* dies(repo.insert(makeContact(project.id, { business_scoped_user_id: contact.business_scoped_user_id })))
        }))

      it.effect("lists contacts newest first, of one number or phone number", () =>
        Effect.gen(function*() {
          const { config, contact, project } = yield* givenConversation
          const repo = yield* ContactsRepo
          const other = makeContact(project.id, { created_at: at(5) })
          yield* repo.insert(other)
          assert.deepStrictEqual(ids((yield* repo.list(project.id, {}, cursor(10))).items), ids([other, contact]))
          assert.deepStrictEqual(ids((yield* repo.list(project.id, { msg_config_id: config.id }, cursor(10))).items), ids([contact]))
          assert.deepStrictEqual(ids((yield* repo.list(project.id, { wa_id: other.wa_id! }, cursor(10))).items), ids([other]))
          const page = yield* repo.list(project.id, {}, { mode: "page", page: 1, perPage: 1 })
          assert.deepStrictEqual([ids(page.items), page.total], [ids([other]), 2])
        }))

      it.effect("inserts several contacts in one step and finds a project's contacts by phone numbers", () =>
        Effect.gen(function*() {
          const repo = yield* ContactsRepo
          const a = yield* givenProject()
          const b = yield* givenProject()
          const first = makeContact(a.id, { username: "ada" })
          const second = makeContact(a.id, { created_at: at(5) })
          const noPhone = makeContact(a.id, { wa_id: null })
          yield* repo.insertMany([first, second, noPhone])
          yield* repo.insertMany([])
          const twin = makeContact(b.id, { wa_id: first.wa_id })
          yield* repo.insert(twin)
          assert.deepStrictEqual(
            byId(yield* repo.findByWaIds(a.id, [second.wa_id!, first.wa_id!, "10000000000", first.wa_id!])),
            byId([first, second])
          )
          assert.deepStrictEqual(yield* repo.findByWaIds(b.id, [first.wa_id!, second.wa_id!]), [twin])
          assert.deepStrictEqual(yield* repo.findByWaIds(a.id, []), [])
          assert.deepStrictEqual(yield* repo.findById(a.id, noPhone.id), Option.some(noPhone))
        }))

      it.effect("finds a contact by phone number, else by business-scoped or parent id, or inserts it, in one step", () =>
        Effect.gen(function*() {
          const repo = yield* ContactsRepo
          const a = yield* givenProject()
          const b = yield* givenProject()
          const known = makeContact(a.id, { parent_business_scoped_user_id: "US.ENT.parent2" })
          yield* repo.insert(known)
          // The same phone number: the stored contact, nothing inserted.
          const again = makeContact(a.id, { wa_id: known.wa_id })
          assert.deepStrictEqual(yield* repo.findOrInsert(again), { contact: known, made: false })
          assert.isTrue(Option.isNone(yield* repo.findById(a.id, again.id)))
          // Another project's phone number is another contact.
          const twin = makeContact(b.id, { wa_id: known.wa_id, business_scoped_user_id: null })
          assert.deepStrictEqual(yield* repo.findOrInsert(twin), { contact: twin, made: true })
          assert.deepStrictEqual(yield* repo.findByWaId(b.id, known.wa_id!), Option.some(twin))
          assert.deepStrictEqual(yield* repo.findOrInsert(makeContact(b.id, { wa_id: known.wa_id })), { contact: twin, made: false })
          // Without a phone number: by business-scoped id, then by parent id.
          const byUser = makeContact(a.id, { wa_id: null, business_scoped_user_id: known.business_scoped_user_id })
          assert.deepStrictEqual(yield* repo.findOrInsert(byUser), { contact: known, made: false })
          const byParent = makeContact(a.id, { wa_id: null, business_scoped_user_id: "US.ENT.parent2" })
          assert.deepStrictEqual(yield* repo.findOrInsert(byParent), { contact: known, made: false })
          const scoped = makeContact(a.id, { wa_id: null })
          assert.deepStrictEqual(yield* repo.findOrInsert(scoped), { contact: scoped, made: true })
          assert.deepStrictEqual(yield* repo.findByUserId(a.id, scoped.business_scoped_user_id!), Option.some(scoped))
        }))

      it.effect("refuses a batch of contacts that takes a phone number, storing none of it", () =>
        Effect.gen(function*() {
          const repo = yield* ContactsRepo
          const project = yield* givenProject()
          const taken = makeContact(project.id)
          yield* repo.insert(taken)
          const fresh = makeContact(project.id)
          yield* dies(repo.insertMany([fresh, makeContact(project.id, { wa_id: taken.wa_id })]))
          yield* dies(repo.insertMany([fresh, makeContact(project.id, { wa_id: fresh.wa_id })]))
          assert.isTrue(Option.isNone(yield* repo.findById(project.id, fresh.id)))
        }))
    })

    layer(storage, { excludeTestServices: true })("ConversationsRepo", (it) => {
      it.effect("keeps one active conversation per number and contact; an ended one makes room", () =>
        Effect.gen(function*() {
          const repo = yield* ConversationsRepo
          const { config, contact, conversation, project } = yield* givenConversation
          assert.deepStrictEqual(yield* repo.findActive(config.id, contact.id), Option.some(conversation))
          assert.deepStrictEqual(yield* repo.findById(project.id, conversation.id), Option.some(conversation))
          yield* dies(repo.insert(makeConversation(config, contact)))
          const ended: ConversationRecord = {
            ...conversation,
            status: "ended",
            end_reason: "inactivity",
            ended_at: at(100),
            metadata: { tier: "gold", nested: { ok: true } },
            messages_count: 3,
            last_message_id: "wamid.x",
            last_message_type: "text",
            last_message_timestamp: "1772600767",
            last_message_text: "bye",
            last_inbound_at: at(40),
            last_outbound_at: at(50),
            last_active_at: at(50),
            updated_at: at(100)
          }
          yield* repo.update(ended)
          assert.deepStrictEqual(yield* repo.findById(project.id, conversation.id), Option.some(ended))
          assert.isTrue(Option.isNone(yield* repo.findActive(config.id, contact.id)))
          const next = makeConversation(config, contact, { created_at: at(200) })
          yield* repo.insert(next)
          assert.deepStrictEqual(Option.map(yield* repo.findActive(config.id, contact.id), (c) => c.id), Option.some(next.id))
          yield* dies(repo.update({ ...ended, status: "active" }))
        }))

      it.effect("lists with filters newest first, and finds idle conversations across projects", () =>
        Effect.gen(function*() {
          const repo = yield* ConversationsRepo
          const { config, contact, conversation, project } = yield* givenConversation
          const contacts = yield* ContactsRepo
          const second = makeContact(project.id)
          yield* contacts.insert(second)
          const assigned = makeConversation(config, second, {
            created_at: at(10),
            last_active_at: at(30),
            assigned_user_id: "agent-1"
          })
          yield* repo.insert(assigned)
          const list = (filter: Parameters<ConversationsRepo["Service"]["list"]>[1]) =>
            Effect.map(repo.list(project.id, filter, cursor(10)), (s) => ids(s.items))
          assert.deepStrictEqual(yield* list({}), ids([assigned, conversation]))
          assert.deepStrictEqual(yield* list({ msg_config_id: config.id, status: "active" }), ids([assigned, conversation]))
          assert.deepStrictEqual(yield* list({ status: "ended" }), [])
          assert.deepStrictEqual(yield* list({ phone_number: contact.wa_id! }), ids([conversation]))
          assert.deepStrictEqual(yield* list({ assigned_user_id: "agent-1" }), ids([assigned]))
          assert.deepStrictEqual(yield* list({ unassigned: true }), ids([conversation]))
          assert.deepStrictEqual(yield* list({ last_active_since: at(30) }), ids([assigned]))
          assert.deepStrictEqual(yield* list({ last_active_until: at(0) }), ids([conversation]))
          const idle = yield* repo.listIdle(at(31), 1000)
          const mine = idle.filter((c) => c.project_id === project.id)
          assert.deepStrictEqual(ids(mine), ids([conversation, assigned]), "stalest first")
          assert.deepStrictEqual(ids((yield* repo.listIdle(at(30), 1000)).filter((c) => c.project_id === project.id)), ids([conversation]))
        }))

      it.effect("finds the idle conversations behind a whole batch that spoke since it was last looked at", () =>
        Effect.gen(function*() {
          const repo = yield* ConversationsRepo
          const { config, project } = yield* givenConversation
          // Long before every other test's records, so that no other conversation is idle this early.
          const t = (ms: number) => at(-1_000_000_000_000 + ms)
          const open = (activeAt: string) =>
            Effect.gen(function*() {
              const contact = makeContact(project.id)
              yield* (yield* ContactsRepo).insert(contact)
              const conversation = makeConversation(config, contact, { last_active_at: activeAt, created_at: activeAt })
              yield* repo.insert(conversation)
              return conversation
            })
          const spoke = []
          for (let i = 0; i < 3; i++) {
            const c = yield* open(t(0))
            const moved = { ...c, last_active_at: t(100), messages_count: 1 }
            yield* repo.update(moved)
            spoke.push(moved)
          }
          const silent = yield* open(t(10))
          // A batch of two finds only conversations that spoke since: the idle one behind them is still found.
          assert.deepStrictEqual(ids(yield* repo.listIdle(t(50), 2)), ids([silent]))
          assert.deepStrictEqual(ids(yield* repo.listIdle(t(50), 2)), ids([silent]), "asked again, the same answer")
          const later = yield* repo.listIdle(t(200), 10)
          assert.deepStrictEqual(ids(later), ids([silent, ...[...spoke].sort((a, b) => (a.id < b.id ? -1 : 1))]), "stalest first")
          // An ended conversation is never idle, nor is one reopened since.
          yield* repo.update({ ...silent, status: "ended", end_reason: "manual", ended_at: t(20) })
          assert.deepStrictEqual(ids(yield* repo.listIdle(t(50), 10)), [])
          yield* repo.update({ ...silent, last_active_at: t(300) })
          assert.deepStrictEqual(ids(yield* repo.listIdle(t(301), 10)).includes(silent.id), true)
        }))

      it.effect("inserts several conversations in one step and finds them by ids and by (number, contact)", () =>
        Effect.gen(function*() {
          const repo = yield* ConversationsRepo
          const { config, contact, conversation, project } = yield* givenConversation
          const other = yield* givenConversation
          const [c2, c3] = [makeContact(project.id), makeContact(project.id)]
          yield* (yield* ContactsRepo).insertMany([c2, c3])
          const second = makeConversation(config, c2, { metadata: { tier: "gold" }, messages_count: 2, last_inbound_at: at(3) })
          const ended = makeConversation(config, c3, { status: "ended", end_reason: "inactivity", ended_at: at(9) })
          yield* repo.insertMany([second, ended])
          yield* repo.insertMany([])
          assert.deepStrictEqual(
            byId(yield* repo.findByIds(project.id, [ended.id, second.id, conversation.id, other.conversation.id, "cv_none"])),
            byId([conversation, second, ended]),
            "another project's conversations are unknown"
          )
          assert.deepStrictEqual(yield* repo.findByIds(project.id, []), [])
          const active = yield* repo.findActiveMany([
            { msgConfigId: config.id, contactId: contact.id },
            { msgConfigId: config.id, contactId: c2.id },
            { msgConfigId: config.id, contactId: c3.id },
            { msgConfigId: config.id, contactId: contact.id },
            { msgConfigId: other.config.id, contactId: contact.id },
            { msgConfigId: other.config.id, contactId: other.contact.id }
          ])
          assert.deepStrictEqual(byId(active), byId([conversation, second, other.conversation]), "each once, ended ones left out")
          assert.deepStrictEqual(yield* repo.findActiveMany([]), [])
        }))

      it.effect("refuses a batch with a second active conversation of one (number, contact), storing none of it", () =>
        Effect.gen(function*() {
          const repo = yield* ConversationsRepo
          const { config, contact, project } = yield* givenConversation
          const fresh = makeContact(project.id)
          yield* (yield* ContactsRepo).insert(fresh)
          const ok = makeConversation(config, fresh)
          yield* dies(repo.insertMany([ok, makeConversation(config, contact)]))
          yield* dies(repo.insertMany([ok, makeConversation(config, fresh)]))
          assert.deepStrictEqual(yield* repo.findByIds(project.id, [ok.id]), [])
        }))

      it.effect("updates several conversations in one step, each as update does", () =>
        Effect.gen(function*() {
          const repo = yield* ConversationsRepo
          const { config, contact, conversation, project } = yield* givenConversation
          const other = yield* givenProject()
          const contact2 = makeContact(project.id)
          yield* (yield* ContactsRepo).insert(contact2)
          const second = makeConversation(config, contact2)
          yield* repo.insert(second)
          const ended: ConversationRecord = {
            ...conversation,
            status: "ended",
            end_reason: "inactivity",
            ended_at: at(100),
            metadata: { nested: { ok: true } },
            messages_count: 3,
            last_message_text: "bye",
            last_outbound_at: at(50),
            created_at: at(99),
            updated_at: at(100)
          }
          const busy: ConversationRecord = { ...second, messages_count: 7, assigned_user_id: "agent-1", updated_at: at(20) }
          yield* repo.updateMany([
            { ...ended, messages_count: 1 },
            { ...second, project_id: other.id, contact_name: "not mine" },
            ended,
            busy
          ])
          yield* repo.updateMany([])
          assert.deepStrictEqual(
            byId(yield* repo.findByIds(project.id, [conversation.id, second.id])),
            byId([{ ...ended, created_at: conversation.created_at }, busy]),
            "the last of one id wins; the project is part of the key"
          )
          // A reopened conversation clashing with an active one fails the whole batch.
          yield* repo.insert(makeConversation(config, contact))
          yield* dies(repo.updateMany([{ ...busy, messages_count: 8 }, { ...ended, status: "active" }]))
          assert.deepStrictEqual(yield* repo.findById(project.id, second.id), Option.some(busy))
        }))

      it.effect("gives a send's network id to the conversations whose latest message it still is", () =>
        Effect.gen(function*() {
          const repo = yield* ConversationsRepo
          const { config, conversation, project } = yield* givenConversation
          const other = yield* givenProject()
          const contacts = yield* ContactsRepo
          const make = (overrides: Partial<ConversationRecord>) =>
            Effect.gen(function*() {
              const contact = makeContact(project.id)
              yield* contacts.insert(contact)
              const made = makeConversation(config, contact, overrides)
              yield* repo.insert(made)
              return made
            })
          const latest = { ...conversation, last_message_id: null, last_message_timestamp: "100" }
          yield* repo.update(latest)
          const newer = yield* make({ last_message_id: null, last_message_timestamp: "200" })
          const named = yield* make({ last_message_id: "wamid.inbound", last_message_timestamp: "100" })
          const update = (id: string, networkId: string, projectId = project.id) => ({
            projectId,
            id,
            timestamp: "100",
            networkId,
            at: at(5)
          })
          yield* repo.setLastMessageIds([
            update(latest.id, "wamid.A"),
            update(newer.id, "wamid.B"),
            update(named.id, "wamid.C"),
            update(latest.id, "wamid.D", other.id)
          ])
          yield* repo.setLastMessageIds([])
          assert.deepStrictEqual(
            byId(yield* repo.findByIds(project.id, [latest.id, newer.id, named.id])),
            byId([{ ...latest, last_message_id: "wamid.A", updated_at: at(5) }, newer, named]),
            "only a conversation whose latest message is that send, and only the project's"
          )
        }))
    })

    layer(storage, { excludeTestServices: true })("MessagesRepo", (it) => {
      it.effect("stores a message its caller found new; a duplicate network id after all is a defect", () =>
        Effect.gen(function*() {
          const repo = yield* MessagesRepo
          const { conversation, project } = yield* givenConversation
          const message = makeMessage(conversation)
          yield* repo.insertNew(message)
          assert.deepStrictEqual(yield* repo.findById(project.id, message.id), Option.some(message))
          const again = { ...message, id: uniqueId("msg") }
          yield* dies(repo.insertNew(again))
          assert.isTrue(Option.isNone(yield* repo.findById(project.id, again.id)))
        }))

      it.effect("stores a message once per network id on a number; finds it by either id", () =>
        Effect.gen(function*() {
          const repo = yield* MessagesRepo
          const { conversation, project } = yield* givenConversation
          const message = makeMessage(conversation, {
            message_type_data: { caption: "x" },
            ext_data: { order_text: "1 x A" },
            media: { id: "m1", filename: "a.jpg", content_type: "image/jpeg", byte_size: 12 },
            fields: { from: "1", text: { body: "naïve ☕" }, context: { id: "wamid.prev" } }
          })
          assert.isTrue(yield* repo.insert(message))
          assert.isFalse(yield* repo.insert({ ...message, id: uniqueId("msg") }), "a duplicate delivery stores nothing")
          assert.deepStrictEqual(yield* repo.findById(project.id, message.id), Option.some(message))
          assert.deepStrictEqual(yield* repo.findByNetworkId(conversation.phone_number_id, message.network_id!), Option.some(message))
          assert.isTrue(Option.isNone(yield* repo.findByNetworkId("other-number", message.network_id!)))
          // Sends the network has not answered yet have no network id, and never collide.
          assert.isTrue(yield* repo.insert(makeMessage(conversation, { network_id: null, direction: "outbound" })))
          assert.isTrue(yield* repo.insert(makeMessage(conversation, { network_id: null, direction: "outbound" })))
          const updated: MessageRecord = {
            ...message,
            status: "read",
            statuses: [{ id: message.network_id, status: "read", timestamp: "1772600800" }],
            processing_status: "blocked",
            direction: "outbound",
            created_at: at(77),
            updated_at: at(8)
          }
          yield* repo.update(updated)
          assert.deepStrictEqual(
            yield* repo.findById(project.id, message.id),
            Option.some({ ...updated, direction: message.direction, created_at: message.created_at })
          )
        }))

      it.effect("lists newest first with every filter, since/until inclusive, and cursors both ways", () =>
        Effect.gen(function*() {
          const repo = yield* MessagesRepo
          const { conversation, project } = yield* givenConversation
          const m1 = makeMessage(conversation, { created_at: at(1000) })
          const m2 = makeMessage(conversation, { created_at: at(2000), direction: "outbound", status: "sent", origin: "api" })
          const m3 = makeMessage(conversation, { created_at: at(2000), type: "image", has_media: true })
          const m4 = makeMessage(conversation, { created_at: at(3000), status: "read", phone_number: "999" })
          for (const m of [m3, m1, m4, m2]) yield* repo.insert(m)
          const newestFirst = [m4, ...(m3.id > m2.id ? [m3, m2] : [m2, m3]), m1]
          const list = (filter: Parameters<MessagesRepo["Service"]["list"]>[1]) =>
            Effect.map(repo.list(project.id, filter, cursor(10)), (s) => ids(s.items))
          assert.deepStrictEqual(yield* list({}), ids(newestFirst))
          assert.deepStrictEqual(yield* list({ conversation_id: conversation.id }), ids(newestFirst))
          assert.deepStrictEqual(yield* list({ direction: "outbound" }), ids([m2]))
          assert.deepStrictEqual(yield* list({ status: "read" }), ids([m4]))
          assert.deepStrictEqual(yield* list({ since: at(2000), until: at(2000) }), ids(newestFirst.slice(1, 3)))
          assert.deepStrictEqual(yield* list({ since: at(2001) }), ids([m4]))
          assert.deepStrictEqual(yield* list({ until: at(1999) }), ids([m1]))
          assert.deepStrictEqual(yield* list({ has_media: true }), ids([m3]))
          assert.deepStrictEqual(yield* list({ type: "image" }), ids([m3]))
          assert.deepStrictEqual(yield* list({ phone_number: "999" }), ids([m4]))
          assert.deepStrictEqual(yield* list({ msg_config_id: "another" }), [])
          const first = yield* repo.list(project.id, {}, cursor(2))
          assert.deepStrictEqual([ids(first.items), first.hasMore], [ids(newestFirst.slice(0, 2)), true])
          const after = yield* repo.list(project.id, {}, cursor(2, { after: newestFirst[1] }))
          assert.deepStrictEqual([ids(after.items), after.hasMore], [ids(newestFirst.slice(2)), false])
          const before = yield* repo.list(project.id, {}, cursor(2, { before: newestFirst[2] }))
          assert.deepStrictEqual(ids(before.items), ids(newestFirst.slice(0, 2)))
          const page = yield* repo.list(project.id, {}, { mode: "page", page: 2, perPage: 3 })
          assert.deepStrictEqual([ids(page.items), page.total], [ids([m1]), 4])
          assert.deepStrictEqual((yield* repo.list((yield* givenProject()).id, {}, cursor(10))).items, [])
        }))

      it.effect("inserts several messages in one step, answering in order which were stored", () =>
        Effect.gen(function*() {
          const repo = yield* MessagesRepo
          const { conversation, project } = yield* givenConversation
          const elsewhere = yield* givenConversation
          const kept = makeMessage(conversation)
          yield* repo.insert(kept)
          const a = makeMessage(conversation, { media: { id: "m1", filename: "a.jpg", content_type: "image/jpeg", byte_size: 12 }, message_type_data: { caption: "x" }, has_media: true })
          const b = makeMessage(conversation, { direction: "outbound", status: "sent", origin: "api", created_at: at(5) })
          const again = makeMessage(conversation, { network_id: kept.network_id })
          const twice = makeMessage(conversation, { network_id: a.network_id })
          const pending = [1, 2].map(() => makeMessage(conversation, { network_id: null, direction: "outbound" }))
          const otherNumber = makeMessage(elsewhere.conversation, { network_id: a.network_id })
          const batch = [a, again, b, twice, ...pending, otherNumber]
          assert.deepStrictEqual(
            yield* repo.insertMany(batch),
            [true, false, true, false, true, true, true],
            "a network id stored before or earlier in the call stores nothing; none never collides"
          )
          assert.deepStrictEqual(yield* repo.insertMany([]), [])
          assert.isTrue(Option.isNone(yield* repo.findById(project.id, again.id)))
          assert.isTrue(Option.isNone(yield* repo.findById(project.id, twice.id)))
          assert.deepStrictEqual(yield* repo.findById(project.id, pending[1]!.id), Option.some(pending[1]!))
          assert.deepStrictEqual(
            byId(yield* repo.findByNetworkIds(conversation.phone_number_id, [b.network_id!, a.network_id!, kept.network_id!, "wamid.none"])),
            byId([kept, a, b])
          )
          assert.deepStrictEqual(yield* repo.findByNetworkIds(elsewhere.conversation.phone_number_id, [a.network_id!]), [otherNumber])
          assert.deepStrictEqual(yield* repo.findByNetworkIds(conversation.phone_number_id, []), [])
        }))

      it.effect("refuses a batch with a message of an unknown conversation, storing none of it", () =>
        Effect.gen(function*() {
          const repo = yield* MessagesRepo
          const { conversation, project } = yield* givenConversation
          const ok = makeMessage(conversation)
          yield* dies(repo.insertMany([ok, makeMessage({ ...conversation, id: uniqueId("nope") })]))
          assert.isTrue(Option.isNone(yield* repo.findById(project.id, ok.id)))
          assert.isTrue(yield* repo.insert(ok), "its network id is still free")
        }))

      it.effect("updates several messages in one step, each as update does", () =>
        Effect.gen(function*() {
          const repo = yield* MessagesRepo
          const { conversation, project } = yield* givenConversation
          const other = yield* givenProject()
          const sent = makeMessage(conversation, { network_id: null, direction: "outbound", status: "pending" })
          const received = makeMessage(conversation)
          yield* repo.insertMany([sent, received])
          const answered: MessageRecord = {
            ...sent,
            network_id: `wamid.${crypto.randomUUID()}`,
            status: "sent",
            statuses: [{ status: "sent", timestamp: "1772600800" }],
            media: { id: "m2", filename: "b.pdf", content_type: "application/pdf", byte_size: 99 },
            has_media: true,
            updated_at: at(8)
          }
          const read: MessageRecord = { ...received, status: "read", ext_data: { seen: true }, updated_at: at(9) }
          yield* repo.updateMany([
            { ...answered, status: "failed" },
            { ...read, project_id: other.id, content: "not mine" },
            { ...answered, direction: "inbound", created_at: at(77) },
            read
          ])
          yield* repo.updateMany([])
          assert.deepStrictEqual(
            byId([...(yield* repo.findByNetworkIds(conversation.phone_number_id, [answered.network_id!, read.network_id!]))]),
            byId([answered, read]),
            "the last of one id wins; the project, direction and creation time stay"
          )
          // Taking a network id another message holds fails the whole batch.
          yield* dies(repo.updateMany([{ ...read, status: "failed" }, { ...answered, network_id: read.network_id }]))
          assert.deepStrictEqual(yield* repo.findById(project.id, read.id), Option.some(read))
        }))

      it.effect("sets the status and status history of several messages and nothing else, per project", () =>
        Effect.gen(function*() {
          const repo = yield* MessagesRepo
          const { conversation, project } = yield* givenConversation
          const other = yield* givenProject()
          const a = makeMessage(conversation, { direction: "outbound", status: "pending" })
          const b = makeMessage(conversation, { direction: "outbound", status: "pending" })
          yield* repo.insertMany([a, b])
          const delivered = { status: "delivered" as const, statuses: [{ status: "sent" }, { status: "delivered" }], updated_at: at(9) }
          yield* repo.setStatuses([
            { project_id: project.id, id: a.id, ...delivered },
            { project_id: other.id, id: b.id, ...delivered }
          ])
          yield* repo.setStatuses([])
          assert.deepStrictEqual(yield* repo.findById(project.id, a.id), Option.some({ ...a, ...delivered }))
          assert.deepStrictEqual(yield* repo.findById(project.id, b.id), Option.some(b), "another project's update changes nothing")
        }))

      it.effect("sets the network ids of several messages and nothing else, per project, unless a report came first", () =>
        Effect.gen(function*() {
          const repo = yield* MessagesRepo
          const { conversation, project } = yield* givenConversation
          const other = yield* givenProject()
          const a = makeMessage(conversation, { network_id: null, direction: "outbound", status: "pending" })
          const b = makeMessage(conversation, { network_id: null, direction: "outbound", status: "pending" })
          const c = makeMessage(conversation, { network_id: null, direction: "outbound", status: "pending" })
          yield* repo.insertMany([a, b, c])
          const ids = [`wamid.${crypto.randomUUID()}`, `wamid.${crypto.randomUUID()}`, `wamid.${crypto.randomUUID()}`]
          const pnid = conversation.phone_number_id
          // A report under c's id overtook its send; one under that id of another number does not count.
          yield* repo.recordStatuses([
            { phone_number_id: pnid, network_id: ids[2]!, status: "sent", timestamp: "1", raw: { id: ids[2], status: "sent" }, received_at: at(6) },
            { phone_number_id: `pn${digits()}`, network_id: ids[0]!, status: "sent", timestamp: "1", raw: {}, received_at: at(6) }
          ])
          const set = yield* repo.setNetworkIdsUnlessReported([
            { projectId: project.id, id: a.id, phoneNumberId: pnid, networkId: ids[0]!, at: at(7) },
            { projectId: other.id, id: b.id, phoneNumberId: pnid, networkId: ids[1]!, at: at(7) },
            { projectId: project.id, id: c.id, phoneNumberId: pnid, networkId: ids[2]!, at: at(7) }
          ])
          assert.deepStrictEqual(yield* set, [a.id])
          assert.deepStrictEqual(yield* (yield* repo.setNetworkIdsUnlessReported([])), [])
          assert.deepStrictEqual(yield* repo.findById(project.id, a.id), Option.some({ ...a, network_id: ids[0]!, updated_at: at(7) }))
          assert.deepStrictEqual(yield* repo.findById(project.id, b.id), Option.some(b), "another project's update changes nothing")
          assert.deepStrictEqual(yield* repo.findById(project.id, c.id), Option.some(c), "a report came first: left to its caller")
          // Taking a network id another message holds fails the whole batch.
          const held = makeMessage(conversation)
          yield* repo.insert(held)
          yield* dies(Effect.flatten(repo.setNetworkIdsUnlessReported([
            { projectId: project.id, id: a.id, phoneNumberId: pnid, networkId: `wamid.${crypto.randomUUID()}`, at: at(8) },
            { projectId: project.id, id: b.id, phoneNumberId: pnid, networkId: held.network_id!, at: at(8) }
          ])))
          assert.deepStrictEqual(yield* repo.findById(project.id, a.id), Option.some({ ...a, network_id: ids[0]!, updated_at: at(7) }))
          assert.deepStrictEqual(yield* repo.findById(project.id, b.id), Option.some(b))
        }))

      it.effect("answers the network ids it set once the transaction it rode in is done", () =>
        Effect.gen(function*() {
          const repo = yield* MessagesRepo
          const tx = yield* Transactor
          const { conversation, project } = yield* givenConversation
          const a = makeMessage(conversation, { network_id: null, direction: "outbound", status: "pending" })
          yield* repo.insert(a)
          const id = `wamid.${crypto.randomUUID()}`
          const set = yield* tx.withTransaction(repo.setNetworkIdsUnlessReported([
            { projectId: project.id, id: a.id, phoneNumberId: conversation.phone_number_id, networkId: id, at: at(7) }
          ]))
          assert.deepStrictEqual(yield* set, [a.id])
          assert.deepStrictEqual(yield* repo.findById(project.id, a.id), Option.some({ ...a, network_id: id, updated_at: at(7) }))
          // Undone with its transaction.
          const b = makeMessage(conversation, { network_id: null, direction: "outbound", status: "pending" })
          yield* repo.insert(b)
          const undone = yield* Effect.exit(tx.withTransaction(Effect.andThen(
            repo.setNetworkIdsUnlessReported([
              { projectId: project.id, id: b.id, phoneNumberId: conversation.phone_number_id, networkId: `wamid.${crypto.randomUUID()}`, at: at(8) }
            ]),
            Effect.fail("undo")
          )))
          assert.isTrue(Exit.isFailure(undone))
          assert.deepStrictEqual(yield* repo.findById(project.id, b.id), Option.some(b))
        }))

      it.effect("settles the processing status of pending messages only, nothing else, per project", () =>
        Effect.gen(function*() {
          const repo = yield* MessagesRepo
          const { conversation, project } = yield* givenConversation
          const other = yield* givenProject()
          const pending = makeMessage(conversation, { processing_status: "pending" })
          const blocked = makeMessage(conversation, { processing_status: "blocked" })
          yield* repo.insertMany([pending, blocked])
          yield* repo.settleProcessing(other.id, [pending.id], "blocked")
          assert.deepStrictEqual(yield* repo.findById(project.id, pending.id), Option.some(pending), "another project's settle changes nothing")
          yield* repo.settleProcessing(project.id, [pending.id, blocked.id, "msg_unknown"], "completed")
          yield* repo.settleProcessing(project.id, [], "completed")
          assert.deepStrictEqual(yield* repo.findById(project.id, pending.id), Option.some({ ...pending, processing_status: "completed" }))
          assert.deepStrictEqual(yield* repo.findById(project.id, blocked.id), Option.some(blocked), "a settled message stays as it was")
          yield* repo.settleProcessing(project.id, [pending.id], "blocked")
          assert.deepStrictEqual(yield* repo.findById(project.id, pending.id), Option.some({ ...pending, processing_status: "completed" }))
        }))

      it.effect("marks an inbound message and the conversation's earlier delivered inbound messages read, per project", () =>
        Effect.gen(function*() {
          const repo = yield* MessagesRepo
          const { conversation, project } = yield* givenConversation
          const other = yield* givenConversation
          const older = makeMessage(conversation, { created_at: at(1), updated_at: at(1) })
          const failed = makeMessage(conversation, { status: "failed", created_at: at(2), updated_at: at(2) })
          const sent = makeMessage(conversation, { direction: "outbound", status: "delivered", created_at: at(3), updated_at: at(3) })
          const target = makeMessage(conversation, { created_at: at(4), updated_at: at(4) })
          const newer = makeMessage(conversation, { created_at: at(5), updated_at: at(5) })
          const elsewhere = makeMessage(other.conversation, { created_at: at(1), updated_at: at(1) })
          yield* repo.insertMany([older, failed, sent, target, newer])
          yield* repo.insert(elsewhere)
          const mark = (projectId: string, m: MessageRecord, when: string, networkId = m.network_id!) =>
            repo.markInboundRead([{ projectId, phoneNumberId: m.phone_number_id, networkId, at: when }])
          assert.strictEqual(yield* repo.markInboundRead([]), 0)
          assert.strictEqual(yield* mark(other.project.id, target, at(9)), 0, "another project's")
          assert.strictEqual(yield* mark(project.id, sent, at(9)), 0, "an outbound message")
          assert.strictEqual(yield* mark(project.id, target, at(9), "wamid.unknown"), 0)
          assert.strictEqual(yield* mark(project.id, target, at(9)), 2)
          const read = (m: MessageRecord) => ({ ...m, status: "read" as const, updated_at: at(9) })
          assert.deepStrictEqual(
            byId([...(yield* repo.findByNetworkIds(conversation.phone_number_id, [older, failed, sent, target, newer].map((m) => m.network_id!)))]),
            byId([read(older), failed, sent, read(target), newer])
          )
          assert.deepStrictEqual(yield* repo.findById(other.project.id, elsewhere.id), Option.some(elsewhere), "another conversation")
          assert.strictEqual(yield* mark(project.id, target, at(10)), 0, "read already")
        }))

      it.effect("marks several mark-reads in one step: each conversation up to its latest mark", () =>
        Effect.gen(function*() {
          const repo = yield* MessagesRepo
          const a = yield* givenConversation
          const b = yield* givenConversation
          const a1 = makeMessage(a.conversation, { created_at: at(1), updated_at: at(1) })
          const a2 = makeMessage(a.conversation, { created_at: at(2), updated_at: at(2) })
          const a3 = makeMessage(a.conversation, { created_at: at(3), updated_at: at(3) })
          const b1 = makeMessage(b.conversation, { created_at: at(1), updated_at: at(1) })
          const b2 = makeMessage(b.conversation, { created_at: at(2), updated_at: at(2) })
          yield* repo.insertMany([a1, a2, a3])
          yield* repo.insertMany([b1, b2])
          const mark = (projectId: string, m: MessageRecord, networkId = m.network_id!) => ({
            projectId,
            phoneNumberId: m.phone_number_id,
            networkId,
            at: at(9)
          })
          // Two marks of one conversation (the later wins), one of another, one of nothing, one of another project.
          const marked = yield* repo.markInboundRead([
            mark(a.project.id, a2),
            mark(b.project.id, b1),
            mark(a.project.id, a1),
            mark(a.project.id, a1, "wamid.unknown"),
            mark(b.project.id, a3)
          ])
          assert.strictEqual(marked, 3)
          const read = (m: MessageRecord) => ({ ...m, status: "read" as const, updated_at: at(9) })
          assert.deepStrictEqual(yield* repo.findById(a.project.id, a1.id), Option.some(read(a1)))
          assert.deepStrictEqual(yield* repo.findById(a.project.id, a2.id), Option.some(read(a2)))
          assert.deepStrictEqual(yield* repo.findById(a.project.id, a3.id), Option.some(a3))
          assert.deepStrictEqual(yield* repo.findById(b.project.id, b1.id), Option.some(read(b1)))
          assert.deepStrictEqual(yield* repo.findById(b.project.id, b2.id), Option.some(b2))
        }))

      it.effect("keeps each status report once, in arrival order, answering in order which were new", () =>
        Effect.gen(function*() {
          const repo = yield* MessagesRepo
          const pnid = `pn${digits()}`
          const report = (status: string, timestamp: string, networkId = "wamid.abc") => ({
            phone_number_id: pnid,
            network_id: networkId,
            status,
            timestamp,
            raw: { id: networkId, status, timestamp, pricing: { category: "utility" } },
            received_at: at(0)
          })
          assert.deepStrictEqual(
            yield* repo.recordStatuses([
              report("read", "3"),
              report("sent", "1"),
              report("sent", "1", "wamid.def"),
              report("read", "3"),
              report("read", "4")
            ]),
            [true, true, true, false, true],
            "a report repeated in the call is new once; another timestamp is another report"
          )
          assert.deepStrictEqual(
            yield* repo.recordStatuses([
              report("read", "3"),
              report("delivered", "2", "wamid.def"),
              { ...report("sent", "1"), phone_number_id: `pn${digits()}` },
              report("delivered", "2")
            ]),
            [false, true, true, true],
            "a report kept before is not new; another number's is"
          )
          assert.deepStrictEqual(yield* repo.recordStatuses([]), [])
          const kept = yield* repo.statusEvents(pnid, ["wamid.abc"])
          assert.deepStrictEqual(kept.map((e) => [e.status, e.timestamp]), [["read", "3"], ["sent", "1"], ["read", "4"], ["delivered", "2"]])
          assert.deepStrictEqual(kept[0], report("read", "3"))
          assert.deepStrictEqual(
            (yield* repo.statusEvents(pnid, ["wamid.def", "wamid.abc", "wamid.none"])).map((e) => [e.network_id, e.status]),
            [
              ["wamid.abc", "read"],
              ["wamid.abc", "sent"],
              ["wamid.def", "sent"],
              ["wamid.abc", "read"],
              ["wamid.def", "delivered"],
              ["wamid.abc", "delivered"]
            ],
            "the reports of several messages interleave in arrival order"
          )
          assert.deepStrictEqual(yield* repo.statusEvents(pnid, []), [])
        }))

      it.effect("finds the reports that carry a send's callback data, received since a time, in arrival order", () =>
        Effect.gen(function*() {
          const repo = yield* MessagesRepo
          const pnid = `pn${digits()}`
          const report = (networkId: string, status: string, receivedAt: string, callbackData?: string) => ({
            phone_number_id: pnid,
            network_id: networkId,
            status,
            timestamp: "1",
            raw: { id: networkId, status, timestamp: "1", ...(callbackData === undefined ? {} : { biz_opaque_callback_data: callbackData }) },
            received_at: receivedAt
          })
          yield* repo.recordStatuses([
            report("wamid.old", "sent", at(0), "exe:2"),
            report("wamid.a", "delivered", at(2_000), "exe:2"),
            report("wamid.b", "sent", at(2_000)),
            report("wamid.c", "sent", at(3_000), "exe:3"),
            report("wamid.a", "sent", at(3_000), "exe:2"),
            { ...report("wamid.x", "sent", at(3_000), "exe:2"), phone_number_id: `pn${digits()}` }
          ])
          const found = yield* repo.statusEventsByCallbackData(pnid, "exe:2", at(1_000))
          assert.deepStrictEqual(found.map((e) => [e.network_id, e.status]), [["wamid.a", "delivered"], ["wamid.a", "sent"]])
          assert.deepStrictEqual(found[0], report("wamid.a", "delivered", at(2_000), "exe:2"))
          assert.deepStrictEqual(yield* repo.statusEventsByCallbackData(pnid, "exe:9", at(0)), [])
        }))

      it.effect("refuses a message of an unknown conversation", () =>
        Effect.gen(function*() {
          const { conversation } = yield* givenConversation
          yield* dies((yield* MessagesRepo).insert(makeMessage({ ...conversation, id: uniqueId("nope") })))
        }))
    })

    layer(storage, { excludeTestServices: true })("MediaRepo", (it) => {
      it.effect("keeps media bytes exactly, per project", () =>
        Effect.gen(function*() {
          const repo = yield* MediaRepo
          const a = yield* givenProject()
          const b = yield* givenProject()
          const bytes = randomBytes(300_000)
          bytes[0] = 0
          bytes[1] = 255
          const media: StoredMedia = {
            id: uniqueId("media"),
            project_id: a.id,
            msg_config_id: "cfg",
            network_media_id: "1234567890123456",
            filename: "photo ☕.jpg",
            content_type: "image/jpeg",
            byte_size: bytes.byteLength,
            sha256: "abc",
            bytes,
            created_at: at(3)
          }
          yield* repo.insert(media)
          const found = Option.getOrThrow(yield* repo.find(a.id, media.id))
          assert.deepStrictEqual({ ...found, bytes: undefined }, { ...media, bytes: undefined })
          assert.isTrue(Buffer.from(found.bytes).equals(Buffer.from(bytes)))
          assert.isTrue(Option.isNone(yield* repo.find(b.id, media.id)))
          assert.isFalse(yield* repo.delete(b.id, media.id))
          assert.isTrue(yield* repo.delete(a.id, media.id))
          assert.isTrue(Option.isNone(yield* repo.find(a.id, media.id)))
        }))

      it.effect("remembers uploads per project, the latest of a media id winning", () =>
        Effect.gen(function*() {
          const repo = yield* MediaRepo
          const a = yield* givenProject()
          const b = yield* givenProject()
          const upload = { network_media_id: "9001", project_id: a.id, msg_config_id: "cfg-1", business_account_id: "waba-1", created_at: at(1) }
          yield* repo.recordUpload(upload)
          yield* repo.recordUpload({ ...upload, network_media_id: "9002" })
          const again = { ...upload, msg_config_id: "cfg-2", business_account_id: "waba-2", created_at: at(2) }
          yield* repo.recordUpload(again)
          const found = yield* repo.findUploads(a.id, ["9001", "9002", "9003"])
          assert.deepStrictEqual([...found].sort((x, y) => x.network_media_id.localeCompare(y.network_media_id)), [
            again,
            { ...upload, network_media_id: "9002" }
          ])
          assert.deepStrictEqual(yield* repo.findUploads(b.id, ["9001"]), [], "another project's uploads stay apart")
          assert.deepStrictEqual(yield* repo.findUploads(a.id, []), [])
        }))
    })

    layer(storage, { excludeTestServices: true })("UpstreamInboxRepo", (it) => {
      const entry = (overrides: Partial<InboxEntry> = {}): InboxEntry => ({
        id: uniqueId("in"),
        msg_config_id: null,
        body: new TextEncoder().encode(`{"object":"whatsapp_business_account","entry":[],"n":"${crypto.randomUUID()}"}`),
        signature: "sha256=00",
        received_at: at(0),
        fanned_out_at: null,
        processed_at: null,
        senders: [],
        ...overrides
      })

      it.effect("stores raw bodies exactly and tracks fan-out and processing", () =>
        Effect.gen(function*() {
          const repo = yield* UpstreamInboxRepo
          const first = entry({ body: randomBytes(4096), msg_config_id: "cfg-1" })
          yield* repo.insert(first)
          const found = Option.getOrThrow(yield* repo.find(first.id))
          assert.deepStrictEqual({ ...found, body: undefined }, { ...first, body: undefined })
          assert.isTrue(Buffer.from(found.body).equals(Buffer.from(first.body)))
          yield* repo.markFannedOut(first.id, at(5))
          yield* repo.markProcessed(first.id, at(6))
          const after = Option.getOrThrow(yield* repo.find(first.id))
          assert.deepStrictEqual([after.fanned_out_at, after.processed_at], [at(5), at(6)])
        }))

      it.effect("lists what is left to process oldest first, and prunes processed entries", () =>
        Effect.gen(function*() {
          const repo = yield* UpstreamInboxRepo
          // Far in the past, so entries of other tests sharing the store stay out of the bounds.
          const base = -10 * 365 * 24 * 3600 * 1000
          const e1 = entry({ received_at: at(base + 1) })
          const e2 = entry({ received_at: at(base + 2) })
          const e3 = entry({ received_at: at(base + 3) })
          const done = entry({ received_at: at(base), processed_at: at(base + 10) })
          for (const e of [e3, done, e1, e2]) yield* repo.insert(e)
          assert.deepStrictEqual(ids(yield* repo.listUnprocessed(at(base + 3), 10)), ids([e1, e2]))
          assert.deepStrictEqual(ids(yield* repo.listUnprocessed(at(base + 4), 2)), ids([e1, e2]))
          assert.strictEqual(yield* repo.prune(at(base + 10)), 0)
          assert.strictEqual(yield* repo.prune(at(base + 11)), 1)
          assert.isTrue(Option.isNone(yield* repo.find(done.id)))
          assert.isTrue(Option.isSome(yield* repo.find(e1.id)), "unprocessed entries are never pruned")
        }))

      it.effect("answers whether an unprocessed entry names a sender, until it is processed", () =>
        Effect.gen(function*() {
          const repo = yield* UpstreamInboxRepo
          const sender = `pn${digits()}:${digits()}`
          const other = `pn${digits()}:${digits()}`
          const e = entry({ senders: [sender, `pn${digits()}:user.${digits()}`] })
          yield* repo.insert(e)
          assert.isTrue(yield* repo.hasUnprocessedFrom([other, sender]))
          assert.isFalse(yield* repo.hasUnprocessedFrom([other]))
          assert.isFalse(yield* repo.hasUnprocessedFrom([]))
          yield* repo.markProcessed(e.id, at(1))
          assert.isFalse(yield* repo.hasUnprocessedFrom([sender]))
          assert.deepStrictEqual(Option.getOrThrow(yield* repo.find(e.id)).senders, [])
        }))

      it.effect("keeps template status reports per business account in arrival order", () =>
        Effect.gen(function*() {
          const repo = yield* UpstreamInboxRepo
          const account = `waba${digits()}`
          const report = (event: string, ms: number) => ({
            id: uniqueId("tpl"),
            business_account_id: account,
            template_id: "1234",
            template_name: "order_update",
            language: "en_US",
            event,
            reason: event === "REJECTED" ? "INVALID_FORMAT" : null,
            category: "UTILITY",
            received_at: at(ms)
          })
          const approved = report("APPROVED", 2)
          const pending = report("PENDING", 1)
          yield* repo.recordTemplateStatus(approved)
          yield* repo.recordTemplateStatus(pending)
          assert.deepStrictEqual(yield* repo.listTemplateStatus(account), [pending, approved])
          assert.deepStrictEqual(yield* repo.listTemplateStatus("other"), [])
        }))
    })

    layer(storage, { excludeTestServices: true })("writes in transactions", (it) => {
      // A store may send a write without waiting for its answer and learn of its failure later in the transaction.
      it.effect("fails a transaction whose write the store refuses, even as its last step, and keeps none of it", () =>
        Effect.gen(function*() {
          const tx = yield* Transactor
          const repo = yield* ContactsRepo
          const project = yield* givenProject()
          const kept = makeContact(project.id)
          const twice = makeContact(project.id)
          yield* dies(tx.withTransaction(Effect.gen(function*() {
            yield* repo.insert(kept)
            yield* repo.insert(twice)
            yield* repo.insert({ ...twice, wa_id: digits(), business_scoped_user_id: null })
          })))
          assert.isTrue(Option.isNone(yield* repo.findById(project.id, kept.id)))
          assert.isTrue(Option.isNone(yield* repo.findById(project.id, twice.id)))
        }))

      it.effect("undoes only the nested transaction whose write was refused; the outer one goes on", () =>
        Effect.gen(function*() {
          const tx = yield* Transactor
          const repo = yield* ContactsRepo
          const project = yield* givenProject()
          const [before, inner, after] = [makeContact(project.id), makeContact(project.id), makeContact(project.id)]
          yield* tx.withTransaction(Effect.gen(function*() {
            yield* repo.insert(before)
            yield* dies(tx.withTransaction(Effect.gen(function*() {
              yield* repo.insert(inner)
              yield* repo.insert({ ...inner, wa_id: digits(), business_scoped_user_id: null })
            })))
            yield* repo.insert(after)
          }))
          assert.isTrue(Option.isSome(yield* repo.findById(project.id, before.id)))
          assert.isTrue(Option.isNone(yield* repo.findById(project.id, inner.id)))
          assert.isTrue(Option.isSome(yield* repo.findById(project.id, after.id)))
        }))
    })

    layer(storage, { excludeTestServices: true })("MessagingLocks", (it) => {
      const read = Effect.gen(function*() {
        return yield* (yield* MessagesRepo).findById("no-project", "no-message")
      })
      const waitsForHolder = (first: Effect.Effect<void>, second: Effect.Effect<void>) => waitsFor(first, second, read)

      it.effect("holds a key until the transaction that took it ends", () =>
        Effect.gen(function*() {
          const locks = yield* MessagingLocks
          const key = uniqueId("lock")
          assert.isTrue(yield* waitsForHolder(locks.lock(key), locks.lock(key)), "the second taker waited for the first transaction")
        }))

      it.effect("holds every key of a set until the transaction that took it ends", () =>
        Effect.gen(function*() {
          const locks = yield* MessagingLocks
          const [a, b, c] = [uniqueId("lock"), uniqueId("lock"), uniqueId("lock")]
          yield* locks.lockAll([])
          assert.isTrue(
            yield* waitsForHolder(locks.lockAll([a, b, a]), locks.lockAll([c, b])),
            "a set sharing one key waited for the first transaction"
          )
        }))

      it.effect("lets concurrent transactions take overlapping sets in any order without deadlock", () =>
        Effect.gen(function*() {
          const locks = yield* MessagingLocks
          const tx = yield* Transactor
          const keys = Array.from({ length: 8 }, () => uniqueId("lock"))
          const holding = (set: ReadonlyArray<string>) =>
            tx.withTransaction(Effect.andThen(locks.lockAll(set), Effect.sleep("5 millis")))
          for (let round = 0; round < 10; round++) {
            yield* Effect.all([
              holding(keys),
              holding([...keys].reverse()),
              holding([keys[5]!, keys[1]!, keys[6]!, keys[1]!, keys[2]!])
            ], { concurrency: "unbounded", discard: true })
          }
        }))
    })
  })
}
