/**
 * What a delivery carries: the bodies of decisions 6.3 (v2) and 6.7 (v1)
 * derived from domain events, batches (6.4), the sample bodies of test
 * deliveries, and the headers of 6.2 with the signature.
 *
 * Domain events webhooks consume (their payloads are the producers' contract):
 *
 * - `project_event.recorded`: `{ event, definition_id }` (events capability).
 * - `msg.message.received|sent|delivered|read|failed`,
 *   `msg.conversation.created|ended`, `msg.phone_number.created|deleted`:
 *   `{ data: <v2 body>, msg_config: { id, phone_number_id,
 *   display_phone_number, name }, conversation_phone_number }` (messaging).
 * - `workflow.execution.handoff|failed`: the v2 body itself (execution engine).
 * - `msg.contact.opted_out|opted_in`: `{ body: <the body>, notice }` (guardrails).
 * - `upstream.payload`: `{ phone_number_ids, body_base64 }`, the network's
 *   exact bytes for `upstream` webhooks.
 */
import { Option, Predicate, Schema } from "effect"
import { createHash, createHmac } from "node:crypto"
import type { DomainEvent } from "../ports/Outbox.ts"
import { MessagingProduct, WebhookObjectName } from "../network/NetworkObjects.ts"
import { HubSignatureHeader, hubSignature } from "../network/Webhook.ts"
import { PROJECT_EVENT_RECORDED, type ProjectEventRecordedPayload } from "../events/Event.ts"
import type { PayloadVersion, WebhookDeliveryRecord, WebhookRecord } from "./Webhook.ts"
import { GUARDRAIL_DOMAIN_EVENTS } from "../guardrails/OptOuts.ts"

/** Written by messaging for every accepted upstream POST. */
const UPSTREAM_PAYLOAD = "upstream.payload"

/** Domain event types that are webhook events under the same name. */
const MSG_TYPES = [
  "msg.message.received",
  "msg.message.sent",
  "msg.message.delivered",
  "msg.message.read",
  "msg.message.failed",
  "msg.conversation.created",
  "msg.conversation.ended",
  "msg.phone_number.created",
  "msg.phone_number.deleted"
]
const EXECUTION_TYPES = ["workflow.execution.handoff", "workflow.execution.failed"]

/** Every domain event type webhook deliveries consume. */
export const WEBHOOK_SOURCE_TYPES: ReadonlyArray<string> = [
  PROJECT_EVENT_RECORDED,
  ...MSG_TYPES,
  ...EXECUTION_TYPES,
  ...GUARDRAIL_DOMAIN_EVENTS,
  UPSTREAM_PAYLOAD
]

export const USER_AGENT = "Parley-Webhooks/0.1.0"

/** The number a `msg.*` domain event is about, as decisions 6.7 names it. */
export interface MsgConfigRef {
  readonly id: string
  readonly phone_number_id: string
  readonly display_phone_number: string
  readonly name: string | null
}

/** Log fields of the deliveries a domain event makes. */
export interface DeliveryContext {
  readonly msg_config_id: string | null
  readonly phone_number_id: string | null
  readonly conversation_phone_number: string | null
}

/** One webhook event a domain event makes, in both payload versions. */
export interface PlannedEvent {
  readonly event: string
  readonly v1: unknown
  readonly v2: unknown
}

export type DeliveryPlan =
  | {
    readonly kind: "ext"
    readonly projectId: string
    /** Number-level webhooks of this number, or the project-level ones (null). */
    readonly phoneNumberId: string | null
    readonly events: ReadonlyArray<PlannedEvent>
    readonly context: DeliveryContext
    /** Which buffer a bufferable event joins: one per conversation. */
    readonly conversationKey: string | null
  }
  | {
    readonly kind: "upstream"
    readonly projectId: string
    readonly phoneNumberIds: ReadonlyArray<string>
    readonly body: Uint8Array
  }

type Json = Record<string, unknown>

/** `msg_config` as the messaging payloads carry it (older ones had no `name`, or no `display_phone_number`). */
const MsgConfigOfPayload = Schema.Struct({
  id: Schema.String,
  phone_number_id: Schema.String,
  display_phone_number: Schema.optionalKey(Schema.String),
  name: Schema.optionalKey(Schema.NullOr(Schema.String))
})

