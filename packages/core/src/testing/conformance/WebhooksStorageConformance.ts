/**
 * The behaviour every adapter of the webhook storage ports (`WebhooksRepo`,
 * `WebhookDeliveriesRepo`, `WebhookBuffersRepo`) owes, written once and run
 * against each adapter.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect, type Layer, Option } from "effect"
import type { ProjectsRepo } from "../../projects/ProjectsRepo.ts"
import { Duplicate } from "../../ports/StorageError.ts"
import { Transactor } from "../../ports/Transactor.ts"
import { WebhookBuffersRepo, WebhookDeliveriesRepo, WebhooksRepo } from "../../webhooks/WebhooksRepo.ts"
import type { ListWindow } from "../../shared/Pagination.ts"
import type {
  BufferedItem,
  WebhookAttemptRecord,
  WebhookBufferRecord,
  WebhookDeliveryRecord,
  WebhookRecord
} from "../../webhooks/Webhook.ts"
import { at, dies, givenProject, listenTo, uniqueId } from "./fixtures.ts"

export type WebhooksStoragePorts = Transactor | ProjectsRepo | WebhooksRepo | WebhookDeliveriesRepo | WebhookBuffersRepo

export const makeWebhook = (projectId: string, overrides: Partial<WebhookRecord> = {}): WebhookRecord => ({
  id: uniqueId("whk"),
  project_id: projectId,
  phone_number_id: "100200300",
  url: "https://hooks.example.com/parley",
  kind: "ext",
  events: ["msg.message.received"],
  secret_key: "s3cret",
  headers: {},
  active: true,
  paused_at: null,
  pause_reason: null,
  retry_schedule: "standard",
  auto_pause: false,
  buffer_enabled: false,
  buffer_window_seconds: 5,
  max_buffer_size: 50,
  buffer_events: ["msg.message.received"],
  inactivity_minutes: 60,
  payload_version: "v2",
  failure_window_from: null,
  created_at: at(0),
  updated_at: at(0),
  ...overrides
})

export const makeDelivery = (
  webhook: WebhookRecord,
  overrides: Partial<WebhookDeliveryRecord> = {}
): WebhookDeliveryRecord => ({
  id: uniqueId("dlv"),
  project_id: webhook.project_id,
  webhook_id: webhook.id,
  webhook_url: webhook.url,
  event: "msg.message.received",
  status: "pending",
  response_status: null,
  delivered_at: null,
  failed_at: null,
  last_attempt_at: null,
  next_attempt_at: at(0),
  attempt_count: 0,
  max_attempts: 3,
  retry_schedule: "standard",
  error_message: null,
  created_at: at(0),
  msg_config_id: null,
  phone_number_id: webhook.phone_number_id,
  conversation_phone_number: null,
  idempotency_key: crypto.randomUUID(),
  payload_version: "v2",
  batch_size: null,
  test: false,
  source_key: uniqueId("src"),
  body: Buffer.from(JSON.stringify({ hello: "wörld" })).toString("base64"),
  ...overrides
})

/** A buffered payload numbered `n`. */
const item = (n: number, payload: Record<string, unknown> = {}): BufferedItem => ({
  received_at: at(n),
  payload: { n, ...payload }
})

const makeBuffer = (webhook: WebhookRecord, overrides: Partial<WebhookBufferRecord> = {}): WebhookBufferRecord => ({
  id: uniqueId("buf"),
  project_id: webhook.project_id,
  webhook_id: webhook.id,
  conversation_key: "conv-1",
  event: "msg.message.received",
  items: [item(1)],
  payload_version: "v2",
  first_at: at(0),
  due_at: at(5_000),
  msg_config_id: null,
  phone_number_id: webhook.phone_number_id,
  conversation_phone_number: "15550001111",
  ...overrides
})

const ids = (items: ReadonlyArray<{ readonly id: string }>) => items.map((i) => i.id)
const cursor = (limit: number): ListWindow => ({ mode: "cursor", limit })

