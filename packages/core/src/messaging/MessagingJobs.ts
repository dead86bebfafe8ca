/**
 * The background work of messaging, on the `JobQueue`:
 *
 * - `messaging.upstream-inbox`: processes one acknowledged upstream POST.
 * - `messaging.upstream-forward`: sends a raw POST, unchanged and with its
 *   original `X-Hub-Signature-256`, to a config's `webhook_destination_url`.
 * - `messaging.idle-sweep`, every minute: ends the conversations 24 hours
 *   after their last message.
 * - `messaging.number-refresh`: reads a number's facts again.
 * - `messaging.maintenance`, every 10 minutes (once when a host starts):
 *   queues again inbox entries whose job was lost, drops processed inbox
 *   entries after 7 days, releases the numbers the service provisioned that
 *   had no message for 30 days.
 *
 * In simulator mode it also makes ingestion the simulator's webhook sink, for
 * as long as the layer lives.
 */
import { Cause, Clock, Duration, Effect, Layer, Option, Predicate, Redacted, Schema } from "effect"
import { FetchHttpClient, HttpClient, HttpClientRequest } from "effect/http"
import { decodingPayload, JobQueue, SlotJob } from "../ports/JobQueue.ts"
import { MessageConfigsRepo } from "./numbers/MessageConfigsRepo.ts"
import { ConversationsRepo, UpstreamInboxRepo } from "./MessagingRepo.ts"
import { MessageConfigs } from "./numbers/MessageConfigs.ts"
import { UpstreamIngestion } from "./Ingestion.ts"
import { Messaging } from "./Messaging.ts"
import {
  CONVERSATION_IDLE_MS,
  CONVERSATION_IDLE_SWEEP_QUEUE,
  ForwardJob,
  InboxJob,
  MESSAGING_MAINTENANCE_QUEUE,
  NUMBER_REFRESH_QUEUE,
  NumberRefreshJob,
  requestInboxProcessing,
  UPSTREAM_FORWARD_QUEUE,
  UPSTREAM_INBOX_QUEUE
} from "./Queues.ts"
import { UpstreamSettings } from "./Upstream.ts"
import { HubSignatureHeader } from "../network/Webhook.ts"

const MAINTENANCE_EVERY_MS = 10 * 60 * 1000
/** How late after its 24 hours of silence a conversation ends, at most (plus the queue's own delay). */
const IDLE_SWEEP_EVERY_MS = 60 * 1000
/** The most conversations one sweep ends; the rest wait for the next minute, which carries on. */
const IDLE_SWEEP_MAX = 20 * 500
/** An inbox entry still unprocessed this long after it arrived lost its job. */
const INBOX_STALE_MS = 2 * 60 * 1000
const INBOX_KEEP_MS = 7 * 24 * 60 * 60 * 1000
const BATCH = 500

/** A forward that did not land; retried by the queue. */
export class ForwardFailed extends Schema.TaggedError<ForwardFailed>()("ForwardFailed", {
  msg_config_id: Schema.String,
  reason: Schema.String
}) {}

const forwardReason = (cause: Cause.Cause<unknown>): string => {
  const error = Cause.squash(cause)
  if (Predicate.hasProperty(error, "_tag") && error._tag === "TimeoutError") return "no answer within 10 seconds"
  const reason = Predicate.hasProperty(error, "reason") ? error.reason : undefined
  if (Predicate.hasProperty(reason, "_tag") && reason._tag === "StatusCodeError" && Predicate.hasProperty(reason, "response")) {
    return `HTTP ${(reason.response as { readonly status: number }).status}`
  }
  return Predicate.hasProperty(reason, "_tag") ? String(reason._tag) : "transport failure"
}