/** What routing reads of a messaging payload; its `data` goes on as it is, into the bodies. */
const MsgPayloadFacts = Schema.decodeUnknownOption(Schema.Struct({
  data: Schema.Struct({
    phone_number_id: Schema.optionalKey(Schema.NullOr(Schema.String)),
    conversation: Schema.optionalKey(Schema.NullOr(Schema.Struct({ id: Schema.optionalKey(Schema.String) }))),
    message: Schema.optionalKey(Schema.NullOr(Schema.Struct({ from: Schema.optionalKey(Schema.String) })))
  }),
  msg_config: Schema.optionalKey(Schema.NullOr(MsgConfigOfPayload)),
  conversation_phone_number: Schema.optionalKey(Schema.NullOr(Schema.String))
}))

/** v1 (6.7): the root `phone_number_id` becomes a nested `msg_config`, and `is_new_conversation` goes. */
export const toV1 = (v2: Json, msgConfig: MsgConfigRef | null): Json => {
  const out: Json = {}
  let placed = false
  for (const [key, value] of Object.entries(v2)) {
    if (key === "is_new_conversation") continue
    if (key === "phone_number_id") {
      out.msg_config = msgConfig
      placed = true
      continue
    }
    out[key] = value
  }
  if (!placed) out.msg_config = msgConfig
  return out
}

const msgConfigOf = (c: typeof MsgConfigOfPayload.Type | null | undefined): MsgConfigRef | null =>
  c === undefined || c === null
    ? null
    : { id: c.id, phone_number_id: c.phone_number_id, display_phone_number: c.display_phone_number ?? "", name: c.name ?? null }

/** The deliveries a domain event asks for; undefined for a type or payload webhooks do not know. */
export const planDeliveries = (entry: DomainEvent): DeliveryPlan | undefined => {
  const projectId = entry.project_id
  if (projectId === null) return undefined
  const payload = entry.payload
  if (entry.type === PROJECT_EVENT_RECORDED) {
    const recorded = payload as ProjectEventRecordedPayload
    if (!Predicate.isObject(recorded) || !Predicate.isObject(recorded.event)) return undefined
    const e = recorded.event
    const body = {
      event: "project.event",
      project_id: projectId,
      data: {
        id: e.id,
        name: e.name,
        occurred_at: e.occurred_at,
        conversation_id: e.conversation_id,
        properties: e.properties
      }
    }
    return {
      kind: "ext",
      projectId,
      phoneNumberId: null,
      events: [{ event: "project.event", v1: body, v2: body }],
      context: { msg_config_id: null, phone_number_id: null, conversation_phone_number: null },
      conversationKey: null
    }
  }
  if (EXECUTION_TYPES.includes(entry.type)) {
    if (!Predicate.isObject(payload)) return undefined
    return {
      kind: "ext",
      projectId,
      phoneNumberId: null,
      events: [{ event: entry.type, v1: payload, v2: payload }],
      context: { msg_config_id: null, phone_number_id: null, conversation_phone_number: null },
      conversationKey: null
    }
  }
  if (GUARDRAIL_DOMAIN_EVENTS.includes(entry.type)) {
    // Project-level: the body as written; the confirmation to send (`notice`) is not the webhooks'.
    if (!Predicate.isObject(payload) || !Predicate.isObject(payload.body)) return undefined
    return {
      kind: "ext",
      projectId,
      phoneNumberId: null,
      events: [{ event: entry.type, v1: payload.body, v2: payload.body }],
      context: { msg_config_id: null, phone_number_id: null, conversation_phone_number: null },
      conversationKey: null
    }
  }
  if (MSG_TYPES.includes(entry.type)) {
    const facts = MsgPayloadFacts(payload)
    if (Option.isNone(facts) || !Predicate.isObject(payload) || !Predicate.isObject(payload.data)) return undefined
    const data = payload.data
    const msgConfig = msgConfigOf(facts.value.msg_config)
    const phoneNumberId = facts.value.data.phone_number_id ?? msgConfig?.phone_number_id ?? null
    if (phoneNumberId === null) return undefined
    const conversationPhoneNumber = facts.value.conversation_phone_number ?? null
    const context: DeliveryContext = {
      msg_config_id: msgConfig?.id ?? null,
      phone_number_id: phoneNumberId,
      conversation_phone_number: conversationPhoneNumber
    }
    const v1 = toV1(data, msgConfig)
    if (entry.type.startsWith("msg.phone_number.")) {
      const events: Array<PlannedEvent> = [{ event: entry.type, v1, v2: data }]
      // The legacy twin keeps its v1 shape whatever the webhook's version (6.1).
      if (entry.type === "msg.phone_number.created") events.push({ event: "msg.config.created", v1, v2: v1 })
      return { kind: "ext", projectId, phoneNumberId: null, events, context, conversationKey: null }
    }
    const conversationKey = facts.value.data.conversation?.id ?? conversationPhoneNumber ??
      facts.value.data.message?.from ?? null
    return {
      kind: "ext",
      projectId,
      phoneNumberId,
      events: [{ event: entry.type, v1, v2: data }],
      context,
      conversationKey
    }
  }
  if (entry.type === UPSTREAM_PAYLOAD) {
    if (!Predicate.isObject(payload) || !Array.isArray(payload.phone_number_ids) || typeof payload.body_base64 !== "string") {
      return undefined
    }
    return {
      kind: "upstream",
      projectId,
      phoneNumberIds: payload.phone_number_ids.filter((id): id is string => typeof id === "string"),
      body: Buffer.from(payload.body_base64, "base64")
    }
  }
  return undefined
}

