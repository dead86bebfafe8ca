/**
 * Broadcast progress for an operator: recipients settled by outcome (sent, failed, suppressed, ...) and attempts put
 * off (throttled, the template paused). Labels are bounded: outcomes are a fixed list; which broadcast is the API's to
 * say, not a label.
 */
import { Effect, Metric } from "effect"
import { labelled } from "../shared/Telemetry.ts"
import type { RecipientOutcome } from "./BroadcastsRepo.ts"

const recipients = labelled(
  Metric.counter("parley_broadcast_recipients_total", {
    description: "Broadcast recipients attempted, by outcome (a recipient's final status, or retry when put off)",
    incremental: true
  }),
  ["outcome"]
)

/** Counts one batch: the recipients settled (`outcomes`) and those put off for a retry. */
export const observeBatch = (outcomes: ReadonlyArray<RecipientOutcome>, retries: number) =>
  Effect.andThen(
    Effect.forEach(outcomes, (o) => Metric.update(recipients({ outcome: o.status }), 1), { discard: true }),
    retries > 0 ? Metric.update(recipients({ outcome: "retry" }), retries) : Effect.void
  )
