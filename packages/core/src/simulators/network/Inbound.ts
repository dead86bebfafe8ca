/**
 * A simulated contact writing to a number (`NetworkSimulator.inbound`): the message checked as the network would
 * take it from a phone (`SimulatorInputError` otherwise), its media stored (a small placeholder file when no bytes
 * are given), the webhook built, and, unless the business blocked the contact, the contact's 24-hour window opened
 * and the message remembered for mark read (the network's newest 100,000).
 */
import { Predicate } from "effect"
import type { WebhookPayload } from "../../network/Webhook.ts"
import { checkMedia, placeholderBytes, placeholderMime } from "../../network/Media.ts"
import { INBOUND_MEDIA_TTL_MS } from "./MediaStorage.ts"
import { isSimError } from "./Access.ts"
import {
  type ContactRef,
  contactByPhone,
  contactByUserId,
  epochSeconds,
  isUserId,
  messageId,
  normalizePhone,
  type NumberRecord,
  numericId,
  rememberContact,
  sha256Hex,
  type SimState
} from "./Model.ts"
import { SimulatorInputError, unknownNumber, webhookError } from "../../network/ErrorCodes.ts"
import { inboundPayload, webhookContact } from "./Payloads.ts"

/** Inbound messages remembered (mark read); older ones are forgotten. */
export const INBOUND_LIMIT = 100_000

export type { InboundInput, InboundResult } from "../../network/SimulatedNetwork.ts"
import type { InboundInput, InboundResult } from "../../network/SimulatedNetwork.ts"

const inboundTypes = new Set([
  "text",
  "image",
  "audio",
  "video",
  "document",
  "sticker",
  "interactive",
  "reaction",
  "location",
  "contacts",
  "button",
  "order",
  "system",
  "unsupported"
])
const inboundMediaTypes = new Set(["image", "audio", "video", "document", "sticker"])

const badUserId = "user_id must be a business-scoped user id such as US.13491208655302741918"