export const bodyOf = (event: PlannedEvent, version: PayloadVersion) => version === "v1" ? event.v1 : event.v2

/** The one serialization of a body: these bytes are stored, signed and sent. */
export const serialize = (value: unknown): Uint8Array => Buffer.from(JSON.stringify(value), "utf8")

/** A batch (6.4): single payloads in arrival order. */
export const batchBody = (event: string, items: ReadonlyArray<unknown>) => ({ type: event, batch: true, data: items })

export const sha256Hex = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex")

/** `X-Webhook-Signature`: hex HMAC-SHA256 of exactly these bytes, keyed with the webhook's secret. */
export const sign = (bytes: Uint8Array, secret: string) => createHmac("sha256", secret).update(bytes).digest("hex")

/** The headers of one attempt (6.2): the webhook's own first, so none of ours can be overridden. */
export const deliveryHeaders = (
  webhook: Pick<WebhookRecord, "headers" | "secret_key" | "kind">,
  delivery: Pick<WebhookDeliveryRecord, "event" | "idempotency_key" | "payload_version" | "batch_size" | "test">,
  body: Uint8Array
): Record<string, string> => {
  const headers: Record<string, string> = { ...webhook.headers }
  headers["Content-Type"] = "application/json"
  headers["User-Agent"] = USER_AGENT
  if (delivery.payload_version !== null) {
    headers["X-Webhook-Event"] = delivery.event
    headers["X-Webhook-Payload-Version"] = delivery.payload_version
  }
  headers["X-Webhook-Signature"] = sign(body, webhook.secret_key)
  // An `upstream` relay is the network's payload: it also carries the network's signature header, keyed with the
  // webhook's secret, so a Cloud API SDK given that secret as its app secret accepts it as the network's own.
  if (webhook.kind === "upstream") headers[HubSignatureHeader] = hubSignature(body, webhook.secret_key)
  headers["X-Idempotency-Key"] = delivery.idempotency_key
  if (delivery.batch_size !== null) {
    headers["X-Webhook-Batch"] = "true"
    headers["X-Batch-Size"] = String(delivery.batch_size)
  }
  if (delivery.test) headers["X-Webhook-Test"] = "true"
  return headers
}

// ---------------------------------------------------------------------------------------------
// Sample bodies of test deliveries

const SAMPLE_ID = "00000000-0000-4000-8000-000000000000"
const SAMPLE_CONTACT = "15550001111"

