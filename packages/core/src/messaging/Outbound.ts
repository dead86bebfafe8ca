/**
 * The one act of sending a message (decisions 4.10, 7.4, 7.5): whatever asks
 * for a send (the proxy, the execution engine, broadcasts) goes through
 * `Outbound.send`, so every message Parley sends is recorded, ordered, sent
 * and moved by its statuses the same way.
 *
 * A non-template send outside the 24-hour customer-service window is refused
 * before anything is recorded (7.5); media uploaded through another business
 * account than the sending number's is refused too (7.4). Otherwise the
 * message is recorded first (`ext.status` `pending`, linked to its
 * conversation), sent with the number's stored access token, and then given
 * its network id or marked `failed` with the network's error (records and ids
 * of concurrent sends share their transactions). Sends to one recipient of one
 * number are serialised in this process, so they reach the network in order.
 */
import { Clock, Context, Effect, Layer, Option, Predicate, Semaphore } from "effect"
import { ContactsRepo, ConversationsRepo, MediaRepo, MessagesRepo, UpstreamInboxRepo } from "./MessagingRepo.ts"
import { MessagingNetwork, type NetworkUnavailable, type RawNetworkAnswer } from "../network/MessagingNetwork.ts"
import { MEDIA_TYPES, type MessageOrigin, type MessageRecord, type SentBy, windowKey } from "./Message.ts"
import { Messaging } from "./Messaging.ts"
import { acceptedMessageId, type NetworkErrorDetail } from "../network/NetworkObjects.ts"
import { type MessageConfigRecord, phoneDigits } from "./numbers/MessageConfig.ts"
import { envelopeTexts } from "./Recording.ts"
import { observeSend } from "./MessagingTelemetry.ts"
import { SendPace } from "./numbers/SendPace.ts"
import { ConversationalSends } from "./ConversationalSends.ts"
import { type RecipientsSnapshot, SendPolicy, sendRequest } from "../guardrails/SendPolicy.ts"
import type { Withheld } from "../guardrails/Guardrail.ts"

type Json = Record<string, unknown>

/** What became of a send. Only `Accepted` and `Refused` reached the network; only they may have recorded a message. */
export type OutboundOutcome =
  | {
    readonly _tag: "Accepted"
    /** The recorded message with its network id; none when the envelope names no recipient (then nothing is recorded). */
    readonly message: Option.Option<MessageRecord>
    /** The id the network gave the message, when its answer names one. */
    readonly networkId: string | undefined
    /** The network's answer as it came: status, content type and bytes. */
    readonly answer: RawNetworkAnswer
  }
  | {
    /** The network answered with its error object; the recorded message, if any, is `failed` with it. */
    readonly _tag: "Refused"
    readonly status: number
    readonly contentType: string
    readonly body: Uint8Array
    readonly error: NetworkErrorDetail
  }
  /** A non-template message while the 24-hour window is closed (decisions 7.5): nothing recorded, nothing sent. */
  | { readonly _tag: "OutsideWindow" }
  /** The envelope sends media uploaded through another business account (decisions 7.4): nothing recorded, nothing sent. */
  | { readonly _tag: "AccountMismatch"; readonly mediaId: string }
  /** The network could not be reached or answered outside its format; the recorded message, if any, is `failed`. */
  | { readonly _tag: "Unavailable"; readonly failure: NetworkUnavailable }
  /** The guardrails held it back (opt-out, quiet hours, frequency cap: `guardrails/SendPolicy.ts`): nothing recorded, nothing sent. */
  | { readonly _tag: "Withheld"; readonly withheld: Withheld }

