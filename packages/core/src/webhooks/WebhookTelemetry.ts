/**
 * What webhook deliveries tell an operator: attempts by result, deliveries that failed for good, and the lag between
 * a delivery's creation and each attempt. Labels are bounded (results, first or retry); the webhook's and delivery's
 * ids go on the span only, never its URL's query, its secret or its body.
 */
import { Effect, Metric } from "effect"
import { LAG_BUCKETS, labelled } from "../shared/Telemetry.ts"
import type { WebhookDeliveryRecord, WebhookRecord } from "./Webhook.ts"

const attempts = labelled(
  Metric.counter("parley_webhook_attempts_total", {
    description: "Webhook delivery attempts, by result (success, http_error, transport_error)",
    incremental: true
  }),
  ["result"]
)

const failed = labelled(
  Metric.counter("parley_webhook_deliveries_failed_total", {
    description: "Webhook deliveries that failed for good (attempts exhausted)",
    incremental: true
  }),
  []
)({})

const lag = labelled(
  Metric.histogram("parley_webhook_delivery_lag_seconds", {
    description: "Seconds from a delivery's creation to an attempt, by attempt (first, retry)",
    boundaries: LAG_BUCKETS
  }),
  ["attempt"]
)

/**
 * Counts one attempt (`status`: the answer's, null when none came) and puts it on the attempt's span. Once per
 * attempt on the delivery path: one effect, the attributes written as they are (no copy filtered of empty values).
 */
export const observeAttempt = (
  webhook: WebhookRecord,
  delivery: WebhookDeliveryRecord,
  attempt: number,
  outcome: { readonly status: number | null; readonly startedAt: number }
) => {
  const result = outcome.status === null ? "transport_error" : outcome.status >= 200 && outcome.status < 300 ? "success" : "http_error"
  const created = Date.parse(delivery.created_at)
  const counted = Metric.update(attempts({ result }), 1)
  const timed = Number.isFinite(created)
    ? Effect.andThen(counted, Metric.update(lag({ attempt: attempt <= 1 ? "first" : "retry" }), Math.max(0, outcome.startedAt - created) / 1000))
    : counted
  return Effect.andThen(
    timed,
    Effect.annotateCurrentSpan(
      outcome.status === null
        ? {
          "parley.project.id": webhook.project_id,
          "parley.webhook.id": webhook.id,
          "parley.webhook.delivery_id": delivery.id,
          "parley.webhook.event": delivery.event,
          "parley.webhook.attempt": attempt,
          "parley.webhook.result": result
        }
        : {
          "parley.project.id": webhook.project_id,
          "parley.webhook.id": webhook.id,
          "parley.webhook.delivery_id": delivery.id,
          "parley.webhook.event": delivery.event,
          "parley.webhook.attempt": attempt,
          "parley.webhook.result": result,
          "http.response.status_code": outcome.status
        }
    )
  )
}

/** Counts a delivery that failed for good. */
export const observeFailed = Metric.update(failed, 1)