/** A sample of `event` for `webhook`, built like a real delivery of that event. */
export const sampleEvent = (event: string, webhook: WebhookRecord, nowIso: string): PlannedEvent => {
  const pnid = webhook.phone_number_id ?? "000000000000000"
  const msgConfig: MsgConfigRef = {
    id: SAMPLE_ID,
    phone_number_id: pnid,
    display_phone_number: "+1 555-000-0000",
    name: "Sample number"
  }
  const seconds = String(Math.floor(Date.parse(nowIso) / 1000))
  const conversation = {
    id: SAMPLE_ID,
    phone_number: SAMPLE_CONTACT,
    contact_name: "Sample Contact",
    status: "active",
    last_active_at: nowIso,
    created_at: nowIso,
    updated_at: nowIso,
    metadata: {},
    phone_number_id: pnid
  }
  const status = event.slice("msg.message.".length)
  const inbound = event === "msg.message.received"
  const message = {
    id: "wamid.SAMPLE",
    ...(inbound ? { from: SAMPLE_CONTACT } : {}),
    timestamp: seconds,
    type: "text",
    text: { body: "This is a sample message from a Parley test delivery" },
    ext: {
      direction: inbound ? "inbound" : "outbound",
      status: inbound ? "delivered" : status,
      processing_status: "completed",
      origin: "api",
      has_media: false,
      content: "This is a sample message from a Parley test delivery",
      ...(event === "msg.message.failed"
        ? {
          statuses: [{
            id: "wamid.SAMPLE",
            status: "failed",
            timestamp: seconds,
            recipient_id: SAMPLE_CONTACT,
            errors: [{
              code: 131047,
              title: "Re-engagement message",
              message: "Re-engagement message",
              error_data: { details: "Message failed to send because more than 24 hours have passed" },
              href: "https://developers.facebook.com/docs/whatsapp/cloud-api/support/error-codes/"
            }]
          }]
        }
        : {}),
      phone_number: SAMPLE_CONTACT,
      phone_number_id: pnid,
      msg_conversation_id: SAMPLE_ID,
      contact_name: "Sample Contact"
    }
  }
  let v2: Json
  if (event.startsWith("msg.message.")) {
    v2 = { message, conversation, is_new_conversation: false, phone_number_id: pnid }
  } else if (event === "msg.conversation.ended") {
    v2 = { conversation, reason: "manual", phone_number_id: pnid }
  } else if (event === "msg.conversation.inactive") {
    v2 = {
      conversation,
      since_message: { id: SAMPLE_ID, msg_message_id: "wamid.SAMPLE", direction: "inbound", created_at: nowIso },
      inactivity: { minutes: webhook.inactivity_minutes },
      phone_number_id: pnid
    }
  } else if (event.startsWith("msg.conversation.")) {
    v2 = { conversation, phone_number_id: pnid }
  } else if (event === "msg.phone_number.created" || event === "msg.phone_number.deleted" || event === "msg.config.created") {
    v2 = { phone_number_id: pnid, project: { id: webhook.project_id }, customer: null }
  } else if (event === "workflow.execution.handoff" || event === "workflow.execution.failed") {
    const handoff = event === "workflow.execution.handoff"
    const execution = {
      event,
      occurred_at: nowIso,
      project_id: webhook.project_id,
      workflow_id: SAMPLE_ID,
      workflow_execution_id: SAMPLE_ID,
      status: handoff ? "handoff" : "failed",
      tracking_id: null,
      channel: "msg",
      msg_conversation_id: SAMPLE_ID
    }
    const body = handoff
      ? { ...execution, handoff: { reason: "Sample handoff", source: "agent_tool" } }
      : { ...execution, error: { message: "Sample failure", step_identifier: "sample_step" } }
    return { event, v1: body, v2: body }
  } else if (event === "msg.contact.opted_out" || event === "msg.contact.opted_in") {
    const body = {
      event,
      occurred_at: nowIso,
      project_id: webhook.project_id,
      data: {
        opt_out: { id: SAMPLE_ID, msg_config_id: SAMPLE_ID, phone_number: SAMPLE_CONTACT, source: "keyword", keyword: "STOP", created_at: nowIso },
        phone_number_id: pnid
      }
    }
    return { event, v1: body, v2: body }
  } else {
    const body = {
      event: "project.event",
      project_id: webhook.project_id,
      data: { id: SAMPLE_ID, name: "sample.event", occurred_at: nowIso, conversation_id: null, properties: { sample: true } }
    }
    return { event, v1: body, v2: body }
  }
  const v1 = toV1(v2, msgConfig)
  return { event, v1, v2: event === "msg.config.created" ? v1 : v2 }
}

/** A sample of the network's own webhook body, for `upstream` test deliveries. */
export const sampleUpstreamBody = (webhook: WebhookRecord, nowIso: string): Uint8Array =>
  serialize({
    object: WebhookObjectName,
    entry: [{
      id: "0",
      changes: [{
        field: "messages",
        value: {
          messaging_product: MessagingProduct,
          metadata: { display_phone_number: "15550000000", phone_number_id: webhook.phone_number_id ?? "0" },
          contacts: [{ profile: { name: "Sample Contact" }, wa_id: SAMPLE_CONTACT }],
          messages: [{
            from: SAMPLE_CONTACT,
            id: "wamid.SAMPLE",
            timestamp: String(Math.floor(Date.parse(nowIso) / 1000)),
            type: "text",
            text: { body: "This is a sample message from a Parley test delivery" }
          }]
        }
      }]
    }]
  })