export interface OutboundOptions {
  /** Where the message comes from: `api` for the proxy. */
  readonly origin: MessageOrigin
  /** The exact bytes to send (the proxy forwards what it received); by default the envelope as JSON. */
  readonly body?: Uint8Array | undefined
  /**
   * The Parley id to record the message under; by default a new one. A caller that chooses it first can tell after a
   * crash whether the message was ever recorded (`findRecorded`).
   */
  readonly messageId?: string | undefined
  /** The network's API version segment, as the caller asked for it. */
  readonly version?: string | undefined
  /** Who sent it, kept as `ext.sent_by` (an embedded inbox's user or embed, decisions 2.17). */
  readonly sentBy?: SentBy | undefined
  /** An opt-out's own confirmation: the guardrails do not hold it back. */
  readonly confirmsOptOut?: boolean | undefined
  /** The guardrails' facts the caller read for a batch of recipients this one belongs to (a broadcast's). */
  readonly guardrailFacts?: RecipientsSnapshot | undefined
  /** The contact the caller expects the recipient to be (`OutboundInput.contact_id`). */
  readonly contactId?: string | undefined
}

/** The 24-hour customer-service window (decisions 7.5). */
export const CUSTOMER_SERVICE_WINDOW_MS = 24 * 60 * 60 * 1000

/** Open windows a process remembers at most (a bound on memory, not on correctness). */
const OPEN_WINDOWS_MAX = 100_000


const encoder = new TextEncoder()

/** Ids of uploaded media an envelope sends (`image.id`, an interactive header's, a template parameter's, ...). */
const mediaIdsOf = (value: unknown, into: Set<string> = new Set()): Set<string> => {
  if (Array.isArray(value)) for (const item of value) mediaIdsOf(item, into)
  else if (Predicate.isObject(value)) {
    for (const [key, inner] of Object.entries(value)) {
      if (MEDIA_TYPES.includes(key) && Predicate.isObject(inner) && typeof inner["id"] === "string") into.add(inner["id"])
      else mediaIdsOf(inner, into)
    }
  }
  return into
}

