/**
 * Webhook deliveries (decisions 6.2–6.6): from a domain event to signed
 * attempts, and the delivery log.
 *
 * - `dispatch` (the relay's subscriber) turns one domain event into one
 *   delivery per matching active webhook, each body serialized once and
 *   stored, or adds the payload to the webhook's buffer for the
 *   conversation. One delivery per (webhook, source): a domain event seen
 *   twice adds nothing.
 * - Every attempt is a `JobQueue` job (`webhooks.delivery`): it sends the
 *   stored bytes, records the attempt and, on failure, enqueues the next one
 *   at the schedule's time, in one transaction. A host that dies mid-attempt
 *   leaves the job to the queue, which runs it again elsewhere: the attempt
 *   is repeated with the same idempotency key (at least once).
 * - Buffers are flushed by `webhooks.buffer-flush` jobs at their due time,
 *   or at once when full.
 * - After a final outcome, a webhook with `auto_pause` may be paused.
 */
import { Clock, Context, Effect, FiberSet, Layer, Option, Schema, Semaphore } from "effect"
import { JobQueue } from "../ports/JobQueue.ts"
import type { DomainEvent } from "../ports/Outbox.ts"
import { Transactor } from "../ports/Transactor.ts"
import { WebhookHttp, type WebhookHttpError } from "../ports/WebhookHttp.ts"
import { WebhookBuffersRepo, WebhookDeliveriesRepo, WebhooksRepo } from "./WebhooksRepo.ts"
import type { Principal } from "../projects/Projects.ts"
import { type NotFound, notFound, type Unprocessable, unprocessable } from "../shared/ApiError.ts"
import { Ids, nameUuid } from "../shared/Ids.ts"
import type { ListSlice, ListWindow } from "../shared/Pagination.ts"
import {
  batchBody,
  bodyOf,
  deliveryHeaders,
  type DeliveryContext,
  type DeliveryPlan,
  planDeliveries,
  type PlannedEvent,
  sampleEvent,
  sampleUpstreamBody,
  serialize,
  sha256Hex
} from "./Payloads.ts"
import {
  ATTEMPT_TIMEOUT_MS,
  attemptsOf,
  BUFFER_CAP_MS,
  DELIVERY_RETENTION_MS,
  PAUSE_FAILURE_RATE,
  PAUSE_MIN_DELIVERIES,
  PAUSE_MIN_FAILURES,
  PAUSE_WINDOW_MS,
  RETRY_WAITS_MS
} from "./Rules.ts"
import { ActiveWebhooks } from "./ActiveWebhooks.ts"
import { WebhookSettings } from "../shared/OutboundSettings.ts"
import { TracePropagation, traceHeaders } from "../shared/Telemetry.ts"
import { observeAttempt, observeFailed } from "./WebhookTelemetry.ts"
import {
  type BufferedItem,
  DELIVERY_PERIOD_MS,
  type DeliveryQuery,
  type PayloadVersion,
  UPSTREAM_EVENT,
  type WebhookAttemptRecord,
  type WebhookBufferRecord,
  type WebhookDeliveryRecord,
  type WebhookRecord,
  type WebhookTestResult
} from "./Webhook.ts"

export const DELIVERY_QUEUE = "webhooks.delivery"
export const BUFFER_FLUSH_QUEUE = "webhooks.buffer-flush"

/** Retries of an attempt job itself (not of the HTTP attempt): for a store outage or a host that died mid-attempt. */
const JOB_RETRIES = { retryLimit: 5, retryDelayMs: 5_000 }
const PRUNE_BATCH = 1000
/** A job due this long ago that left no trace is taken for lost. */
const SWEEP_GRACE_MS = 60_000
/** First attempts in flight at once in a process; more wait for the job queue. */
const INLINE_FIRST_ATTEMPTS = 512
const SWEEP_BATCH = 500

export const AttemptJob = Schema.Struct({
  project_id: Schema.String,
  delivery_id: Schema.String,
  /** The attempt this job makes (1 for the first): a job for an attempt already recorded does nothing. */
  attempt: Schema.Finite
})
export type AttemptJob = typeof AttemptJob.Type