const givenWebhook = (overrides: Partial<WebhookRecord> = {}) =>
  Effect.gen(function*() {
    const project = yield* givenProject()
    const webhook = makeWebhook(project.id, overrides)
    yield* (yield* WebhooksRepo).insert(webhook)
    return webhook
  })

export const webhooksStorageConformance = <E>(name: string, storage: Layer.Layer<WebhooksStoragePorts, E>): void => {
  describe(name, () => {
    layer(storage, { excludeTestServices: true })("WebhooksRepo", (it) => {
      it.effect("stores a webhook exactly as given, in its project only", () =>
        Effect.gen(function*() {
          const repo = yield* WebhooksRepo
          const a = yield* givenProject()
          const b = yield* givenProject()
          const webhook = makeWebhook(a.id, {
            headers: { "X-Tenant": "acme", Authorization: "Bearer t" },
            events: ["msg.message.received", "msg.conversation.created"],
            paused_at: at(3),
            pause_reason: "failure_rate",
            active: false,
            failure_window_from: at(2),
            created_at: at(1),
            updated_at: at(4)
          })
          yield* repo.insert(webhook)
          assert.deepStrictEqual(yield* repo.findById(a.id, webhook.id), Option.some(webhook))
          assert.deepStrictEqual(yield* repo.findById(b.id, webhook.id), Option.none())
          yield* dies(repo.insert(makeWebhook("prj_missing")))
          yield* dies(repo.insert(webhook))
        }))

      it.effect("keeps one upstream webhook per number, and any number of others", () =>
        Effect.gen(function*() {
          const repo = yield* WebhooksRepo
          const project = yield* givenProject()
          const upstream = (pnid: string) => makeWebhook(project.id, { kind: "upstream", events: [], phone_number_id: pnid })
          yield* repo.insert(upstream("111"))
          const error = yield* Effect.flip(repo.insert(upstream("111")))
          assert.deepStrictEqual(error, new Duplicate({ field: "upstream" }))
          yield* repo.insert(upstream("222"))
          yield* repo.insert(makeWebhook(project.id, { phone_number_id: "111" }))
          yield* repo.insert(makeWebhook(project.id, { phone_number_id: "111" }))
          const other = yield* givenProject()
          yield* repo.insert(makeWebhook(other.id, { kind: "upstream", events: [], phone_number_id: "111" }))
          assert.strictEqual((yield* repo.list(project.id, { phone_number_id: "111" }, cursor(10))).items.length, 3)
        }))

      it.effect("lists newest first with filters, cursors and page totals", () =>
        Effect.gen(function*() {
          const repo = yield* WebhooksRepo
          const project = yield* givenProject()
          const stem = uniqueId("whk")
          const w1 = makeWebhook(project.id, { id: `${stem}-1`, created_at: at(1000), url: "https://a.example.com/One" })
          const w2 = makeWebhook(project.id, { id: `${stem}-2`, created_at: at(2000), phone_number_id: null, events: ["project.event"] })
          const w3 = makeWebhook(project.id, { id: `${stem}-3`, created_at: at(2000), active: false, url: "https://b.example.com/one" })
          const w4 = makeWebhook(project.id, { id: `${stem}-4`, created_at: at(3000), kind: "upstream", events: [] })
          for (const w of [w3, w1, w4, w2]) yield* repo.insert(w)
          const list = (filter: Parameters<WebhooksRepo["Service"]["list"]>[1]) =>
            Effect.map(repo.list(project.id, filter, cursor(10)), (s) => ids(s.items))
          assert.deepStrictEqual(yield* list({}), ids([w4, w3, w2, w1]))
          assert.deepStrictEqual(yield* list({ phone_number_id: "100200300" }), ids([w4, w3, w1]))
          assert.deepStrictEqual(yield* list({ url_contains: "ONE" }), ids([w3, w1]), "case-insensitive")
          assert.deepStrictEqual(yield* list({ kind: "upstream" }), ids([w4]))
          assert.deepStrictEqual(yield* list({ kind: "ext", active: true }), ids([w2, w1]))
          assert.deepStrictEqual(yield* list({ active: false }), ids([w3]))
          assert.deepStrictEqual(yield* list({ created_after: at(2000) }), ids([w4, w3, w2]))
          assert.deepStrictEqual(yield* list({ created_before: at(2000) }), ids([w3, w2, w1]))
          const first = yield* repo.list(project.id, {}, cursor(2))
          assert.deepStrictEqual([ids(first.items), first.hasMore], [ids([w4, w3]), true])
          const next = yield* repo.list(project.id, {}, {
            mode: "cursor",
            limit: 2,
            after: { sortKey: w3.created_at, id: w3.id }
          })
          assert.deepStrictEqual([ids(next.items), next.hasMore], [ids([w2, w1]), false])
          const back = yield* repo.list(project.id, {}, {
            mode: "cursor",
            limit: 2,
            before: { sortKey: w2.created_at, id: w2.id }
          })
          assert.deepStrictEqual([ids(back.items), back.hasMore], [ids([w4, w3]), false])
          const page = yield* repo.list(project.id, {}, { mode: "page", page: 2, perPage: 3 })
          assert.deepStrictEqual([ids(page.items), page.total], [ids([w1]), 4])
        }))

      it.effect("updates the mutable fields only, in the webhook's project", () =>
        Effect.gen(function*() {
          const repo = yield* WebhooksRepo
          const webhook = yield* givenWebhook()
          const changed: WebhookRecord = {
            ...webhook,
            url: "https://new.example.com/x",
            events: ["msg.message.read"],
            secret_key: "rotated",
            headers: { "X-A": "1" },
            active: false,
            retry_schedule: "extended",
            auto_pause: true,
            buffer_enabled: true,
            buffer_window_seconds: 9,
            max_buffer_size: 7,
            inactivity_minutes: 30,
            payload_version: "v1",
            failure_window_from: at(50),
            updated_at: at(60)
          }
          const stored = yield* repo.update({
            ...changed,
            kind: "upstream",
            phone_number_id: "999",
            created_at: at(77)
          })
          assert.deepStrictEqual(stored, Option.some(changed))
          assert.deepStrictEqual(yield* repo.findById(webhook.project_id, webhook.id), Option.some(changed))
          const elsewhere = yield* givenProject()
          assert.deepStrictEqual(yield* repo.update({ ...changed, project_id: elsewhere.id }), Option.none())
          assert.deepStrictEqual(yield* repo.update({ ...changed, id: uniqueId("whk") }), Option.none())
        }))

      it.effect("deletes within the project; lists the active webhooks of one scope, oldest first", () =>
        Effect.gen(function*() {
          const repo = yield* WebhooksRepo
          const project = yield* givenProject()
          const stem = uniqueId("whk")
          const make = (n: number, overrides: Partial<WebhookRecord>) =>
            makeWebhook(project.id, { id: `${stem}-${n}`, created_at: at(n * 1000), ...overrides })
          const numberA = make(2, {})
          const numberB = make(1, {})
          const inactive = make(3, { active: false })
          const projectLevel = make(4, { phone_number_id: null, events: ["project.event"] })
          const otherNumber = make(5, { phone_number_id: "555" })
          for (const w of [numberA, numberB, inactive, projectLevel, otherNumber]) yield* repo.insert(w)
          assert.deepStrictEqual(ids(yield* repo.listActive(project.id, "100200300")), ids([numberB, numberA]))
          assert.deepStrictEqual(ids(yield* repo.listActive(project.id, null)), ids([projectLevel]))
          const other = yield* givenProject()
          assert.deepStrictEqual(yield* repo.listActive(other.id, "100200300"), [])
          assert.isFalse(yield* repo.delete(other.id, numberA.id))
          assert.isTrue(yield* repo.delete(project.id, numberA.id))
          assert.isFalse(yield* repo.delete(project.id, numberA.id))
          assert.deepStrictEqual(ids(yield* repo.listActive(project.id, "100200300")), ids([numberB]))
        }))

      it.effect("pauses an active webhook once", () =>
        Effect.gen(function*() {
          const repo = yield* WebhooksRepo
          const webhook = yield* givenWebhook()
          const paused = yield* repo.pause(webhook.project_id, webhook.id, at(9), "failure_rate")
          assert.deepStrictEqual(paused, Option.some({ ...webhook, active: false, paused_at: at(9), pause_reason: "failure_rate" as const }))
          assert.deepStrictEqual(yield* repo.pause(webhook.project_id, webhook.id, at(10), "failure_rate"), Option.none())
          assert.deepStrictEqual(yield* repo.findById(webhook.project_id, webhook.id), paused)
        }))

      it.effect("signals each insert, update, delete and pause once it is done", () =>
        Effect.gen(function*() {
          const repo = yield* WebhooksRepo
          const project = yield* givenProject()
          const signals = yield* listenTo(repo.changes)
          const webhook = makeWebhook(project.id)
          yield* repo.insert(webhook)
          yield* signals.next
          yield* repo.update({ ...webhook, url: "https://hooks.example.com/moved" })
          yield* signals.next
          yield* repo.pause(project.id, webhook.id, at(9), "failure_rate")
          yield* signals.next
          yield* repo.delete(project.id, webhook.id)
          yield* signals.next
          yield* signals.stop
        }))
    })

    layer(storage, { excludeTestServices: true })("WebhookDeliveriesRepo", (it) => {
      it.effect("stores one delivery per webhook and source", () =>
        Effect.gen(function*() {
          const repo = yield* WebhookDeliveriesRepo
          const webhook = yield* givenWebhook()
          const delivery = makeDelivery(webhook, {
            msg_config_id: "cfg",
            conversation_phone_number: "15550001111",
            batch_size: 2,
            payload_version: null
          })
          assert.deepStrictEqual(yield* repo.insert(delivery), { delivery, created: true })
          const again = makeDelivery(webhook, { source_key: delivery.source_key })
          assert.deepStrictEqual(yield* repo.insert(again), { delivery, created: false })
          assert.deepStrictEqual(yield* repo.findById(webhook.project_id, again.id), Option.none())
          // No source: never a duplicate.
          const a = makeDelivery(webhook, { source_key: null, test: true })
          const b = makeDelivery(webhook, { source_key: null, test: true })
          assert.isTrue((yield* repo.insert(a)).created)
          assert.isTrue((yield* repo.insert(b)).created)
          const other = yield* givenProject()
          assert.deepStrictEqual(yield* repo.findById(other.id, delivery.id), Option.none())
          assert.deepStrictEqual(yield* repo.findById(webhook.project_id, delivery.id), Option.some(delivery))
          yield* dies(repo.insert(makeDelivery(makeWebhook("prj_missing"))))
        }))

      it.effect("stores a delivery with its first attempt, only when the delivery is created", () =>
        Effect.gen(function*() {
          const repo = yield* WebhookDeliveriesRepo
          const webhook = yield* givenWebhook()
          const delivery: WebhookDeliveryRecord = {
            ...makeDelivery(webhook),
            status: "delivered",
            response_status: 200,
            delivered_at: at(30),
            last_attempt_at: at(20),
            next_attempt_at: null,
            attempt_count: 1
          }
          const attempt: WebhookAttemptRecord = {
            delivery_id: delivery.id,
            attempt: 1,
            attempted_at: at(20),
            response_status: 200,
            duration_ms: 10,
            error: null
          }
          assert.deepStrictEqual(yield* repo.insert(delivery, attempt), { delivery, created: true })
          assert.deepStrictEqual(yield* repo.attempts(delivery.id), [attempt])
          // The same source again (its first attempt made once more): the stored one answers, no attempt is added.
          const again: WebhookDeliveryRecord = { ...delivery, id: uniqueId("dlv") }
          const repeat = { ...attempt, delivery_id: again.id, duration_ms: 99 }
          assert.deepStrictEqual(yield* repo.insert(again, repeat), { delivery, created: false })
          assert.deepStrictEqual(yield* repo.attempts(again.id), [])
          assert.deepStrictEqual(yield* repo.attempts(delivery.id), [attempt])
          // Many at once, each with its attempt.
          const many = Array.from({ length: 8 }, () => makeDelivery(webhook))
          yield* Effect.forEach(many, (d, i) =>
            repo.insert({ ...d, attempt_count: 1 }, { ...attempt, delivery_id: d.id, duration_ms: i }), {
            concurrency: "unbounded"
          })
          for (const [i, d] of many.entries()) {
            assert.deepStrictEqual((yield* repo.attempts(d.id)).map((a) => a.duration_ms), [i])
          }
        }))

      it.effect("answers concurrent inserts, reads and updates each as if it were alone", () =>
        Effect.gen(function*() {
          const repo = yield* WebhookDeliveriesRepo
          const webhook = yield* givenWebhook()
          const deliveries = Array.from({ length: 12 }, () => makeDelivery(webhook))
          const rival = makeDelivery(webhook, { source_key: deliveries[0]!.source_key })
          const inserted = yield* Effect.forEach([...deliveries, rival], (d) => repo.insert(d), { concurrency: "unbounded" })
          assert.strictEqual(inserted.filter((r) => r.created).length, deliveries.length, "one per source")
          const [first, second] = [inserted[0]!, inserted[deliveries.length]!]
          assert.strictEqual(first.delivery.id, second.delivery.id, "the rivals answer the same delivery")
          const stored = deliveries.slice(1)
          const found = yield* Effect.forEach(stored, (d) => repo.findWithWebhook(d.project_id, d.id), { concurrency: "unbounded" })
          assert.deepStrictEqual(found, stored.map((delivery) => Option.some({ delivery, webhook: Option.some(webhook) })))
          // Two attempts of each delivery at once, from the same state: one is written, with its attempt record.
          const written = yield* Effect.forEach([...stored, ...stored], (d, i) => {
            const attempt: WebhookAttemptRecord = {
              delivery_id: d.id,
              attempt: 1,
              attempted_at: at(20),
              response_status: 200,
              duration_ms: i,
              error: null
            }
            const next: WebhookDeliveryRecord = { ...d, status: "delivered", response_status: 200, attempt_count: 1 }
            return repo.update(next, { status: "pending", attempt_count: 0 }, attempt)
          }, { concurrency: "unbounded" })
          for (const [i, d] of stored.entries()) {
            assert.isTrue(written[i]! !== written[i + stored.length]!, `one update of ${d.id} wins`)
            assert.strictEqual((yield* repo.attempts(d.id)).length, 1)
          }
        }))

      it.effect("finds a delivery with its webhook in its project, and without it once the webhook is gone", () =>
        Effect.gen(function*() {
          const repo = yield* WebhookDeliveriesRepo
          const webhooks = yield* WebhooksRepo
          const webhook = yield* givenWebhook()
          const delivery = makeDelivery(webhook)
          yield* repo.insert(delivery)
          assert.deepStrictEqual(
            yield* repo.findWithWebhook(webhook.project_id, delivery.id),
            Option.some({ delivery, webhook: Option.some(webhook) })
          )
          const other = yield* givenProject()
          assert.deepStrictEqual(yield* repo.findWithWebhook(other.id, delivery.id), Option.none())
          assert.deepStrictEqual(yield* repo.findWithWebhook(webhook.project_id, "whd_missing"), Option.none())
          yield* webhooks.delete(webhook.project_id, webhook.id)
          assert.deepStrictEqual(
            yield* repo.findWithWebhook(webhook.project_id, delivery.id),
            Option.some({ delivery, webhook: Option.none() })
          )
        }))

      it.effect("replaces the state only while it is as expected, recording the attempt with it", () =>
        Effect.gen(function*() {
          const repo = yield* WebhookDeliveriesRepo
          const webhook = yield* givenWebhook()
          const delivery = makeDelivery(webhook)
          yield* repo.insert(delivery)
          const attempt: WebhookAttemptRecord = {
            delivery_id: delivery.id,
            attempt: 1,
            attempted_at: at(10),
            response_status: 503,
            duration_ms: 12,
            error: "Service Unavailable"
          }
          const next: WebhookDeliveryRecord = {
            ...delivery,
            attempt_count: 1,
            response_status: 503,
            last_attempt_at: at(10),
            next_attempt_at: at(10_022),
            error_message: "Service Unavailable",
            webhook_url: "https://moved.example.com/"
          }
          assert.isTrue(yield* repo.update(next, { status: "pending", attempt_count: 0 }, attempt))
          assert.isFalse(yield* repo.update({ ...next, attempt_count: 2 }, { status: "pending", attempt_count: 0 }))
          assert.deepStrictEqual(yield* repo.findById(webhook.project_id, delivery.id), Option.some(next))
          const delivered: WebhookDeliveryRecord = {
            ...next,
            status: "delivered",
            attempt_count: 2,
            response_status: 204,
            delivered_at: at(10_030),
            next_attempt_at: null,
            error_message: null,
            // Neither identity, body nor key is the caller's to change.
            body: "changed",
            idempotency_key: "changed",
            event: "changed"
          }
          const second = { ...attempt, attempt: 2, attempted_at: at(10_022), response_status: 204, error: null }
          assert.isTrue(yield* repo.update(delivered, { status: "pending", attempt_count: 1 }, second))
          assert.deepStrictEqual(
            yield* repo.findById(webhook.project_id, delivery.id),
            Option.some({ ...delivered, body: delivery.body, idempotency_key: delivery.idempotency_key, event: delivery.event })
          )
          assert.deepStrictEqual(yield* repo.attempts(delivery.id), [attempt, second])
          assert.deepStrictEqual(yield* repo.attempts(uniqueId("dlv")), [])
        }))

      it.effect("lists newest first with the log's filters and capped page totals", () =>
        Effect.gen(function*() {
          const repo = yield* WebhookDeliveriesRepo
          const webhook = yield* givenWebhook()
          const another = makeWebhook(webhook.project_id)
          yield* (yield* WebhooksRepo).insert(another)
          const stem = uniqueId("dlv")
          const make = (n: number, overrides: Partial<WebhookDeliveryRecord>) =>
            makeDelivery(webhook, { id: `${stem}-${n}`, created_at: at(n * 1000), ...overrides })
          const pending = make(1, {})
          const retrying = make(2, { error_message: "HTTP 500", attempt_count: 1 })
          const failed = make(3, { status: "failed", failed_at: at(3100), error_message: "Timed out after 10 s" })
          const delivered = make(4, { status: "delivered", delivered_at: at(4100), event: "msg.message.read" })
          const elsewhere = makeDelivery(another, { id: `${stem}-5`, created_at: at(5000) })
          for (const d of [failed, pending, elsewhere, delivered, retrying]) yield* repo.insert(d)
          const list = (filter: Parameters<WebhookDeliveriesRepo["Service"]["list"]>[1]) =>
            Effect.map(repo.list(webhook.project_id, filter, cursor(10)), (s) => ids(s.items))
          assert.deepStrictEqual(yield* list({}), ids([elsewhere, delivered, failed, retrying, pending]))
          assert.deepStrictEqual(yield* list({ webhook_id: webhook.id }), ids([delivered, failed, retrying, pending]))
          assert.deepStrictEqual(yield* list({ status: "failed" }), ids([failed]))
          assert.deepStrictEqual(yield* list({ event: "msg.message.read" }), ids([delivered]))
          assert.deepStrictEqual(yield* list({ errors_only: true }), ids([failed, retrying]))
          assert.deepStrictEqual(yield* list({ created_after: at(3000) }), ids([elsewhere, delivered, failed]))
          const other = yield* givenProject()
          assert.deepStrictEqual((yield* repo.list(other.id, {}, cursor(10))).items, [])
          const page = yield* repo.list(webhook.project_id, {}, { mode: "page", page: 1, perPage: 2 })
          assert.deepStrictEqual([ids(page.items), page.total, page.hasMore], [ids([elsewhere, delivered]), 5, true])
        }))

      it.effect("counts the finished non-test deliveries of a webhook since a time", () =>
        Effect.gen(function*() {
          const repo = yield* WebhookDeliveriesRepo
          const webhook = yield* givenWebhook()
          const rows = [
            makeDelivery(webhook, { status: "failed", failed_at: at(1000) }),
            makeDelivery(webhook, { status: "failed", failed_at: at(2000) }),
            makeDelivery(webhook, { status: "delivered", delivered_at: at(2000) }),
            makeDelivery(webhook, { status: "failed", failed_at: at(3000), test: true, source_key: null }),
            makeDelivery(webhook, { status: "pending", error_message: "HTTP 500" }),
            makeDelivery(webhook, { status: "failed", failed_at: at(500) })
          ]
          for (const d of rows) yield* repo.insert(d)
          assert.deepStrictEqual(yield* repo.finishedSince(webhook.id, at(1000)), { total: 3, failed: 2 })
          assert.deepStrictEqual(yield* repo.finishedSince(webhook.id, at(2000)), { total: 2, failed: 1 })
          assert.deepStrictEqual(yield* repo.finishedSince(webhook.id, at(2001)), { total: 0, failed: 0 })
          assert.deepStrictEqual(yield* repo.finishedSince(uniqueId("whk"), at(0)), { total: 0, failed: 0 })
        }))

      it.effect("lists pending non-test deliveries whose attempt was due before a time, across projects, oldest due first", () =>
        Effect.gen(function*() {
          const repo = yield* WebhookDeliveriesRepo
          const webhook = yield* givenWebhook()
          const other = yield* givenWebhook()
          // Far in the past, so other tests' deliveries sharing the store stay out of the window.
          const due = (ms: number) => at(-7_000_000_000 + ms)
          const late = makeDelivery(webhook, { next_attempt_at: due(2_000), attempt_count: 1 })
          const later = makeDelivery(other, { next_attempt_at: due(1_000) })
          const rows = [
            late,
            later,
            makeDelivery(webhook, { next_attempt_at: due(5_000) }),
            makeDelivery(webhook, { next_attempt_at: due(0), test: true, source_key: null }),
            makeDelivery(webhook, { status: "failed", next_attempt_at: due(0), failed_at: due(0) })
          ]
          for (const d of rows) yield* repo.insert(d)
          assert.deepStrictEqual(ids(yield* repo.listStalled(due(5_000), 10)), ids([later, late]))
          assert.deepStrictEqual(ids(yield* repo.listStalled(due(5_000), 1)), ids([later]))
          assert.deepStrictEqual(yield* repo.listStalled(due(1_000), 10), [])
        }))

      it.effect("prunes deliveries created strictly before a time, with their attempts", () =>
        Effect.gen(function*() {
          const repo = yield* WebhookDeliveriesRepo
          const webhook = yield* givenWebhook()
          const old = makeDelivery(webhook, { created_at: at(-9_000_000_000) })
          const boundary = makeDelivery(webhook, { created_at: at(-8_000_000_000) })
          yield* repo.insert(old)
          yield* repo.insert(boundary)
          yield* repo.update({ ...old, attempt_count: 1 }, { status: "pending", attempt_count: 0 }, {
            delivery_id: old.id,
            attempt: 1,
            attempted_at: at(-9_000_000_000),
            response_status: null,
            duration_ms: 1,
            error: "connect ECONNREFUSED"
          })
          assert.isAtLeast(yield* repo.prune(at(-8_000_000_000), 1000), 1)
          assert.deepStrictEqual(yield* repo.findById(webhook.project_id, old.id), Option.none())
          assert.deepStrictEqual(yield* repo.attempts(old.id), [])
          assert.isTrue(Option.isSome(yield* repo.findById(webhook.project_id, boundary.id)))
        }))
    })

    layer(storage, { excludeTestServices: true })("WebhookBuffersRepo", (it) => {
      it.effect("opens a buffer per (webhook, conversation), appends in order and moves the due time, capped", () =>
        Effect.gen(function*() {
          const repo = yield* WebhookBuffersRepo
          const webhook = yield* givenWebhook()
          const cap = 120_000
          const first = makeBuffer(webhook, { items: [item(1)], first_at: at(0), due_at: at(5_000) })
          assert.deepStrictEqual(yield* repo.append(first, item(1), cap), { buffer: first, opened: true })
          const second = yield* repo.append(makeBuffer(webhook, { due_at: at(9_000) }), item(2), cap)
          assert.deepStrictEqual(second, { buffer: { ...first, items: [item(1), item(2)], due_at: at(9_000) }, opened: false })
          const capped = yield* repo.append(makeBuffer(webhook, { due_at: at(200_000) }), item(3, { "ü": [true] }), cap)
          assert.deepStrictEqual(capped.buffer.items, [item(1), item(2), item(3, { "ü": [true] })])
          assert.strictEqual(capped.buffer.due_at, at(120_000))
          const otherConversation = makeBuffer(webhook, { conversation_key: "conv-2" })
          assert.isTrue((yield* repo.append(otherConversation, item(1), cap)).opened)
          assert.deepStrictEqual(yield* repo.find(first.id), Option.some(capped.buffer))
        }))

      it.effect("hands a buffer out once, when due (or at once when asked)", () =>
        Effect.gen(function*() {
          const repo = yield* WebhookBuffersRepo
          const webhook = yield* givenWebhook()
          const buffer = makeBuffer(webhook)
          yield* repo.append(buffer, item(1), 120_000)
          assert.deepStrictEqual(yield* repo.take(buffer.id, at(4_999)), Option.none())
          assert.deepStrictEqual(yield* repo.take(buffer.id, at(5_000)), Option.some(buffer))
          assert.deepStrictEqual(yield* repo.take(buffer.id, null), Option.none())
          assert.deepStrictEqual(yield* repo.find(buffer.id), Option.none())
          const next = makeBuffer(webhook, { due_at: at(999_999) })
          assert.isTrue((yield* repo.append(next, item(2), 120_000)).opened, "a new buffer once the old one went")
          assert.deepStrictEqual(yield* repo.take(next.id, null), Option.some(next))
        }))

      it.effect("lists buffers due before a time, oldest first", () =>
        Effect.gen(function*() {
          const repo = yield* WebhookBuffersRepo
          const webhook = yield* givenWebhook()
          const due = (ms: number) => at(-7_000_000_000 + ms)
          const first = makeBuffer(webhook, { conversation_key: "a", due_at: due(2_000) })
          const second = makeBuffer(webhook, { conversation_key: "b", due_at: due(1_000) })
          const notYet = makeBuffer(webhook, { conversation_key: "c", due_at: due(9_000) })
          for (const b of [first, second, notYet]) yield* repo.append(b, item(1), 120_000)
          assert.deepStrictEqual(ids(yield* repo.listOverdue(due(5_000), 10)), ids([second, first]))
          assert.deepStrictEqual(yield* repo.listOverdue(due(1_000), 10), [])
        }))

      it.effect("keeps every item of concurrent appends, and goes with its webhook", () =>
        Effect.gen(function*() {
          const repo = yield* WebhookBuffersRepo
          const { withTransaction } = yield* Transactor
          const webhook = yield* givenWebhook()
          const results = yield* Effect.forEach(
            Array.from({ length: 10 }, (_, i) => i),
            (i) => withTransaction(repo.append(makeBuffer(webhook, { items: [item(i)] }), item(i), 120_000)),
            { concurrency: "unbounded" }
          )
          assert.strictEqual(results.filter((r) => r.opened).length, 1)
          const opened = results.find((r) => r.opened)!.buffer
          const stored = Option.getOrThrow(yield* repo.find(opened.id))
          assert.sameMembers(stored.items.map((i) => (i.payload as { n: number }).n), Array.from({ length: 10 }, (_, i) => i))
          yield* (yield* WebhooksRepo).delete(webhook.project_id, webhook.id)
          assert.deepStrictEqual(yield* repo.find(opened.id), Option.none())
        }))
    })
  })
}