export class Outbound extends Context.Service<Outbound, {
  /** Sends one message envelope (`{ messaging_product, to | recipient, type, ... }`) from the number. Never fails. */
  readonly send: (config: MessageConfigRecord, envelope: Json, options: OutboundOptions) => Effect.Effect<OutboundOutcome>
  /** The message recorded under a Parley id, if it ever was. */
  readonly findRecorded: (projectId: string, messageId: string) => Effect.Effect<Option.Option<MessageRecord>>
  /**
   * A recorded send whose answer was lost (a crash): when a status report
   * received since `since` carries its `callbackData` (the key it was sent
   * with), the network id that report names is assigned to it now; None when
   * no report came.
   */
  readonly settleFromReports: (
    config: MessageConfigRecord,
    message: MessageRecord,
    callbackData: string,
    since: string
  ) => Effect.Effect<Option.Option<MessageRecord>>
  /**
   * A recorded send whose answer was lost and that the network never
   * reported within a grace (it reports every message it accepts): failed as
   * unconfirmed, so a new attempt can take its place.
   */
  readonly failUnconfirmed: (config: MessageConfigRecord, message: MessageRecord) => Effect.Effect<void>
}>()("@parley/core/messaging/Outbound") {
  static readonly layer = Layer.effect(
    Outbound,
    Effect.gen(function*() {
      const contacts = yield* ContactsRepo
      const conversations = yield* ConversationsRepo
      const messages = yield* MessagesRepo
      const inbox = yield* UpstreamInboxRepo
      const media = yield* MediaRepo
      const messaging = yield* Messaging
      const network = yield* MessagingNetwork
      const pace = yield* SendPace
      const conversational = yield* ConversationalSends
      const policy = yield* SendPolicy

      // One permit per (number, recipient): a send waits for the one in flight (decisions 4.10).
      const lanes = new Map<string, { readonly semaphore: Semaphore.Semaphore; users: number }>()
      const serialised = <A, E, R>(key: string, effect: Effect.Effect<A, E, R>) =>
        Effect.acquireUseRelease(
          Effect.sync(() => {
            const lane = lanes.get(key) ?? { semaphore: Semaphore.makeUnsafe(1), users: 0 }
            lane.users++
            lanes.set(key, lane)
            return lane
          }),
          (lane) => lane.semaphore.withPermits(1)(effect),
          (lane) =>
            Effect.sync(() => {
              lane.users--
              if (lane.users === 0) lanes.delete(key)
            })
        )

      // Windows seen open, until they would close: a window only ever moves later (a new inbound message), on any
      // host, so a send inside a remembered window needs no read.
      const openWindows = new Map<string, number>()
      const rememberOpen = (key: string, until: number, now: number) => {
        if (openWindows.size >= OPEN_WINDOWS_MAX) {
          for (const [k, at] of openWindows) if (at <= now) openWindows.delete(k)
          if (openWindows.size >= OPEN_WINDOWS_MAX) openWindows.clear()
        }
        openWindows.set(key, until)
      }

      /**
       * Is the recipient inside the 24-hour window on this number (decisions 7.5)? A remembered window answers without
       * a span (a span costs a send ~4 KB of allocation and a stack trace); only a read is traced.
       */
      const windowOpen = (
        config: MessageConfigRecord,
        recipient: { readonly waId: string | undefined; readonly userId: string | undefined }
      ) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => {
          const key = `${config.id}:${recipient.waId ?? recipient.userId}`
          return (openWindows.get(key) ?? 0) > now ? Effect.succeed(true) : readWindow(config, recipient, key, now)
        })

      const readWindow = Effect.fn("Outbound.windowOpen")(function*(
        config: MessageConfigRecord,
        recipient: { readonly waId: string | undefined; readonly userId: string | undefined },
        key: string,
        now: number
      ) {
        const contact = recipient.waId !== undefined
          ? yield* contacts.findByWaId(config.project_id, recipient.waId)
          : recipient.userId !== undefined
          ? yield* contacts.findByUserId(config.project_id, recipient.userId)
          : Option.none()
        const conversation = Option.isSome(contact)
          ? yield* conversations.findActive(config.id, contact.value.id)
          : Option.none()
        const lastInbound = Option.isSome(conversation) ? conversation.value.last_inbound_at : null
        const until = lastInbound === null ? 0 : Date.parse(lastInbound) + CUSTOMER_SERVICE_WINDOW_MS
        if (until > now) {
          rememberOpen(key, until, now)
          return true
        }
        // A POST the inbox job has not processed yet may hold a message from this contact: ingestion recorded who
        // wrote as it arrived. Then the network decides (it answers 131047 itself when the window is closed).
        const senders = [recipient.waId, recipient.userId].flatMap((s) => s === undefined ? [] : [windowKey(config.phone_number_id, s)])
        return yield* inbox.hasUnprocessedFrom(senders)
      })

      // Untraced: it runs inside `Outbound.send`'s span, and a span costs every send ~4 KB of allocation.
      const sendInLane = Effect.fnUntraced(function*(
        config: MessageConfigRecord,
        envelope: Json,
        options: OutboundOptions,
        recipient: { readonly waId: string | undefined; readonly userId: string | undefined }
      ) {
        const type = envelopeTexts(envelope).type ?? "text"
        const guarded = sendRequest(config, envelope, options, recipient)
        // The guardrails answer first. Their check runs in the recording's first round trip; a send refused before
        // it is recorded (the window, the media's account) is checked on its own first.
        const check = options.confirmsOptOut === true ? Effect.succeed(Option.none<Withheld>()) : policy.check(guarded)
        const refusedUnlessWithheld = (refused: OutboundOutcome) =>
          Effect.map(check, (withheld): OutboundOutcome => Option.isSome(withheld) ? { _tag: "Withheld", withheld: withheld.value } : refused)
        if ((recipient.waId !== undefined || recipient.userId !== undefined) && type !== "template") {
          if (!(yield* windowOpen(config, recipient))) return yield* refusedUnlessWithheld({ _tag: "OutsideWindow" })
        }
        const mediaIds = mediaIdsOf(envelope)
        if (mediaIds.size > 0) {
          const uploads = yield* media.findUploads(config.project_id, [...mediaIds])
          const foreign = uploads.find((u) => u.business_account_id !== config.business_account_id)
          if (foreign !== undefined) return yield* refusedUnlessWithheld({ _tag: "AccountMismatch", mediaId: foreign.network_media_id })
        }
        // Recorded before it goes out (decisions 4.10); an envelope without a recipient is not recorded, the network
        // refuses it. Records and network ids of concurrent sends share their transactions.
        const recording = yield* messaging.recordChecked(config, {
          envelope,
          origin: options.origin,
          id: options.messageId,
          sent_by: options.sentBy,
          contact_id: options.contactId
        }, check).pipe(
          Effect.map(({ message }) => Option.some(message)),
          Effect.catchTag("Unprocessable", () => Effect.succeed(Option.none<MessageRecord>())),
          Effect.catchTag("SendWithheld", ({ withheld }) => Effect.succeed({ _tag: "Withheld", withheld } satisfies OutboundOutcome))
        )
        if (!Option.isOption(recording)) return recording
        const recorded = recording
        const access = { accessToken: config.access_token, version: options.version }
        const body = options.body ?? encoder.encode(JSON.stringify(envelope))
        // Anything but a broadcast goes first on its number; a broadcast's sender waited for its slot already.
        if (options.origin !== "broadcast") yield* pace.conversational(config.phone_number_id)
        const outcome = yield* Effect.result(network.send(access, config.phone_number_id, body))
        if (outcome._tag === "Success") {
          const networkId = acceptedMessageId(outcome.success.value)
          // The message went out: its outcome is Accepted even when the id cannot be stored.
          const message = Option.isSome(recorded) && networkId !== undefined
            ? yield* messaging.assignNetworkId(config, recorded.value, networkId).pipe(
              Effect.map(Option.some),
              Effect.catchCause((cause) =>
                Effect.as(Effect.logError("A sent message's network id could not be stored", cause), recorded)
              )
            )
            : recorded
          const { body: bytes, contentType, status } = outcome.success
          return { _tag: "Accepted", message, networkId, answer: { status, contentType, body: bytes } } satisfies OutboundOutcome
        }
        const refused = outcome.failure
        if (refused._tag === "NetworkRefused") yield* policy.refused(guarded, refused.error.code)
        if (Option.isSome(recorded)) {
          const error: Json = refused._tag === "NetworkRefused"
            ? { ...refused.error }
            : { code: 131016, title: "Service unavailable", message: refused.detail }
          yield* messaging.failOutbound(config.project_id, recorded.value.id, error).pipe(Effect.ignore)
        }
        return refused._tag === "NetworkRefused"
          ? {
            _tag: "Refused",
            status: refused.status,
            contentType: refused.contentType,
            body: refused.body,
            error: refused.error
          } satisfies OutboundOutcome
          : { _tag: "Unavailable", failure: refused } satisfies OutboundOutcome
      })

      const send = Effect.fn("Outbound.send")(function*(config: MessageConfigRecord, envelope: Json, options: OutboundOptions) {
        const { to, recipient } = envelopeTexts(envelope)
        const waId = to === undefined ? undefined : phoneDigits(to) || undefined
        const userId = waId === undefined ? recipient : undefined
        const lane = `${config.phone_number_id}:${(to === undefined ? undefined : phoneDigits(to)) || recipient || ""}`
        const inLane = serialised(lane, sendInLane(config, envelope, options, { waId, userId }))
        // A send inside a conversation is counted while in flight: broadcasts leave the host headroom meanwhile.
        const outcome = yield* (options.origin === "broadcast" ? inLane : conversational.track(inLane))
        yield* observeSend(config, outcome)
        return outcome
      })

      const settleFromReports = Effect.fn("Outbound.settleFromReports")(
        function*(config: MessageConfigRecord, message: MessageRecord, callbackData: string, since: string) {
          const reports = yield* messages.statusEventsByCallbackData(config.phone_number_id, callbackData, since)
          if (reports.length === 0) return Option.none<MessageRecord>()
          // Assigning applies the reports too: they wait under that network id.
          return Option.some(yield* messaging.assignNetworkId(config, message, reports[0]!.network_id))
        }
      )

      const failUnconfirmed = (config: MessageConfigRecord, message: MessageRecord) =>
        messaging.failOutbound(config.project_id, message.id, {
          title: "Send unconfirmed",
          message: "The network never reported this send after a restart; it was sent again"
        }).pipe(Effect.asVoid, Effect.orDie)

      return Outbound.of({ send, findRecorded: messages.findById, settleFromReports, failUnconfirmed })
    })
  )
}
