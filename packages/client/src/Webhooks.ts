/**
 * Receiving Parley's webhook deliveries: checking their signature and reading
 * their events.
 *
 * A delivery's signature is the lowercase hex HMAC-SHA256 of the exact raw
 * body bytes, keyed with the webhook's secret. Verify before parsing, and
 * verify the bytes as received: re-serialising parsed JSON changes them.
 *
 * A delivery carries one event (`{ "event": "...", "data": ... }`) or, when
 * the webhook batches, several: `{ "batch": true, "events": [event, ...] }`.
 * `parseWebhookBatch` answers the list of events in both cases.
 */
import { Schema } from "effect"
import { createHmac, timingSafeEqual } from "node:crypto"

/** One event of a delivery. */
export interface WebhookEvent<Data = unknown> {
  readonly event: string
  readonly data: Data
}

/** Several events delivered in one request. */
export interface WebhookBatch<E extends WebhookEvent = WebhookEvent> {
  readonly batch: true
  readonly events: ReadonlyArray<E>
}

/** The body of a delivery: one event, or a batch of them. */
export type WebhookDelivery<E extends WebhookEvent = WebhookEvent> = E | WebhookBatch<E>

const toBytes = (rawBody: string | Uint8Array): Uint8Array =>
  typeof rawBody === "string" ? Buffer.from(rawBody, "utf8") : rawBody

/** The signature Parley sends for `rawBody`: hex HMAC-SHA256 keyed with `secret`. */
export const signWebhookBody = (rawBody: string | Uint8Array, secret: string): string =>
  createHmac("sha256", secret).update(toBytes(rawBody)).digest("hex")

const HEX_SHA256 = /^[0-9a-fA-F]{64}$/

/**
 * Whether `header` is the signature of `rawBody` under `secret`. False for a
 * missing or malformed header; the comparison takes the same time wherever
 * the signatures differ.
 */
export const verifyWebhookSignature = (
  rawBody: string | Uint8Array,
  header: string | null | undefined,
  secret: string
): boolean => {
  if (typeof header !== "string") return false
  const presented = header.trim()
  if (!HEX_SHA256.test(presented)) return false
  const expected = Buffer.from(signWebhookBody(rawBody, secret), "hex")
  const received = Buffer.from(presented, "hex")
  // timingSafeEqual throws on different lengths; the pattern above already guarantees 32 bytes each.
  if (received.length !== expected.length) return false
  return timingSafeEqual(received, expected)
}

const EventSchema = Schema.Struct({ event: Schema.String, data: Schema.Unknown })
const DeliverySchema = Schema.Union([
  Schema.Struct({ batch: Schema.Literal(true), events: Schema.Array(EventSchema) }),
  EventSchema
])
const decodeDelivery = Schema.decodeUnknownSync(DeliverySchema)

/**
 * The events of a delivery body, single or batched. A string is parsed as
 * JSON first; anything else is taken as the already parsed body.
 *
 * A batch is Parley's `{ "type": <event>, "batch": true, "data": [...] }`
 * (decisions 6.4: one event per item, each named `type`), or the older
 * `{ "batch": true, "events": [...] }`. A single delivery is
 * `{ "event", "data", ... }` (project events), or any other JSON object when
 * `eventHeader` (the delivery's `X-Webhook-Event`) names it: message,
 * conversation and number events carry their name only there. Throws when
 * the body is none of these.
 */
export const parseWebhookBatch = (body: unknown, eventHeader?: string | null): ReadonlyArray<WebhookEvent> => {
  const parsed: unknown = typeof body === "string" ? JSON.parse(body) : body
  if (typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)) {
    const record = parsed as Record<string, unknown>
    if (record.batch === true && typeof record.type === "string" && Array.isArray(record.data)) {
      const type = record.type
      return record.data.map((data: unknown) => ({ event: type, data }))
    }
    if (
      typeof eventHeader === "string" && eventHeader !== "" && record.batch === undefined &&
      typeof record.event !== "string"
    ) {
      return [{ event: eventHeader, data: parsed }]
    }
  }
  const delivery = decodeDelivery(parsed)
  return "batch" in delivery ? delivery.events : [delivery]
}
