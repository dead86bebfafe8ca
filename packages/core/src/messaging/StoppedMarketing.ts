/**
 * A late refusal 131050 ("the user stopped marketing messages"): the network may accept a send (a message id) and
 * report it `failed` later. Recorded as the recipient's opt-out of the number, as the synchronous refusal is
 * (`Outbound` → `SendPolicy.refused`); an opt-out is kept once per recipient and scope, so whichever path comes
 * second records nothing, and a report seen again (the relay delivers at least once) changes nothing.
 */
import { Effect, Layer, Option, Schema } from "effect"
import { OptOuts, recipientOf } from "../guardrails/OptOuts.ts"
import { STOPPED_MARKETING } from "../guardrails/SendPolicy.ts"
import { DomainEventInterest } from "../outbox/Interest.ts"
import { DomainEventSubscribers } from "../outbox/Relay.ts"
import type { DomainEvent } from "../ports/Outbox.ts"
import { msgMessageStatusEvent } from "./DomainEvents.ts"

export const STOPPED_MARKETING_SUBSCRIBER = "stopped_marketing"
const FAILED = [msgMessageStatusEvent("failed")]

/** The parts of a `msg.message.failed` payload this reads: the number, and the status reports as received. */
const FailedPayload = Schema.Struct({
  data: Schema.Struct({ message: Schema.Struct({ ext: Schema.Struct({ statuses: Schema.optionalKey(Schema.Array(Schema.Unknown)) }) }) }),
  msg_config: Schema.Struct({ id: Schema.String })
})
const FailedReport = Schema.Struct({
  status: Schema.Literal("failed"),
  recipient_id: Schema.String,
  errors: Schema.Array(Schema.Struct({ code: Schema.Number }))
})
const decodePayload = Schema.decodeUnknownOption(FailedPayload)
const decodeReport = Schema.decodeUnknownOption(FailedReport)

/** The number and recipient of a failure the network reported with 131050; undefined for any other failure. */
export const stoppedMarketingOf = (entry: DomainEvent): { readonly msgConfigId: string; readonly recipient: string } | undefined => {
  const payload = decodePayload(entry.payload)
  if (Option.isNone(payload)) return undefined
  for (const raw of payload.value.data.message.ext.statuses ?? []) {
    const report = decodeReport(raw)
    if (Option.isNone(report) || !report.value.errors.some((e) => e.code === STOPPED_MARKETING)) continue
    const recipient = recipientOf(report.value.recipient_id)
    if (recipient !== undefined) return { msgConfigId: payload.value.msg_config.id, recipient }
  }
  return undefined
}

/** Only failures with 131050 matter to the subscriber; declared where entries are written. */
export const layerStoppedMarketingInterest = Layer.effectDiscard(Effect.gen(function*() {
  const interest = yield* DomainEventInterest
  yield* interest.declare(STOPPED_MARKETING_SUBSCRIBER, FAILED, (entry) => Effect.succeed(stoppedMarketingOf(entry) !== undefined))
}))

export const layerStoppedMarketingWorkers = Layer.effectDiscard(Effect.gen(function*() {
  const subscribers = yield* DomainEventSubscribers
  const optOuts = yield* OptOuts
  yield* subscribers.subscribe(STOPPED_MARKETING_SUBSCRIBER, FAILED, (entry) => {
    const stopped = stoppedMarketingOf(entry)
    return stopped === undefined || entry.project_id === null
      ? Effect.void
      : optOuts.networkRefused({ projectId: entry.project_id, msgConfigId: stopped.msgConfigId }, stopped.recipient)
  })
}))