export const FlushJob = Schema.Struct({ buffer_id: Schema.String })
export type FlushJob = typeof FlushJob.Type

interface Outcome {
  readonly status: number | null
  readonly error: string | null
  readonly startedAt: number
  readonly endedAt: number
}

/**
 * Jobs to queue once the transaction that wrote their records has committed:
 * queued earlier, a job could start before its record is visible and find
 * nothing to do. A job lost between the commit and the queue (a crash) is
 * queued again by the sweep.
 */
type AfterCommit = Array<Effect.Effect<unknown>>
const runAfterCommit = (later: AfterCommit) => Effect.forEach(later, (effect) => effect, { discard: true })

const iso = (ms: number) => new Date(ms).toISOString()
const toBase64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64")
const success = (status: number | null) => status !== null && status >= 200 && status < 300

const failureMessage = (status: number, body: string) =>
  body.length > 0 ? body : status >= 300 && status < 400 ? `Redirect not followed (HTTP ${status})` : `HTTP ${status}`

export class WebhookDeliveries extends Context.Service<WebhookDeliveries, {
  /** Newest first; `GET /webhook_deliveries`. */
  readonly list: (
    principal: Principal,
    query: DeliveryQuery,
    window: ListWindow
  ) => Effect.Effect<ListSlice<WebhookDeliveryRecord>>
  readonly get: (
    principal: Principal,
    id: string
  ) => Effect.Effect<{ readonly delivery: WebhookDeliveryRecord; readonly attempts: ReadonlyArray<WebhookAttemptRecord> }, NotFound>
  /** Sends a failed delivery once more: same body, same idempotency key, one attempt through the queue. */
  readonly retry: (principal: Principal, id: string) => Effect.Effect<WebhookDeliveryRecord, NotFound | Unprocessable>
  /** A test delivery (decisions 4.6): a sample body, `X-Webhook-Test: true`, one attempt now, logged. */
  readonly sendTest: (webhook: WebhookRecord, event: string) => Effect.Effect<WebhookTestResult>
  /**
   * The deliveries of one domain event (the relay's `webhooks` subscriber); `run` is the relay job's attempt
   * (1 the first time), more when the entry may have been dispatched already.
   */
  readonly dispatch: (entry: DomainEvent, run?: number) => Effect.Effect<void>
  /** Whether `dispatch` would deliver anything for the entry, from the remembered active webhooks. */
  readonly wants: (entry: DomainEvent) => Effect.Effect<boolean>
  /**
   * One delivery of an event Parley makes itself (not from a domain event:
   * `msg.conversation.inactive`), to one webhook in its payload version; one
   * per (webhook, `sourceKey`), a repeat adds nothing.
   */
  readonly deliver: (
    webhook: WebhookRecord,
    event: PlannedEvent,
    context: DeliveryContext,
    sourceKey: string
  ) => Effect.Effect<void>
  /** One attempt of a delivery (a `webhooks.delivery` job). */
  readonly attempt: (job: AttemptJob) => Effect.Effect<void>
  /** Sends a buffer's batch once it is due (a `webhooks.buffer-flush` job). */
  readonly flush: (job: FlushJob) => Effect.Effect<void>
  /** Drops deliveries past the log's retention (30 days); answers how many. */
  readonly prune: Effect.Effect<number>
  /**
   * Queues again what should have run a minute ago and did not (a job lost
   * between a commit and its enqueue): due attempts of pending deliveries and
   * flushes of due buffers. A job still queued or running is not duplicated.
   */
  readonly sweep: Effect.Effect<{ readonly attempts: number; readonly flushes: number }>
}>()("@parley/core/webhooks/WebhookDeliveries") {
  static readonly layer = Layer.effect(
    WebhookDeliveries,
    Effect.gen(function*() {
      const webhooks = yield* WebhooksRepo
      const deliveries = yield* WebhookDeliveriesRepo
      const buffers = yield* WebhookBuffersRepo
      const jobs = yield* JobQueue
      const tx = yield* Transactor
      const ids = yield* Ids
      const http = yield* WebhookHttp
      const settings = yield* WebhookSettings
      const propagate = yield* TracePropagation
      const active = yield* ActiveWebhooks

      const enqueueAttempt = (delivery: WebhookDeliveryRecord, attempt: number, runAt?: number) =>
        jobs.enqueue(
          DELIVERY_QUEUE,
          { project_id: delivery.project_id, delivery_id: delivery.id, attempt } satisfies AttemptJob,
          { ...JOB_RETRIES, dedupeKey: `${delivery.id}:${attempt}`, runAt }
        )

      const enqueueFlush = (buffer: WebhookBufferRecord) => {
        const due = Date.parse(buffer.due_at)
        return jobs.enqueue(BUFFER_FLUSH_QUEUE, { buffer_id: buffer.id } satisfies FlushJob, {
          ...JOB_RETRIES,
          dedupeKey: `${buffer.id}:${due}`,
          runAt: due
        })
      }

      const newDelivery = Effect.fnUntraced(function*(webhook: WebhookRecord, fields: {
        readonly event: string
        readonly body: Uint8Array
        readonly context: DeliveryContext
        readonly sourceKey: string | null
        readonly payloadVersion: PayloadVersion | null
        readonly batchSize: number | null
        readonly test: boolean
      }) {
        const now = iso(yield* Clock.currentTimeMillis)
        const delivery: WebhookDeliveryRecord = {
          id: yield* ids.uuid,
          project_id: webhook.project_id,
          webhook_id: webhook.id,
          webhook_url: webhook.url,
          event: fields.event,
          status: "pending",
          response_status: null,
          delivered_at: null,
          failed_at: null,
          last_attempt_at: null,
          next_attempt_at: now,
          attempt_count: 0,
          max_attempts: fields.test ? 1 : attemptsOf(webhook.retry_schedule),
          retry_schedule: webhook.retry_schedule,
          error_message: null,
          created_at: now,
          msg_config_id: fields.context.msg_config_id,
          phone_number_id: fields.context.phone_number_id,
          conversation_phone_number: fields.context.conversation_phone_number,
          // `upstream`: the payload's own hash, so a payload the network sends twice carries one key. Otherwise fixed
          // per (webhook, source) (decisions 6.2), so a dispatch made again sends the key it sent before.
          idempotency_key: fields.payloadVersion === null
            ? sha256Hex(fields.body)
            : fields.sourceKey === null
            ? yield* ids.uuid
            : nameUuid(`${webhook.id}\n${fields.sourceKey}`),
          payload_version: fields.payloadVersion,
          batch_size: fields.batchSize,
          test: fields.test,
          source_key: fields.sourceKey,
          body: toBase64(fields.body)
        }
        return delivery
      })

      // A delivery's first attempt goes out at once from this process, beside the job queue (a job per delivery was
      // most of a delivery's cost): retries, first attempts beyond the free slots, and attempts a stopping process
      // left unfinished (the sweep of stalled deliveries) go through the queue.
      const inlineSlots = yield* Semaphore.make(INLINE_FIRST_ATTEMPTS)
      const fork = yield* FiberSet.makeRuntime<never>()
      const firstAttempt = (delivery: WebhookDeliveryRecord, webhook: WebhookRecord) =>
        Effect.flatMap(inlineSlots.takeIfAvailable(1), (free) =>
          free
            ? Effect.sync(() => void fork(attemptNow(delivery, webhook).pipe(Effect.ensuring(inlineSlots.release(1)))))
            : Effect.asVoid(enqueueAttempt(delivery, 1)))

      /**
       * Stores a delivery and plans its first attempt; a source already delivered adds nothing. Also for an
       * existing pending one: its job may have been lost with a failed run (the dedupe key drops a repeat).
       */
      const createAndQueue = Effect.fnUntraced(
        function*(delivery: WebhookDeliveryRecord, webhook: WebhookRecord, later: AfterCommit) {
          const stored = yield* deliveries.insert(delivery)
          if (stored.delivery.status === "pending" && stored.delivery.attempt_count === 0) {
            later.push(firstAttempt(stored.delivery, webhook))
          }
        }
      )

      /** Sends the delivery's bytes with the webhook's current URL, secret and headers; never fails. */
      const send = Effect.fn("WebhookDeliveries.post", { kind: "client" })(function*(
        webhook: WebhookRecord,
        delivery: WebhookDeliveryRecord,
        attempt: number,
        body: Uint8Array = Buffer.from(delivery.body, "base64")
      ) {
        const startedAt = yield* Clock.currentTimeMillis
        const headers = deliveryHeaders(webhook, delivery, body)
        // A customer's raw-payload destination (`upstream`) sees the network's request as it was: no trace context.
        if (propagate && webhook.kind !== "upstream") Object.assign(headers, yield* traceHeaders(true))
        const answer = yield* http.post({
          url: webhook.url,
          headers,
          body,
          timeoutMs: ATTEMPT_TIMEOUT_MS,
          allowPrivate: settings.allowPrivateUrls
        }).pipe(
          // The adapter ends the attempt at its timeout (`Timed out after 10 s`).
          Effect.map((response): Pick<Outcome, "status" | "error"> => ({
            status: response.status,
            error: success(response.status) ? null : failureMessage(response.status, response.body)
          })),
          Effect.catch((error: WebhookHttpError) => Effect.succeed({ status: null, error: error.message }))
        )
        const endedAt = yield* Clock.currentTimeMillis
        yield* observeAttempt(webhook, delivery, attempt, { status: answer.status, startedAt })
        return { ...answer, startedAt, endedAt } satisfies Outcome
      })

      const attemptRecord = (delivery: WebhookDeliveryRecord, attempt: number, outcome: Outcome): WebhookAttemptRecord => ({
        delivery_id: delivery.id,
        attempt,
        attempted_at: iso(outcome.startedAt),
        response_status: outcome.status,
        duration_ms: Math.max(0, outcome.endedAt - outcome.startedAt),
        error: outcome.error
      })

      /** The delivery after attempt `attempt` ended with `outcome`. */
      const afterAttempt = (
        delivery: WebhookDeliveryRecord,
        webhook: WebhookRecord,
        attempt: number,
        outcome: Outcome
      ): WebhookDeliveryRecord => {
        const delivered = success(outcome.status)
        const final = delivered || attempt >= delivery.max_attempts
        const wait = RETRY_WAITS_MS[delivery.retry_schedule][attempt - 1] ?? 0
        return {
          ...delivery,
          webhook_url: webhook.url,
          status: delivered ? "delivered" : final ? "failed" : "pending",
          response_status: outcome.status,
          delivered_at: delivered ? iso(outcome.endedAt) : null,
          failed_at: !delivered && final ? iso(outcome.endedAt) : null,
          last_attempt_at: iso(outcome.startedAt),
          next_attempt_at: final ? null : iso(outcome.endedAt + wait),
          attempt_count: attempt,
          error_message: outcome.error
        }
      }

      /** Auto-pause (6.5): the rolling window of finished deliveries, from the last resume at the earliest. */
      const considerPause = Effect.fnUntraced(function*(webhook: WebhookRecord) {
        if (!webhook.auto_pause || !webhook.active) return
        const now = yield* Clock.currentTimeMillis
        const windowStart = Math.max(
          now - PAUSE_WINDOW_MS,
          webhook.failure_window_from === null ? 0 : Date.parse(webhook.failure_window_from)
        )
        const { failed, total } = yield* deliveries.finishedSince(webhook.id, iso(windowStart))
        if (total < PAUSE_MIN_DELIVERIES || failed < PAUSE_MIN_FAILURES || failed / total <= PAUSE_FAILURE_RATE) return
        const paused = yield* webhooks.pause(webhook.project_id, webhook.id, iso(now), "failure_rate")
        if (Option.isSome(paused)) {
          yield* active.forget
          yield* Effect.logWarning("Webhook paused: too many failed deliveries").pipe(
            Effect.annotateLogs({ webhookId: webhook.id, projectId: webhook.project_id, failed, total })
          )
        }
      })

      const attempt = Effect.fn("WebhookDeliveries.attempt")(function*(job: AttemptJob) {
        const found = yield* deliveries.findWithWebhook(job.project_id, job.delivery_id)
        if (Option.isNone(found)) return
        const { delivery, webhook } = found.value
        // Finished, or this attempt was already made (a repeated job): nothing to do.
        if (delivery.status !== "pending" || delivery.attempt_count >= job.attempt) return
        if (Option.isNone(webhook)) {
          const now = iso(yield* Clock.currentTimeMillis)
          yield* deliveries.update(
            { ...delivery, status: "failed", failed_at: now, next_attempt_at: null, error_message: "Webhook was deleted" },
            { status: delivery.status, attempt_count: delivery.attempt_count }
          )
          return
        }
        yield* attemptNow(delivery, webhook.value)
      })

      /**
       * Writes what attempt `number` left (`write`: true when it took): a final outcome alone (the write is
       * atomic with its attempt record, no transaction needed), then maybe an auto-pause; otherwise with the
       * next attempt queued at its time, in one transaction.
       */
      const recordOutcome = Effect.fnUntraced(function*(
        next: WebhookDeliveryRecord,
        webhook: WebhookRecord,
        number: number,
        write: Effect.Effect<boolean>
      ) {
        const written = next.status !== "pending" ? yield* write : yield* tx.withTransaction(
          Effect.tap(write, (took) => took ? enqueueAttempt(next, number + 1, Date.parse(next.next_attempt_at!)) : Effect.void)
        )
        if (written && next.status !== "pending" && !next.test) yield* considerPause(webhook)
      })

      /** The next attempt of a pending delivery: sent, recorded, and the one after it queued when one is due. */
      const attemptNow = Effect.fnUntraced(function*(delivery: WebhookDeliveryRecord, webhook: WebhookRecord) {
        const expected = { status: delivery.status, attempt_count: delivery.attempt_count }
        const number = delivery.attempt_count + 1
        const outcome = yield* send(webhook, delivery, number)
        const next = afterAttempt(delivery, webhook, number, outcome)
        if (next.status === "failed") yield* observeFailed
        yield* recordOutcome(next, webhook, number, deliveries.update(next, expected, attemptRecord(delivery, number, outcome)))
      })

      /**
       * The first attempt of a delivery not stored yet, then the delivery stored with its outcome and the
       * attempt (one write where storing first and recording the outcome took two). Until it is stored the
       * dispatch that made it is unfinished, so its job is the durability: a host that dies meanwhile leaves the
       * job to run again, and the attempt is made again with the same idempotency key. A source that turns out
       * to be delivered already records nothing more (that attempt was a repeat).
       */
      const attemptThenStore = Effect.fnUntraced(function*(delivery: WebhookDeliveryRecord, webhook: WebhookRecord, body: Uint8Array) {
        const outcome = yield* send(webhook, delivery, 1, body)
        const next = afterAttempt(delivery, webhook, 1, outcome)
        if (next.status === "failed") yield* observeFailed
        const store = deliveries.insert(next, attemptRecord(delivery, 1, outcome))
        yield* recordOutcome(next, webhook, 1, Effect.map(store, ({ created }) => created))
      })

      /** Adds one payload to the webhook's buffer for the conversation; a full buffer goes at once. */
      const bufferItem = Effect.fnUntraced(function*(
        webhook: WebhookRecord,
        event: string,
        item: BufferedItem,
        conversationKey: string,
        context: DeliveryContext,
        later: AfterCommit
      ) {
        const now = yield* Clock.currentTimeMillis
        const open: WebhookBufferRecord = {
          id: yield* ids.uuid,
          project_id: webhook.project_id,
          webhook_id: webhook.id,
          conversation_key: conversationKey,
          event,
          items: [item],
          payload_version: webhook.payload_version,
          first_at: iso(now),
          due_at: iso(now + webhook.buffer_window_seconds * 1000),
          ...context
        }
        const { buffer, opened } = yield* buffers.append(open, item, BUFFER_CAP_MS)
        if (buffer.items.length >= webhook.max_buffer_size) {
          const taken = yield* buffers.take(buffer.id, null)
          if (Option.isSome(taken)) yield* sendBatch(webhook, taken.value, later)
        } else if (opened) {
          later.push(enqueueFlush(buffer))
        }
      })

      const sendBatch = Effect.fnUntraced(function*(webhook: WebhookRecord, buffer: WebhookBufferRecord, later: AfterCommit) {
        const delivery = yield* newDelivery(webhook, {
          event: buffer.event,
          // Dispatches run concurrently: order the items by when their events happened (a stable sort).
          body: serialize(batchBody(
            buffer.event,
            [...buffer.items].sort((a, b) => Date.parse(a.received_at) - Date.parse(b.received_at)).map((i) => i.payload)
          )),
          context: {
            msg_config_id: buffer.msg_config_id,
            phone_number_id: buffer.phone_number_id,
            conversation_phone_number: buffer.conversation_phone_number
          },
          sourceKey: `buffer:${buffer.id}`,
          payloadVersion: buffer.payload_version,
          batchSize: buffer.items.length,
          test: false
        })
        yield* createAndQueue(delivery, webhook, later)
      })

      /** The plan's webhooks per scope, remembered (see `ActiveWebhooks`), and whether any of them listens. */
      const listenersOf = (plan: DeliveryPlan) =>
        Effect.gen(function*() {
          const scopes = plan.kind === "upstream" ? plan.phoneNumberIds : [plan.phoneNumberId]
          const listed = yield* Effect.forEach(scopes, (phoneNumberId) => active.list(plan.projectId, phoneNumberId))
          const listening = (webhook: WebhookRecord) =>
            plan.kind === "upstream"
              ? webhook.kind === "upstream"
              : webhook.kind === "ext" && plan.events.some((planned) => webhook.events.includes(planned.event))
          return { listed, any: listed.some((list) => list.some(listening)) }
        })

      // An entry it cannot read is wanted: `dispatch` logs it.
      const wants = (entry: DomainEvent) => {
        const plan = planDeliveries(entry)
        return plan === undefined ? Effect.succeed(true) : Effect.map(listenersOf(plan), ({ any }) => any)
      }

      const dispatch = Effect.fn("WebhookDeliveries.dispatch")(function*(entry: DomainEvent, run = 1) {
        const plan = planDeliveries(entry)
        if (plan === undefined) {
          return yield* Effect.logWarning("Webhooks: a domain event they cannot read was skipped").pipe(
            Effect.annotateLogs({ domainEventId: entry.id, type: entry.type })
          )
        }
        // Remembered, so an entry no webhook listens to costs no read and no write.
        const { any, listed } = yield* listenersOf(plan)
        if (!any) return
        /** Whether the webhook's payloads of this event go to its buffer for the conversation (6.4). */
        const buffered = (webhook: WebhookRecord, event: string) =>
          plan.kind === "ext" && plan.conversationKey !== null && webhook.buffer_enabled &&
          webhook.events.includes(event) && webhook.buffer_events.includes(event)
        // A buffer's append, take and batch go together in a transaction; deliveries alone need none (each
        // insert stands alone and a repeat of the entry adds nothing).
        const buffering = plan.kind === "ext" &&
          listed[0]!.some((webhook) => webhook.kind === "ext" && plan.events.some((planned) => buffered(webhook, planned.event)))
        // Attempted before they are stored: on the entry's first run (a run again may find them sent and stored
        // already), outside a transaction, in free inline slots.
        const attemptFirst = run === 1 && !buffering
        // Its slots are held until the dispatch ends, however it ends (a lost job claim interrupts it).
        const now: Array<readonly [WebhookDeliveryRecord, WebhookRecord, Uint8Array]> = []
        const later: AfterCommit = []
        const create = Effect.fnUntraced(function*(webhook: WebhookRecord, fields: Parameters<typeof newDelivery>[1]) {
          const delivery = yield* newDelivery(webhook, fields)
          if (attemptFirst && (yield* inlineSlots.takeIfAvailable(1))) {
            now.push([delivery, webhook, fields.body])
          } else {
            yield* createAndQueue(delivery, webhook, later)
          }
        })
        const writes = Effect.gen(function*() {
          if (plan.kind === "upstream") {
            for (const [i, phoneNumberId] of plan.phoneNumberIds.entries()) {
              for (const webhook of listed[i]!) {
                if (webhook.kind !== "upstream") continue
                yield* create(webhook, {
                  event: UPSTREAM_EVENT,
                  body: plan.body,
                  context: { msg_config_id: null, phone_number_id: phoneNumberId, conversation_phone_number: null },
                  sourceKey: entry.id,
                  payloadVersion: null,
                  batchSize: null,
                  test: false
                })
              }
            }
            return
          }
          for (const webhook of listed[0]!) {
            if (webhook.kind !== "ext") continue
            for (const planned of plan.events) {
              if (!webhook.events.includes(planned.event)) continue
              const body = bodyOf(planned, webhook.payload_version)
              if (buffered(webhook, planned.event)) {
                const item = { received_at: entry.created_at, payload: body }
                yield* bufferItem(webhook, planned.event, item, plan.conversationKey!, plan.context, later)
                continue
              }
              yield* create(webhook, {
                event: planned.event,
                body: serialize(body),
                context: plan.context,
                sourceKey: `${entry.id}:${planned.event}`,
                payloadVersion: webhook.payload_version,
                batchSize: null,
                test: false
              })
            }
          }
        })
        yield* Effect.gen(function*() {
          yield* buffering ? tx.withTransaction(writes) : writes
          yield* runAfterCommit(later)
          const attemptOne = ([delivery, webhook, body]: typeof now[number]) => attemptThenStore(delivery, webhook, body)
          // Usually one: no fiber of its own then.
          yield* now.length === 1
            ? attemptOne(now[0]!)
            : Effect.forEach(now, attemptOne, { concurrency: "unbounded", discard: true })
        }).pipe(Effect.ensuring(Effect.suspend(() => now.length === 0 ? Effect.void : inlineSlots.release(now.length))))
      })

      const deliver = Effect.fn("WebhookDeliveries.deliver")(
        function*(webhook: WebhookRecord, event: PlannedEvent, context: DeliveryContext, sourceKey: string) {
          // One insert: no transaction (see `dispatch`).
          const later: AfterCommit = []
          yield* createAndQueue(yield* newDelivery(webhook, {
            event: event.event,
            body: serialize(bodyOf(event, webhook.payload_version)),
            context,
            sourceKey,
            payloadVersion: webhook.payload_version,
            batchSize: null,
            test: false
          }), webhook, later)
          yield* runAfterCommit(later)
        }
      )

      const flush = Effect.fn("WebhookDeliveries.flush")(function*(job: FlushJob) {
        const now = iso(yield* Clock.currentTimeMillis)
        const later: AfterCommit = []
        yield* tx.withTransaction(Effect.gen(function*() {
          const taken = yield* buffers.take(job.buffer_id, now)
          if (Option.isNone(taken)) {
            // Not due yet (a later message moved it): wake again then. Gone: sent when it filled up.
            const open = yield* buffers.find(job.buffer_id)
            if (Option.isSome(open)) later.push(enqueueFlush(open.value))
            return
          }
          const buffer = taken.value
          const webhook = yield* webhooks.findById(buffer.project_id, buffer.webhook_id)
          // Paused or deleted meanwhile: while paused nothing is queued (6.5).
          if (Option.isNone(webhook) || !webhook.value.active) return
          yield* sendBatch(webhook.value, buffer, later)
        }))
        yield* runAfterCommit(later)
      })

      const sendTest = Effect.fn("WebhookDeliveries.sendTest")(function*(webhook: WebhookRecord, event: string) {
        const now = iso(yield* Clock.currentTimeMillis)
        const upstream = webhook.kind === "upstream"
        const delivery = yield* newDelivery(webhook, {
          event: upstream ? UPSTREAM_EVENT : event,
          body: upstream
            ? sampleUpstreamBody(webhook, now)
            : serialize(bodyOf(sampleEvent(event, webhook, now), webhook.payload_version)),
          context: { msg_config_id: null, phone_number_id: webhook.phone_number_id, conversation_phone_number: null },
          sourceKey: null,
          payloadVersion: upstream ? null : webhook.payload_version,
          batchSize: null,
          test: true
        })
        yield* deliveries.insert(delivery)
        const outcome = yield* send(webhook, delivery, 1)
        const next = afterAttempt(delivery, webhook, 1, outcome)
        yield* deliveries.update(next, { status: "pending", attempt_count: 0 }, attemptRecord(delivery, 1, outcome))
        const result: WebhookTestResult = {
          success: next.status === "delivered",
          response_status: outcome.status,
          ...(outcome.error !== null ? { error: outcome.error } : {}),
          delivery_id: delivery.id
        }
        return result
      })

      const findVisible = (projectId: string, id: string) =>
        Effect.flatMap(deliveries.findById(projectId, id), (found) =>
          Option.isSome(found) ? Effect.succeed(found.value) : Effect.fail(notFound("Webhook delivery", id)))

      const retry = Effect.fn("WebhookDeliveries.retry")(function*(principal: Principal, id: string) {
        const delivery = yield* findVisible(principal.project.id, id)
        if (delivery.test) return yield* unprocessable("Test deliveries cannot be retried")
        if (delivery.status !== "failed") {
          return yield* unprocessable(`Only failed deliveries can be retried; this one is ${delivery.status}`)
        }
        if (Option.isNone(yield* webhooks.findById(delivery.project_id, delivery.webhook_id))) {
          return yield* unprocessable("The webhook of this delivery no longer exists")
        }
        const now = iso(yield* Clock.currentTimeMillis)
        const next: WebhookDeliveryRecord = {
          ...delivery,
          status: "pending",
          failed_at: null,
          next_attempt_at: now,
          max_attempts: delivery.attempt_count + 1
        }
        const written = yield* deliveries.update(next, { status: "failed", attempt_count: delivery.attempt_count })
        // Someone retried it a moment ago.
        if (!written) return yield* unprocessable("Only failed deliveries can be retried; this one is pending")
        yield* enqueueAttempt(next, next.attempt_count + 1)
        return next
      })

      const prune = Effect.gen(function*() {
        const before = iso((yield* Clock.currentTimeMillis) - DELIVERY_RETENTION_MS)
        let removed = 0
        while (true) {
          const n = yield* deliveries.prune(before, PRUNE_BATCH)
          removed += n
          if (n < PRUNE_BATCH) return removed
        }
      }).pipe(Effect.withSpan("WebhookDeliveries.prune"))

      const sweep = Effect.gen(function*() {
        const before = iso((yield* Clock.currentTimeMillis) - SWEEP_GRACE_MS)
        let attempts = 0
        for (const delivery of yield* deliveries.listStalled(before, SWEEP_BATCH)) {
          if ((yield* enqueueAttempt(delivery, delivery.attempt_count + 1)) !== null) attempts++
        }
        let flushes = 0
        for (const buffer of yield* buffers.listOverdue(before, SWEEP_BATCH)) {
          if ((yield* enqueueFlush(buffer)) !== null) flushes++
        }
        if (attempts + flushes > 0) {
          yield* Effect.logWarning("Webhooks: queued lost jobs again").pipe(Effect.annotateLogs({ attempts, flushes }))
        }
        return { attempts, flushes }
      }).pipe(Effect.withSpan("WebhookDeliveries.sweep"))

      return WebhookDeliveries.of({
        wants,
        list: Effect.fn("WebhookDeliveries.list")(function*(principal: Principal, query: DeliveryQuery, window: ListWindow) {
          const { period, ...filter } = query
          const createdAfter = period === undefined
            ? undefined
            : iso((yield* Clock.currentTimeMillis) - DELIVERY_PERIOD_MS[period])
          return yield* deliveries.list(principal.project.id, { ...filter, created_after: createdAfter }, window)
        }),
        get: Effect.fn("WebhookDeliveries.get")(function*(principal: Principal, id: string) {
          const delivery = yield* findVisible(principal.project.id, id)
          return { delivery, attempts: yield* deliveries.attempts(delivery.id) }
        }),
        retry,
        sendTest,
        dispatch,
        deliver,
        attempt,
        flush,
        prune,
        sweep
      })
    })
  ).pipe(Layer.provideMerge(ActiveWebhooks.layer))
}
