/**
 * Webhook delivery attempts reach log search where they are recorded (decisions 4.7): `layerRecordedDeliveries`
 * wraps the `WebhookDeliveriesRepo` adapter and hands every attempt recorded to the `LogRecorder` once the write
 * succeeded, so the deliveries change nothing. An attempt's entry is its outcome, not the body sent (that stays in
 * the delivery record, 30 days).
 */
import { Effect, Layer } from "effect"
import type { LogDraft } from "../logs/LogRecorder.ts"
import { LogRecorder } from "../logs/LogRecorder.ts"
import type { WebhookAttemptRecord, WebhookDeliveryRecord } from "./Webhook.ts"
import { WebhookDeliveriesRepo } from "./WebhooksRepo.ts"

const succeeded = (a: WebhookAttemptRecord) => a.error === null && a.response_status !== null && a.response_status >= 200 && a.response_status < 300

export const deliveryAttemptEntry = (d: WebhookDeliveryRecord, a: WebhookAttemptRecord): LogDraft => {
  const ok = succeeded(a)
  const error = ok ? null : a.error ?? d.error_message ?? `HTTP ${a.response_status}`
  return {
    project_id: d.project_id,
    source: "webhook_delivery",
    occurred_at: a.attempted_at,
    problem: !ok,
    // A failure that will be retried is a warning; the last one an error.
    level: ok ? "info" : d.status === "failed" ? "error" : "warning",
    message: `${d.event} to ${d.webhook_url}: ${ok ? `delivered (${a.response_status})` : `attempt ${a.attempt} failed: ${error}`}`,
    status: d.status,
    resource_type: "webhook_delivery",
    resource_id: d.id,
    event: d.event,
    event_type: d.event,
    webhook_id: d.webhook_id,
    webhook_url: d.webhook_url,
    phone_number_id: d.phone_number_id,
    response_status: a.response_status,
    response_time_ms: Math.round(a.duration_ms),
    error_message: error,
    attributes: {
      attempt: a.attempt,
      max_attempts: d.max_attempts,
      next_attempt_at: d.next_attempt_at,
      test: d.test,
      conversation_phone_number: d.conversation_phone_number
    }
  }
}

const recordAttempt = (recorder: LogRecorder["Service"], delivery: WebhookDeliveryRecord, attempt: WebhookAttemptRecord | undefined) =>
  attempt === undefined ? Effect.void : recorder.record([deliveryAttemptEntry(delivery, attempt)])

export const layerRecordedDeliveries = Layer.effect(
  WebhookDeliveriesRepo,
  Effect.gen(function*() {
    const repo = yield* WebhookDeliveriesRepo
    const recorder = yield* LogRecorder
    return WebhookDeliveriesRepo.of({
      ...repo,
      insert: (delivery, attempt) =>
        Effect.tap(repo.insert(delivery, attempt), (stored) => (stored.created ? recordAttempt(recorder, delivery, attempt) : Effect.void)),
      update: (next, expected, attempt) =>
        Effect.tap(repo.update(next, expected, attempt), (ok) => (ok ? recordAttempt(recorder, next, attempt) : Effect.void))
    })
  })
)
