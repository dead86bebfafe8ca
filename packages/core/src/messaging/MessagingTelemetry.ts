/**
 * What messaging tells an operator: sends by outcome and network error code, inbound messages by outcome, and how
 * late status reports arrive. Labels are bounded: outcomes and statuses are fixed lists, error codes the network's
 * documented codes. Spans carry ids (message, number, project), never a body or a phone number.
 */
import { Clock, Effect, Metric, Option } from "effect"
import { annotate, LAG_BUCKETS, labelled } from "../shared/Telemetry.ts"
import type { InboundRecording } from "./InboundRecording.ts"
import type { MessageConfigRecord } from "./numbers/MessageConfig.ts"
import type { OutboundOutcome } from "./Outbound.ts"
import type { Json } from "./Recording.ts"

const sends = labelled(
  Metric.counter("parley_messages_sent_total", {
    description: "Outbound sends, by outcome (accepted, refused, unavailable, outside_window, account_mismatch, withheld) and network error code",
    incremental: true
  }),
  ["status", "error_code"]
)

const inbound = labelled(
  Metric.counter("parley_messages_inbound_total", {
    description: "Inbound messages handled, by outcome (recorded, duplicate, unaddressable)",
    incremental: true
  }),
  ["outcome"]
)

const reportLag = labelled(
  Metric.histogram("parley_status_report_lag_seconds", {
    description: "Seconds between a status report's network timestamp and its processing, by status",
    boundaries: LAG_BUCKETS
  }),
  ["status"]
)

const STATUSES = new Set(["sent", "delivered", "read", "failed", "played", "deleted"])

const snake = (tag: string) => tag.replace(/[A-Z]/g, (c, i: number) => `${i === 0 ? "" : "_"}${c.toLowerCase()}`)

/** Counts a send's outcome and puts it on the send's span. */
export const observeSend = (config: MessageConfigRecord, outcome: OutboundOutcome) => {
  const status = snake(outcome._tag)
  const errorCode = outcome._tag === "Refused" ? String(outcome.error.code) : ""
  const message = outcome._tag === "Accepted" ? Option.getOrUndefined(outcome.message) : undefined
  return Effect.andThen(
    Metric.update(sends({ status, error_code: errorCode }), 1),
    annotate({
      "parley.project.id": config.project_id,
      "parley.phone_number.id": config.phone_number_id,
      "parley.message.id": message?.id,
      "parley.message.network_id": outcome._tag === "Accepted" ? outcome.networkId : undefined,
      "parley.send.status": status,
      "parley.network.error_code": errorCode === "" ? undefined : errorCode
    })
  )
}

const reportLagOf = (statuses: ReadonlyArray<Json>) =>
  Effect.flatMap(Clock.currentTimeMillis, (now) =>
    Effect.forEach(statuses, (s) => {
      const report = s
      const seconds = Number(report.timestamp)
      if (!Number.isFinite(seconds) || seconds <= 0) return Effect.void
      const status = typeof report.status === "string" && STATUSES.has(report.status) ? report.status : "other"
      return Metric.update(reportLag({ status }), Math.max(0, now / 1000 - seconds))
    }, { discard: true }))

/** `recording` whose inbound messages are counted and whose status reports' lag is measured. */
export const observeRecording = (recording: InboundRecording): InboundRecording => ({
  ...recording,
  recordInbound: (config, input) =>
    Effect.tap(recording.recordInbound(config, input), (outcome) =>
      Effect.andThen(
        Metric.update(inbound({ outcome: snake(outcome._tag) }), 1),
        outcome._tag === "Recorded"
          ? annotate({ "parley.project.id": config.project_id, "parley.message.id": outcome.message.id })
          : Effect.void
      )),
  recordInboundAll: (config, inputs, before) =>
    Effect.tap(recording.recordInboundAll(config, inputs, before), (outcomes) =>
      Effect.forEach(outcomes, (outcome) => Metric.update(inbound({ outcome: snake(outcome._tag) }), 1), { discard: true })),
  applyStatuses: (config, statuses, before) => Effect.andThen(reportLagOf(statuses), recording.applyStatuses(config, statuses, before))
})