/** Decides an inbound message; answers the webhook to post, or why it cannot be. */
export const decideInbound = (
  state: SimState,
  at: number,
  phoneNumberId: string,
  input: InboundInput,
  uuids: readonly [string, string]
):
  | SimulatorInputError
  | { readonly number: NumberRecord; readonly id: string; readonly payload: WebhookPayload; readonly blocked: boolean } =>
{
  const number = state.numbers.get(phoneNumberId)
  if (number === undefined) return unknownNumber(phoneNumberId)
  const invalid = (message: string) => new SimulatorInputError({ message })

  let contact: ContactRef
  if (input.from !== undefined) {
    const waId = normalizePhone(input.from)
    if (waId === undefined) return invalid("from must be a phone number (digits, optionally with +)")
    if (input.user_id !== undefined && !isUserId(input.user_id)) return invalid(badUserId)
    contact = input.user_id !== undefined
      ? { waId, userId: input.user_id }
      : contactByPhone(state, number.businessAccountId, waId)
  } else if (input.user_id !== undefined) {
    if (!isUserId(input.user_id)) return invalid(badUserId)
    contact = contactByUserId(state, number.businessAccountId, input.user_id)
  } else {
    return invalid("from or user_id is required")
  }

  const message = input.message
  const type = message["type"]
  if (typeof type !== "string" || !inboundTypes.has(type)) {
    return invalid(`message.type must be one of ${[...inboundTypes].join(", ")}`)
  }
  const content = message[type]
  const present = type === "contacts"
    ? Array.isArray(content) && content.length > 0
    : type === "unsupported" || Predicate.isObject(content)
  if (!present) {
    return invalid(`message.${type} is required`)
  }
  const problem = inboundProblem(type, content)
  if (problem !== undefined) return invalid(problem)

  let typed: unknown = content
  if (inboundMediaTypes.has(type)) {
    const given = content as Record<string, unknown>
    if (input.media !== undefined || typeof given["id"] !== "string") {
      const bytes = input.media?.bytes ?? placeholderBytes(type as keyof typeof placeholderMime)
      const mimeType = input.media?.mimeType ?? placeholderMime[type as keyof typeof placeholderMime]
      const kind = checkMedia(mimeType, bytes)
      if (isSimError(kind)) return invalid(kind.details)
      const filename = input.media?.filename ?? (type === "document" ? "document.pdf" : undefined)
      const mediaId = numericId(uuids[1])
      state.media.set(mediaId, {
        id: mediaId,
        businessAccountId: number.businessAccountId,
        phoneNumberId: number.phoneNumberId,
        bytes,
        mimeType,
        filename,
        sha256: sha256Hex(bytes),
        expiresAt: at + INBOUND_MEDIA_TTL_MS,
        deleted: false
      })
      state.touch("media", mediaId)
      typed = {
        ...given,
        ...(type === "document" && filename !== undefined ? { filename } : {}),
        mime_type: mimeType,
        sha256: sha256Hex(bytes),
        id: mediaId
      }
    }
  }

  const id = messageId(uuids[0], contact.waId ?? contact.userId)
  const {
    context,
    from: _from,
    from_parent_user_id: _parent,
    from_user_id: _user,
    id: _id,
    timestamp: _timestamp,
    type: _type,
    [type]: _content,
    ...rest
  } = message as Record<string, unknown>
  const displayDigits = number.displayPhoneNumber.replace(/\D/g, "")
  const built: Record<string, unknown> = {
    ...(contact.waId !== undefined ? { from: contact.waId } : {}),
    from_user_id: contact.userId,
    id,
    timestamp: epochSeconds(at),
    ...(Predicate.isObject(context) ? { context: { ...context, from: displayDigits } } : {}),
    type,
    ...(type === "unsupported"
      ? { errors: [webhookError(131051, "Message type is currently not supported.")] }
      : { [type]: typed }),
    ...rest
  }
  const payload = inboundPayload(
    number,
    webhookContact(contact, { name: input.profile_name, username: input.username }),
    built
  )
  if (number.blocked.has(contact.userId)) return { number, id, payload, blocked: true }
  rememberContact(state, number.businessAccountId, contact)
  state.windows.set(`${number.phoneNumberId}|${contact.userId}`, at)
  state.touch("window", `${number.phoneNumberId}|${contact.userId}`)
  number.events.push(at)
  state.keepInbound({ id, phoneNumberId, contact, receivedAt: at, read: false })
  state.touch("inbound", id)
  if (state.inbound.size > INBOUND_LIMIT) {
    const oldest = state.inbound.keys().next().value!
    state.dropInbound(oldest)
    state.touch("inbound", oldest)
  }
  return { number, id, payload, blocked: false }
}

/** What is wrong with the content of an inbound message of `type`, if anything. */
const inboundProblem = (type: string, content: unknown): string | undefined => {
  const object = Predicate.isObject(content) ? content : {}
  switch (type) {
    case "text":
      return typeof object["body"] === "string" ? undefined : "message.text.body must be a string"
    case "reaction":
      return typeof object["message_id"] === "string" && typeof object["emoji"] === "string"
        ? undefined
        : "message.reaction needs message_id and emoji"
    case "location":
      return typeof object["latitude"] === "number" && typeof object["longitude"] === "number"
        ? undefined
        : "message.location needs numeric latitude and longitude"
    case "button":
      return typeof object["text"] === "string" ? undefined : "message.button.text must be a string"
    case "interactive": {
      const kind = object["type"]
      if (kind !== "button_reply" && kind !== "list_reply" && kind !== "nfm_reply") {
        return "message.interactive.type must be button_reply, list_reply or nfm_reply"
      }
      const reply = object[kind]
      if (!Predicate.isObject(reply)) return `message.interactive.${kind} is required`
      if (kind === "nfm_reply") {
        return typeof reply["response_json"] === "string"
          ? undefined
          : "message.interactive.nfm_reply.response_json must be a string"
      }
      return typeof reply["id"] === "string" && typeof reply["title"] === "string"
        ? undefined
        : `message.interactive.${kind} needs id and title`
    }
    case "order":
      return Array.isArray(object["product_items"]) ? undefined : "message.order.product_items must be an array"
    case "system":
      return typeof object["body"] === "string" ? undefined : "message.system.body must be a string"
    default:
      return undefined
  }
}
