/**
 * The webhook bodies the simulated network posts, in the network's format:
 * `{ "object": "whatsapp_business_account", "entry": [{ "id": <waba id>,
 * "changes": [{ "value": ..., "field": ... }] }] }`.
 */
import { createHash } from "node:crypto"
import { MessagingProduct, WebhookObjectName } from "../../network/NetworkObjects.ts"
import type { WebhookContact, WebhookPayload, WebhookStatus } from "../../network/Webhook.ts"
import {
  type ContactRef,
  DAY_MS,
  epochSeconds,
  type NumberRecord,
  type OutboundRecord,
  type OutboundStatus,
  type TemplateRecord
} from "./Model.ts"
import { webhookError } from "../../network/ErrorCodes.ts"

export const envelope = (businessAccountId: string, field: string, value: unknown): WebhookPayload => ({
  object: WebhookObjectName,
  entry: [{ id: businessAccountId, changes: [{ value, field }] }]
})

/** Webhooks carry the display number as digits. */
const metadata = (number: NumberRecord) => ({
  display_phone_number: number.displayPhoneNumber.replace(/\D/g, ""),
  phone_number_id: number.phoneNumberId
})

/** `contacts[]` member for a contact: the phone number only when the network may share it. */
export const webhookContact = (
  contact: ContactRef,
  profile?: { readonly name?: string | undefined; readonly username?: string | undefined }
): WebhookContact => ({
  ...(profile !== undefined && (profile.name !== undefined || profile.username !== undefined)
    ? {
      profile: {
        ...(profile.name !== undefined ? { name: profile.name } : {}),
        ...(profile.username !== undefined ? { username: profile.username } : {})
      }
    }
    : {}),
  ...(contact.waId !== undefined ? { wa_id: contact.waId } : {}),
  user_id: contact.userId
})

/** An inbound message change. */
export const inboundPayload = (
  number: NumberRecord,
  contact: WebhookContact,
  message: Record<string, unknown>
): WebhookPayload =>
  envelope(number.businessAccountId, "messages", {
    messaging_product: MessagingProduct,
    metadata: metadata(number),
    contacts: [contact],
    messages: [message]
  })

const conversationId = (record: OutboundRecord) =>
  createHash("sha1").update(`${record.phoneNumberId}|${record.recipient.userId}|${Math.floor(record.acceptedAt / DAY_MS)}`)
    .digest("hex")
    .slice(0, 32)

/** One status change of an outbound message (`sent`, `delivered`, `read` or `failed`), with the contact it names. */
export interface StatusReport {
  readonly status: WebhookStatus
  /** A failed status carries no contact; a message sent to a business-scoped id never reveals the phone number. */
  readonly contact: WebhookContact | undefined
}

export const statusReport = (
  record: OutboundRecord,
  status: Exclude<OutboundStatus, "accepted">,
  at: number
): StatusReport => {
  const failed = status === "failed"
  const free = record.inWindow && (record.category === "service" || record.category === "utility")
  const value: WebhookStatus = {
    id: record.id,
    status,
    timestamp: epochSeconds(at),
    ...(record.toPhone && record.recipient.waId !== undefined ? { recipient_id: record.recipient.waId } : {}),
    ...(!failed || !record.toPhone ? { recipient_user_id: record.recipient.userId } : {}),
    ...(record.bizOpaqueCallbackData !== undefined ? { biz_opaque_callback_data: record.bizOpaqueCallbackData } : {}),
    ...(status === "sent" || status === "delivered"
      ? {
        conversation: {
          id: conversationId(record),
          ...(status === "sent" ? { expiration_timestamp: epochSeconds(record.acceptedAt + DAY_MS) } : {}),
          origin: { type: record.category }
        }
      }
      : {}),
    ...(!failed
      ? {
        pricing: {
          billable: !free,
          pricing_model: "PMP",
          category: record.category,
          type: free ? "free_customer_service" : "regular"
        }
      }
      : {}),
    ...(failed && record.failure !== undefined
      ? { errors: [webhookError(record.failure.code, record.failure.details)] }
      : {})
  }
  return {
    status: value,
    contact: failed ? undefined : webhookContact(record.toPhone ? record.recipient : { ...record.recipient, waId: undefined })
  }
}

/** Status changes of one number in one webhook, as the network batches them: each contact named once. */
export const statusPayload = (number: NumberRecord, reports: ReadonlyArray<StatusReport>): WebhookPayload => {
  const contacts = new Map<string, WebhookContact>()
  for (const { contact } of reports) if (contact !== undefined) contacts.set(contact.user_id ?? contact.wa_id ?? "", contact)
  return envelope(number.businessAccountId, "messages", {
    messaging_product: MessagingProduct,
    metadata: metadata(number),
    ...(contacts.size > 0 ? { contacts: [...contacts.values()] } : {}),
    statuses: reports.map((r) => r.status)
  })
}

/** A template's status change (`message_template_status_update`), reported as `event`. */
export const templateEvent = (template: TemplateRecord, event: string): WebhookPayload =>
  envelope(template.businessAccountId, "message_template_status_update", {
    event,
    message_template_id: Number(template.id),
    message_template_name: template.name,
    message_template_language: template.language,
    reason: template.status === "REJECTED" ? template.rejectedReason : "NONE",
    message_template_category: template.category
  })
