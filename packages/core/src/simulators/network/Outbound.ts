/**
 * What the simulated network does with a send (`POST /<pnid>/messages`): a mark read, or a message checked against
 * the number's status, the 24-hour window, the throughput and the pair rate, then accepted into the outbox with its
 * status reports to follow; and where an accepted message stands as time passes.
 */
import { MessagingProduct } from "../../network/NetworkObjects.ts"
import { readEnvelope } from "./Messages.ts"
import { isSimError } from "./Access.ts"
import {
  type ContactRef,
  contactByPhone,
  contactByUserId,
  fail,
  isReachable,
  messageId,
  type NumberRecord,
  ok,
  type Outcome,
  type OutboundRecord,
  type OutboundStatus,
  pairTokens,
  type RequestContext,
  type SimState,
  throughputUsed,
  windowOpen
} from "./Model.ts"
import { simError } from "../../network/ErrorCodes.ts"
import type { SimRequest } from "./Protocol.ts"
import { notJson, readBody } from "./RequestBody.ts"
import type { SimConfig } from "./Routes.ts"

/** Where an outbound message stands at `now`, following the configured delays. */
export const outboundStatus = (config: SimConfig, record: OutboundRecord, now: number): OutboundStatus => {
  const age = now - record.acceptedAt
  if (age < config.statusDelays.sent) return "accepted"
  if (record.failure !== undefined) return "failed"
  if (age < config.statusDelays.delivered) return "sent"
  if (config.statusDelays.read === undefined || age < config.statusDelays.read) return "delivered"
  return "read"
}

export const send = (
  state: SimState,
  config: SimConfig,
  ctx: RequestContext,
  number: NumberRecord,
  request: SimRequest,
  version: string
): Outcome => {
  if (number.status === "RESTRICTED") return fail(simError(131031, "The business account is locked"))
  if (number.status !== "CONNECTED" && number.status !== "FLAGGED") {
    return fail(simError(133010, `The phone number ${number.phoneNumberId} is not registered (status ${number.status})`))
  }
  const read = readBody(request.body)
  if (read === undefined) return fail(notJson())
  const envelope = readEnvelope(state, number, read.value, ctx.now)
  if (isSimError(envelope)) return fail(envelope)

  if (envelope._tag === "MarkRead") {
    const inbound = state.inbound.get(envelope.messageId)
    if (inbound === undefined || inbound.phoneNumberId !== number.phoneNumberId) {
      return fail(simError(131009, `Param message_id ${envelope.messageId} is not a message received by this number`))
    }
    state.markInboundRead(inbound)
    return ok({ success: true })
  }

  const contact: ContactRef = envelope.recipient.waId !== undefined
    ? contactByPhone(state, number.businessAccountId, envelope.recipient.waId)
    : contactByUserId(state, number.businessAccountId, envelope.recipient.userId!)
  const ownDigits = number.displayPhoneNumber.replace(/\D/g, "")
  if (contact.waId === ownDigits) return fail(simError(131021, "The recipient is the sending phone number"))

  const template = envelope.template
  const inWindow = windowOpen(state, number.phoneNumberId, contact, ctx.now)
  if (template === undefined && !inWindow) {
    return fail(simError(
      131047,
      "Message failed to send because more than 24 hours have passed since the customer last replied to this number."
    ))
  }
  if (throughputUsed(number, ctx.now) >= number.throughputPerSecond) {
    return fail(simError(130429, `Throughput of ${number.throughputPerSecond} messages per second reached for this number`))
  }
  const pair = pairTokens(state, number, contact, ctx.now)
  if (pair.available < 1) {
    return fail(simError(131056, "Too many messages sent from this phone number to the same recipient in a short period"))
  }

  pair.take()
  number.events.push(ctx.now)
  const raw = request.body._tag === "Bytes" ? request.body.bytes : new TextEncoder().encode(JSON.stringify(read.value))
  const record: OutboundRecord = {
    id: messageId(ctx.uuid, contact.waId ?? contact.userId),
    phoneNumberId: number.phoneNumberId,
    recipient: contact,
    toPhone: envelope.recipient.waId !== undefined,
    type: envelope.type,
    envelope: read.value,
    raw,
    version,
    acceptedAt: ctx.now,
    category: template === undefined ? "service" : template.category.toLowerCase(),
    inWindow,
    bizOpaqueCallbackData: envelope.bizOpaqueCallbackData,
    failure: isReachable(state, contact) ? undefined : { code: 131026, details: "Message Undeliverable." }
  }
  state.deliver(record, config.outboxLimit)

  return ok({
    messaging_product: MessagingProduct,
    contacts: [
      envelope.recipient.waId !== undefined
        ? { input: envelope.recipient.input, wa_id: contact.waId }
        : { input: envelope.recipient.input, user_id: contact.userId }
    ],
    messages: [{ id: record.id, ...(template?.category === "MARKETING" ? { message_status: "accepted" } : {}) }]
  }, [{ _tag: "Statuses", messageId: record.id }])
}
