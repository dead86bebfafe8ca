/**
 * What a host in simulator mode drives on its simulated network, beyond the network's own API: simulated contacts
 * writing in (`/sandbox/inbound`), what the network delivered (`/sandbox/outbox`), where its webhooks go, and its
 * app. Production code sees only this; the simulator itself (`simulators/network`) implements it, and only a host or
 * a test chooses to run one.
 */
import { Schema } from "effect"
import type { Effect, Redacted } from "effect"
import type { WebhookPayload } from "./Webhook.ts"

export type OutboundStatus = "accepted" | "sent" | "delivered" | "read" | "failed"

/** A simulated contact writing to a number. Either `from` (phone number) or `user_id` (business-scoped id only). */
export interface InboundInput {
  readonly from?: string | undefined
  readonly user_id?: string | undefined
  readonly profile_name?: string | undefined
  readonly username?: string | undefined
  /**
   * One network message object: `{ "type": "text", "text": { "body": "hi" } }`,
   * an `interactive` reply, a `reaction`, a `location`, media, ... `from`,
   * `id` and `timestamp` are filled in by the network; `context.id` (a reply)
   * gets its `context.from`.
   */
  readonly message: Readonly<Record<string, unknown>>
  /** The bytes of a media message; without them (and without an id) the network makes a small placeholder file. */
  readonly media?: { readonly bytes: Uint8Array; readonly mimeType: string; readonly filename?: string | undefined } | undefined
}

export interface InboundResult {
  /** The network message id (`wamid.`). */
  readonly id: string
  /** The webhook the network posted (or would have posted). */
  readonly payload: WebhookPayload
  /** Whether the sink acknowledged the first attempt. */
  readonly delivered: boolean
  /** The business blocked this contact: nothing was delivered. */
  readonly blocked: boolean
}

/** What the network accepted for a contact, and where its delivery stands. */
export interface OutboxEntry {
  readonly id: string
  readonly phoneNumberId: string
  /** Phone number of the contact, when known. */
  readonly to: string | undefined
  /** Business-scoped user id of the contact. */
  readonly userId: string
  readonly type: string
  /** The envelope as parsed JSON, and byte for byte as received. */
  readonly envelope: unknown
  readonly raw: Uint8Array
  /** Version segment the request used. */
  readonly version: string
  /** Epoch milliseconds. */
  readonly acceptedAt: number
  readonly status: OutboundStatus
}

/**
 * Where the simulator's webhooks go: the raw body and its
 * `X-Hub-Signature-256` value (`sha256=<hex>`). A failure counts as a failed
 * delivery and is retried.
 */
export type WebhookSink = (rawBody: Uint8Array, signatureHeader: string) => Effect.Effect<void, unknown>

/** A request to the simulator's control surface that cannot be carried out (unknown number, bad inbound message). */
export class SimulatorInputError extends Schema.TaggedError<SimulatorInputError>()("SimulatorInputError", {
  message: Schema.String
}) {}

/** The simulated number a host connects, as it will store it in its message config. */
export interface SimulatedNumber {
  readonly phoneNumberId: string
  readonly businessAccountId: string
  readonly displayPhoneNumber: string
  readonly verifiedName: string
  /** The token the simulator accepts for this number and its account. */
  readonly accessToken: Redacted.Redacted<string>
}

export interface SimulatedNetwork {
  /** The simulated network's app id (subscribed to accounts' webhooks, exchanging signup codes). */
  readonly appId: string
  /** A simulated contact writes: a signed inbound webhook, and the contact's window opens. */
  readonly inbound: (phoneNumberId: string, input: InboundInput) => Effect.Effect<InboundResult, SimulatorInputError>
  /** What the network accepted for the number's contacts, oldest first. */
  readonly outbox: (phoneNumberId: string) => Effect.Effect<ReadonlyArray<OutboxEntry>>
  /** Where webhooks go from now on (`undefined`: nowhere). */
  readonly setSink: (sink: WebhookSink | undefined) => Effect.Effect<void>
}
