/**
 * `msg.conversation.inactive` (decisions 6.1, 6.3): no message in either
 * direction for the webhook's `inactivity_minutes`; once per quiet period,
 * re-armed by the next message.
 *
 * - Arming: messaging writes `msg.conversation.activity` with every message it
 *   stores (inbound and outbound); the relay hands it to the
 *   `webhooks-inactivity` subscriber, which queues one `webhooks.inactivity`
 *   timer per active number-level `ext` webhook subscribed to the event, at
 *   (message activity time + the webhook's minutes), dedupe key
 *   `<webhook>:<conversation>:<message>`.
 * - Firing: the stored records decide. Nothing is sent when the webhook is
 *   gone, paused or no longer subscribed, the conversation has ended, or a
 *   newer message was stored (its own timer covers the new quiet period).
 *   When the conversation's `last_active_at` + the webhook's current minutes
 *   is still ahead (the minutes grew), the timer waits until then.
 *   Otherwise one delivery through `WebhookDeliveries.deliver`, source key
 *   `inactive:<conversation>:<message>`: once per (webhook, quiet period).
 */
import { Clock, Effect, Option, Schema } from "effect"
import { type ConversationActivityPayload, v2Conversation } from "../messaging/DomainEvents.ts"
import { Messaging } from "../messaging/Messaging.ts"
import { JobQueue } from "../ports/JobQueue.ts"
import type { DomainEvent } from "../ports/Outbox.ts"
import { WebhooksRepo } from "./WebhooksRepo.ts"
import { configRef } from "../messaging/numbers/MessageConfig.ts"
import { ActiveWebhooks } from "./ActiveWebhooks.ts"
import { WebhookDeliveries } from "./Deliveries.ts"
import { toV1 } from "./Payloads.ts"
import type { WebhookRecord } from "./Webhook.ts"

export const INACTIVE_EVENT = "msg.conversation.inactive"
export const INACTIVITY_QUEUE = "webhooks.inactivity"
export const INACTIVITY_SUBSCRIBER = "webhooks-inactivity"

const MINUTE_MS = 60_000
const JOB_RETRIES = { retryLimit: 5, retryDelayMs: 5_000 }

export const InactivityJob = Schema.Struct({
  project_id: Schema.String,
  webhook_id: Schema.String,
  conversation_id: Schema.String,
  /** Parley's id of the message that started the quiet period. */
  message_id: Schema.String
})
export type InactivityJob = typeof InactivityJob.Type

const isActivity = (u: unknown): u is ConversationActivityPayload =>
  typeof u === "object" && u !== null &&
  ["conversation_id", "message_id", "phone_number_id", "active_at"].every((k) =>
    typeof (u as Record<string, unknown>)[k] === "string"
  )

const listens = (webhook: WebhookRecord) =>
  webhook.active && webhook.kind === "ext" && webhook.phone_number_id !== null && webhook.events.includes(INACTIVE_EVENT)

/**
 * Whether `arm` would arm anything for an activity entry: a webhook of the number listens (an unreadable entry is
 * wanted: `arm` logs it). Webhooks' `DomainEventInterest` in `msg.conversation.activity`.
 */
export const inactivityWanted = (active: ActiveWebhooks["Service"]) => (entry: DomainEvent) => {
  const payload = entry.payload
  if (entry.project_id === null || !isActivity(payload)) return Effect.succeed(true)
  return Effect.map(active.list(entry.project_id, payload.phone_number_id), (webhooks) => webhooks.some(listens))
}

/** Arms and fires the timers; built inside the webhook workers. */
export const makeWebhookInactivity = Effect.gen(function*() {
  const webhooks = yield* WebhooksRepo
  const messaging = yield* Messaging
  const jobs = yield* JobQueue
  const deliveries = yield* WebhookDeliveries
  const active = yield* ActiveWebhooks

  const enqueue = (job: InactivityJob, runAt: number, dedupeKey: string) =>
    jobs.enqueue(INACTIVITY_QUEUE, job, { ...JOB_RETRIES, runAt, dedupeKey })

  /** The relay's `webhooks-inactivity` subscriber: one timer per listening webhook of the number. */
  const arm = Effect.fn("WebhookInactivity.arm")(function*(entry: DomainEvent) {
    const payload = entry.payload
    if (entry.project_id === null || !isActivity(payload)) {
      return yield* Effect.logWarning("Webhooks: an activity entry they cannot read was skipped").pipe(
        Effect.annotateLogs({ domainEventId: entry.id })
      )
    }
    const activeAt = Date.parse(payload.active_at)
    // Remembered (see `ActiveWebhooks`): every stored message comes here, and most numbers have no such webhook.
    for (const webhook of yield* active.list(entry.project_id, payload.phone_number_id)) {
      if (!listens(webhook)) continue
      const job: InactivityJob = {
        project_id: entry.project_id,
        webhook_id: webhook.id,
        conversation_id: payload.conversation_id,
        message_id: payload.message_id
      }
      yield* enqueue(
        job,
        activeAt + webhook.inactivity_minutes * MINUTE_MS,
        `${webhook.id}:${payload.conversation_id}:${payload.message_id}`
      )
    }
  })

  /** A `webhooks.inactivity` timer: delivers when the conversation is still quiet since the job's message. */
  const fire = Effect.fn("WebhookInactivity.fire")(function*(job: InactivityJob) {
    const webhook = yield* webhooks.findById(job.project_id, job.webhook_id)
    if (Option.isNone(webhook) || !listens(webhook.value)) return
    const conversation = yield* messaging.findConversation(job.project_id, job.conversation_id)
    if (Option.isNone(conversation) || conversation.value.status !== "active") return
    if (conversation.value.phone_number_id !== webhook.value.phone_number_id) return
    const newest = yield* messaging.listMessages(job.project_id, { conversation_id: job.conversation_id }, { mode: "cursor", limit: 1 })
    const message = newest.items[0]
    // A newer message arrived: its own timer covers the new quiet period.
    if (message === undefined || message.id !== job.message_id) return
    const minutes = webhook.value.inactivity_minutes
    const due = Date.parse(conversation.value.last_active_at) + minutes * MINUTE_MS
    const now = yield* Clock.currentTimeMillis
    if (now < due) {
      yield* enqueue(job, due, `${job.webhook_id}:${job.conversation_id}:${job.message_id}:${due}`)
      return
    }
    const config = yield* messaging.findNumber(job.project_id, conversation.value.msg_config_id)
    const msgConfig = Option.isSome(config) ? configRef(config.value) : null
    const v2 = {
      conversation: v2Conversation(conversation.value),
      since_message: {
        id: message.id,
        msg_message_id: message.network_id,
        direction: message.direction,
        created_at: message.created_at
      },
      inactivity: { minutes },
      phone_number_id: conversation.value.phone_number_id
    }
    yield* deliveries.deliver(
      webhook.value,
      { event: INACTIVE_EVENT, v1: toV1(v2, msgConfig), v2 },
      {
        msg_config_id: conversation.value.msg_config_id,
        phone_number_id: conversation.value.phone_number_id,
        conversation_phone_number: conversation.value.phone_number
      },
      `inactive:${job.conversation_id}:${job.message_id}`
    )
  })

  return { arm, fire } as const
})