export const layerMessagingWorkers = Layer.effectDiscard(Effect.gen(function*() {
  const jobs = yield* JobQueue
  const ingestion = yield* UpstreamIngestion
  const messaging = yield* Messaging
  const numbers = yield* MessageConfigs
  const configs = yield* MessageConfigsRepo
  const conversations = yield* ConversationsRepo
  const inbox = yield* UpstreamInboxRepo
  const settings = yield* UpstreamSettings
  const http = (yield* HttpClient.HttpClient).pipe(HttpClient.filterStatusOk)

  const forward = Effect.fn("MessagingJobs.forward")(function*(job: ForwardJob) {
    const entry = yield* inbox.find(job.inbox_id)
    const config = yield* configs.findLiveById(job.msg_config_id)
    if (Option.isNone(entry) || Option.isNone(config) || config.value.webhook_destination_url === null) return
    yield* HttpClientRequest.post(Redacted.value(config.value.webhook_destination_url)).pipe(
      HttpClientRequest.setHeader(HubSignatureHeader, entry.value.signature),
      HttpClientRequest.bodyUint8Array(entry.value.body, "application/json"),
      http.execute,
      // The customer's URL sees the network's request, not Parley's trace context (`traceparent`, `b3`).
      Effect.provideService(HttpClient.TracerPropagationEnabled, false),
      Effect.timeout(Duration.seconds(10)),
      Effect.scoped,
      // The destination URL is write-only: a failure names what went wrong, never where (it would reach the logs).
      Effect.catchCause((cause) => Effect.fail(new ForwardFailed({ msg_config_id: job.msg_config_id, reason: forwardReason(cause) })))
    )
  })

  // One sweep a minute across hosts (the slot is its dedupe key), not one timer per conversation: a conversation
  // opens with no job to insert, and ends at most a minute after its 24 hours.
  const idleSweep = Effect.fn("MessagingJobs.idleSweep")(function*(slot: number) {
    const now = yield* Clock.currentTimeMillis
    const next = Math.max(slot, Math.floor(now / IDLE_SWEEP_EVERY_MS)) + 1
    yield* jobs.enqueue(CONVERSATION_IDLE_SWEEP_QUEUE, { slot: next }, {
      runAt: next * IDLE_SWEEP_EVERY_MS,
      dedupeKey: `minute:${next}`
    })
    const silentSince = new Date(now - CONVERSATION_IDLE_MS).toISOString()
    let ended = 0
    let seen = 0
    while (seen < IDLE_SWEEP_MAX) {
      const idle = yield* conversations.listIdle(silentSince, BATCH)
      if (idle.length === 0) break
      seen += idle.length
      const endedBefore = ended
      for (const conversation of idle) {
        const outcome = yield* messaging.endIfIdle(conversation.project_id, conversation.id)
        if (Option.isSome(outcome) && outcome.value.status === "ended") ended++
      }
      // A batch none of which ended (each spoke after it was listed) would come back as it was: the next minute sees.
      if (ended === endedBefore) break
    }
    if (ended > 0) yield* Effect.logDebug("Idle conversations ended").pipe(Effect.annotateLogs({ ended }))
  })

  const maintenance = Effect.fn("MessagingJobs.maintenance")(function*(slot: number) {
    const now = yield* Clock.currentTimeMillis
    const next = Math.max(slot, Math.floor(now / MAINTENANCE_EVERY_MS)) + 1
    yield* jobs.enqueue(MESSAGING_MAINTENANCE_QUEUE, { slot: next }, {
      runAt: next * MAINTENANCE_EVERY_MS,
      dedupeKey: `slot:${next}`
    })
    const stale = yield* inbox.listUnprocessed(new Date(now - INBOX_STALE_MS).toISOString(), BATCH)
    for (const entry of stale) yield* requestInboxProcessing(jobs, entry.id)
    const pruned = yield* inbox.prune(new Date(now - INBOX_KEEP_MS).toISOString())
    const released = yield* numbers.releaseIdle
    yield* Effect.logDebug("Messaging maintenance done").pipe(
      Effect.annotateLogs({ requeued: stale.length, pruned, released })
    )
  })

  // Two payloads at a time, four updates each: the acknowledging path keeps connections of the pool free.
  yield* jobs.work(UPSTREAM_INBOX_QUEUE, { concurrency: 2 }, decodingPayload(InboxJob, (payload, job) =>
    // The last attempt closes the entry whatever failed, so one poisoned update never blocks it forever.
    ingestion.process(payload.inbox_id, { final: job.attempt >= 5 }).pipe(Effect.asVoid)))
  yield* jobs.work(UPSTREAM_FORWARD_QUEUE, { concurrency: 4 }, decodingPayload(ForwardJob, forward))
  yield* jobs.work(NUMBER_REFRESH_QUEUE, { concurrency: 2 }, decodingPayload(NumberRefreshJob, (payload) =>
    Effect.flatMap(configs.findLiveById(payload.msg_config_id), Option.match({
      onNone: () => Effect.void,
      onSome: (config) => Effect.asVoid(numbers.refreshFacts(config))
    }))))
  yield* jobs.work(MESSAGING_MAINTENANCE_QUEUE, { concurrency: 1 }, decodingPayload(SlotJob, (payload) => maintenance(payload.slot)))
  yield* jobs.work(CONVERSATION_IDLE_SWEEP_QUEUE, { concurrency: 1 }, decodingPayload(SlotJob, (payload) => idleSweep(payload.slot)))
  const startedAt = yield* Clock.currentTimeMillis
  const current = Math.floor(startedAt / MAINTENANCE_EVERY_MS)
  yield* jobs.enqueue(MESSAGING_MAINTENANCE_QUEUE, { slot: current }, { dedupeKey: `slot:${current}` })
  const minute = Math.floor(startedAt / IDLE_SWEEP_EVERY_MS)
  yield* jobs.enqueue(CONVERSATION_IDLE_SWEEP_QUEUE, { slot: minute }, { dedupeKey: `minute:${minute}` })

  // The simulated network posts its webhooks through the same path as the real one, signature check included.
  if (Option.isSome(settings.simulator)) {
    const simulator = settings.simulator.value
    yield* Effect.acquireRelease(
      simulator.setSink((body, signature) => ingestion.receive(body, signature)),
      () => simulator.setSink(undefined)
    )
  }
})).pipe(Layer.provide(FetchHttpClient.layer))
