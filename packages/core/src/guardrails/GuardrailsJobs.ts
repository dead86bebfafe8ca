/**
 * The confirmations of keyword opt-outs and resubscriptions: a subscriber of `msg.contact.opted_out|opted_in` sends
 * each entry's `notice` after the change committed (once: its message id is fixed by the change).
 */
import { Effect, Layer, Option, Schema } from "effect"
import { DomainEventInterest } from "../outbox/Interest.ts"
import { DomainEventSubscribers } from "../outbox/Relay.ts"
import type { DomainEvent } from "../ports/Outbox.ts"
import { GUARDRAIL_DOMAIN_EVENTS, type OptOutNotice } from "./OptOuts.ts"
import { OptOutNotices } from "./SendFacts.ts"

export const GUARDRAILS_SUBSCRIBER = "guardrails"

const NoticePayload = Schema.Struct({
  notice: Schema.NullOr(Schema.Struct({ msg_config_id: Schema.String, recipient: Schema.String, text: Schema.String, message_id: Schema.String }))
})
const decodeNotice = Schema.decodeUnknownOption(NoticePayload)

const noticeOf = (entry: DomainEvent): OptOutNotice | undefined =>
  Option.getOrUndefined(Option.flatMap(decodeNotice(entry.payload), (p) => Option.fromNullishOr(p.notice)))

/** Only entries with a confirmation to send matter to the subscriber; declared where entries are written. */
export const layerGuardrailsInterest = Layer.effectDiscard(Effect.gen(function*() {
  const interest = yield* DomainEventInterest
  yield* interest.declare(GUARDRAILS_SUBSCRIBER, GUARDRAIL_DOMAIN_EVENTS, (entry) => Effect.succeed(noticeOf(entry) !== undefined))
}))

export const layerGuardrailsWorkers = Layer.effectDiscard(Effect.gen(function*() {
  const subscribers = yield* DomainEventSubscribers
  const notices = yield* OptOutNotices
  yield* subscribers.subscribe(GUARDRAILS_SUBSCRIBER, GUARDRAIL_DOMAIN_EVENTS, (entry) => {
    const notice = noticeOf(entry)
    return notice === undefined || entry.project_id === null
      ? Effect.void
      : notices.send(entry.project_id, notice.msg_config_id, notice.recipient, notice.text, notice.message_id)
  })
}))
