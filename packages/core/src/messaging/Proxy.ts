/**
 * The messaging proxy's send side (decisions 4.10, 7.3, 7.4, 7.5):
 * `POST {proxy_url}[/vNN.N]/<phone_number_id>/messages`.
 *
 * The number must belong to the caller's project (404 in the network's error
 * shape, code 100). A message envelope is recorded first (`ext.status`
 * `pending`, `origin` `api`, linked to its conversation), forwarded to the
 * network byte for byte with the number's stored access token, and then
 * given its network id or marked `failed` with the network's error (records
 * and ids of concurrent sends share their transactions). The network's
 * answer (or error object) comes back unchanged: status, content type and
 * bytes. A mark-read envelope (`status: "read"`) goes to the
 * network's mark read and marks the thread's inbound messages read.
 *
 * Non-template sends outside the 24-hour customer-service window are refused
 * before forwarding (7.5). Sends to one recipient of one number are
 * serialised in this process, so they reach the network in order.
 *
 * Every outcome is an answer (`ProxyAnswer`): the service never fails, so a
 * route only writes what it gets.
 */
import { Clock, Context, Data, Effect, Layer, Option, Redacted, Semaphore } from "effect"
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto"
import { parseJson as readJson } from "../shared/Json.ts"
import { FunctionSecretKey } from "../functions/SecretCipher.ts"
import { MessageConfigsRepo } from "../ports/MessageConfigsRepo.ts"
import { ContactsRepo, ConversationsRepo, MediaRepo, UpstreamInboxRepo } from "../ports/MessagingRepo.ts"
import {
  MessagingNetwork,
  type NetworkAccess,
  type NetworkAnswer,
  type NetworkError,
  type NetworkUnavailable,
  rawAnswer,
  type RawNetworkAnswer
} from "../ports/MessagingNetwork.ts"
import type { MessageConfigRecord } from "./numbers/MessageConfig.ts"
import { phoneDigits } from "./numbers/MessageConfig.ts"
import { PublicUrl } from "../http/PublicUrl.ts"
import { type CursorKey, decodeCursor, encodeCursor, type ListSlice, type ListWindow } from "../shared/Pagination.ts"
import {
  type ConversationFilter,
  type ConversationStatus,
  createdCursorKeyOf,
  type Direction,
  type MessageFilter,
  type MessageStatus,
  type StoredMedia,
  MEDIA_TYPES,
  toProxyContact,
  toProxyConversation,
  toProxyMessage
} from "./Message.ts"
import { Messaging } from "./Messaging.ts"
import { acceptedMessageId } from "./NetworkObjects.ts"
import { checkMedia } from "./simulator/Media.ts"
import { CONVERSATION_EXT_FIELDS, type FieldSelection, MESSAGE_EXT_FIELDS, parseFields, selectFields } from "./ProxyFields.ts"

type Json = Record<string, unknown>

/** What the proxy answers: status, content type and body bytes, as the network sent them or as the service made them. */
export type ProxyAnswer = RawNetworkAnswer

/** How long a `download_url` works (spec: 4 minutes). */
export const MEDIA_DOWNLOAD_TTL_MS = 4 * 60 * 1000

/** Whether a raw upstream payload holds a message from the contact to the number (`from` or `from_user_id`). */
const hasMessageFrom = (
  body: Uint8Array,
  phoneNumberId: string,
  contact: { readonly waId: string | undefined; readonly userId: string | undefined }
): boolean => {
  let payload: any
  try {
    payload = JSON.parse(new TextDecoder().decode(body))
  } catch {
    return false
  }
  const entries: Array<any> = Array.isArray(payload?.entry) ? payload.entry : []
  return entries.some((entry) =>
    (Array.isArray(entry?.changes) ? entry.changes : []).some((change: any) =>
      change?.value?.metadata?.phone_number_id === phoneNumberId &&
      (Array.isArray(change?.value?.messages) ? change.value.messages : []).some((m: any) =>
        (contact.waId !== undefined && m?.from === contact.waId) ||
        (contact.userId !== undefined && m?.from_user_id === contact.userId)
      )
    )
  )
}

/** The 24-hour customer-service window (decisions 7.5). */
export const CUSTOMER_SERVICE_WINDOW_MS = 24 * 60 * 60 * 1000

/** Open windows a process remembers at most (a bound on memory, not on correctness). */
const OPEN_WINDOWS_MAX = 100_000

const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value)
const str = (value: unknown): string | undefined => (typeof value === "string" && value.length > 0 ? value : undefined)

const encoder = new TextEncoder()
const decoder = new TextDecoder()

const json = (status: number, body: unknown): ProxyAnswer => ({
  status,
  contentType: "application/json",
  body: encoder.encode(JSON.stringify(body))
})

/**
 * An error the service synthesises to mirror a network rule (decisions 7.3):
 * the network's error object, `type` `MessageError`, without a trace id.
 */
export const networkStyleError = (
  status: number,
  code: number,
  message: string,
  options: { readonly subcode?: number | undefined; readonly details?: string | undefined } = {}
): ProxyAnswer =>
  json(status, {
    error: {
      message,
      type: "MessageError",
      code,
      error_data: { messaging_product: "whatsapp", details: options.details ?? message },
      ...(options.subcode !== undefined ? { error_subcode: options.subcode } : {})
    }
  })

/** A service-specific refusal (decisions 7.4): flat `{ error, code }`. */
export const serviceRefusal = (status: number, code: string, error: string, extra: Json = {}): ProxyAnswer =>
  json(status, { error, code, ...extra })

/** 404 for a number, business account or media id that is not the project's (decisions 4.10). */
export const unknownObject = (id: string): ProxyAnswer =>
  networkStyleError(
    404,
    100,
    `(#100) Unsupported request - object with ID '${id}' does not exist, cannot be loaded due to missing permissions, or does not support this operation`,
    { details: `Object with ID '${id}' not found in this project` }
  )

/** The network could not be reached and sent nothing back. */
const unreachable = (detail: string): ProxyAnswer =>
  networkStyleError(502, 131016, "(#131016) Service unavailable", { details: `The messaging network could not be reached: ${detail}` })

export const outsideWindow = (): ProxyAnswer =>
  networkStyleError(422, 131047, "Only template messages can be sent outside the 24-hour window", {
    subcode: 131047,
    details: "Message failed to send because more than 24 hours have passed since the customer last replied to this number."
  })

/** Ids of uploaded media an envelope sends (`image.id`, an interactive header's, a template parameter's, ...). */
const mediaIdsOf = (value: unknown, into: Set<string> = new Set()): Set<string> => {
  if (Array.isArray(value)) for (const item of value) mediaIdsOf(item, into)
  else if (isObject(value)) {
    for (const [key, inner] of Object.entries(value)) {
      if (MEDIA_TYPES.includes(key) && isObject(inner) && typeof inner["id"] === "string") into.add(inner["id"])
      else mediaIdsOf(inner, into)
    }
  }
  return into
}

/** Decisions 7.4: the service's own refusal, flat `{ error, code }`. */
const accountMismatch = (mediaId: string): ProxyAnswer =>
  json(422, {
    error: `Media ${mediaId} was uploaded through another business account than the sending number's`,
    code: "messaging_account_mismatch"
  })

/** A query parameter the proxy cannot use: the network's invalid-parameter error (code 100). */
export const invalidParameter = (status: number, message: string): ProxyAnswer =>
  networkStyleError(status, 100, `(#100) ${message}`, { details: message })

/** A read refused before it reached storage: its answer is ready. */
class Refusal extends Data.TaggedError("ProxyRefusal")<{ readonly answer: ProxyAnswer }> {}

const refuse = (answer: ProxyAnswer) => Effect.fail(new Refusal({ answer }))

const optional = (query: URLSearchParams, name: string) => {
  const v = query.get(name)
  return v === null || v.trim() === "" ? undefined : v.trim()
}

const oneOf = <A extends string>(query: URLSearchParams, name: string, values: ReadonlyArray<A>) => {
  const v = optional(query, name)
  if (v === undefined) return Effect.succeed(undefined)
  return values.includes(v as A)
    ? Effect.succeed(v as A)
    : refuse(invalidParameter(400, `${name} must be one of ${values.join(", ")}`))
}

const dateTime = (query: URLSearchParams, name: string) => {
  const v = optional(query, name)
  if (v === undefined) return Effect.succeed(undefined)
  const ms = Date.parse(v)
  return Number.isNaN(ms) || !/^\d{4}-\d{2}-\d{2}T/.test(v)
    ? refuse(invalidParameter(400, `${name} must be an ISO 8601 date-time`))
    : Effect.succeed(new Date(ms).toISOString())
}

const booleanParam = (query: URLSearchParams, name: string) => {
  const v = optional(query, name)
  if (v === undefined) return Effect.succeed(undefined)
  if (v === "true") return Effect.succeed(true)
  if (v === "false") return Effect.succeed(false)
  return refuse(invalidParameter(400, `${name} must be true or false`))
}

/** `limit` 1-100 (default 20; 422 outside), `before`/`after` cursors (400 when undecodable), decisions 1.3. */
const cursorWindow = (query: URLSearchParams) =>
  Effect.gen(function*() {
    const raw = optional(query, "limit")
    const limit = raw === undefined ? 20 : /^\d+$/.test(raw) ? Number(raw) : Number.NaN
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > 100) {
      return yield* refuse(invalidParameter(422, "limit must be between 1 and 100"))
    }
    const cursor = (name: string) => {
      const v = optional(query, name)
      return v === undefined
        ? Effect.succeed<CursorKey | undefined>(undefined)
        : decodeCursor(v).pipe(Effect.mapError(() => new Refusal({ answer: invalidParameter(400, "Invalid pagination cursor") })))
    }
    const after = yield* cursor("after")
    const before = yield* cursor("before")
    return { mode: "cursor", limit, after, before } satisfies ListWindow as Extract<ListWindow, { mode: "cursor" }>
  })

const fieldsOf = (query: URLSearchParams, allowedExt: ReadonlyArray<string>) => {
  const parsed = parseFields(query.get("fields"), allowedExt)
  return parsed._tag === "Ok" ? Effect.succeed(parsed.selection) : refuse(invalidParameter(400, parsed.error))
}

const withParams = (base: URL, params: Record<string, string>): string => {
  const url = new URL(base)
  for (const key of ["limit", "before", "after"]) url.searchParams.delete(key)
  for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v)
  return url.toString()
}

/** `{ data, paging: { cursors, next, previous } }`, newest first (decisions 1.3). */
const cursorBody = <A extends { readonly created_at: string; readonly id: string }>(
  window: Extract<ListWindow, { mode: "cursor" }>,
  slice: ListSlice<A>,
  render: (a: A) => object,
  location: URL
) => {
  const first = slice.items[0]
  const last = slice.items[slice.items.length - 1]
  const before = first !== undefined ? encodeCursor(createdCursorKeyOf(first)) : null
  const after = last !== undefined ? encodeCursor(createdCursorKeyOf(last)) : null
  const limit = String(window.limit)
  const hasOlder = window.before !== undefined ? true : slice.hasMore
  const hasNewer = window.before !== undefined ? slice.hasMore : window.after !== undefined
  return json(200, {
    data: slice.items.map(render),
    paging: {
      cursors: { before, after },
      next: hasOlder && after !== null ? withParams(location, { limit, after }) : null,
      previous: hasNewer && before !== null ? withParams(location, { limit, before }) : null
    }
  })
}

const answered = (effect: Effect.Effect<ProxyAnswer, Refusal>): Effect.Effect<ProxyAnswer> =>
  Effect.catchTag(effect, "ProxyRefusal", (r) => Effect.succeed(r.answer))

const parseJson = (bytes: Uint8Array): unknown => Option.getOrUndefined(readJson(decoder.decode(bytes)))

export class MessagingProxy extends Context.Service<MessagingProxy, {
  /** The project's live number with that network id, if any. */
  readonly number: (projectId: string, phoneNumberId: string) => Effect.Effect<Option.Option<MessageConfigRecord>>
  /** `POST /<phone_number_id>/messages` with the body as received and the version segment as given. */
  readonly send: (
    projectId: string,
    phoneNumberId: string,
    body: Uint8Array,
    version?: string | undefined
  ) => Effect.Effect<ProxyAnswer>
  /** `GET /<phone_number_id>/messages`: spec filters, cursor paging, `fields`; `location` is the list's absolute URL. */
  readonly listMessages: (projectId: string, phoneNumberId: string, query: URLSearchParams, location: URL) => Effect.Effect<ProxyAnswer>
  /** `GET /<phone_number_id>/messages/<message_id>` by Parley's or the network's id, with `fields`. */
  readonly getMessage: (projectId: string, phoneNumberId: string, id: string, query: URLSearchParams) => Effect.Effect<ProxyAnswer>
  /** `GET /<phone_number_id>/conversations` (decisions 4.10 filters), cursor paging, `fields`. */
  readonly listConversations: (
    projectId: string,
    phoneNumberId: string,
    query: URLSearchParams,
    location: URL
  ) => Effect.Effect<ProxyAnswer>
  /** `GET /<phone_number_id>/conversations/<conversation_id>` with `fields`. */
  readonly getConversation: (projectId: string, phoneNumberId: string, id: string, query: URLSearchParams) => Effect.Effect<ProxyAnswer>
  /** `POST /<phone_number_id>/media`: the file checked against the network's limits (8.3), then uploaded. */
  readonly uploadMedia: (
    projectId: string,
    phoneNumberId: string,
    file: { readonly bytes: Uint8Array; readonly mimeType: string; readonly filename: string },
    version?: string | undefined
  ) => Effect.Effect<ProxyAnswer>
  /** `GET /<media_id>?phone_number_id=`: the network's media URL result plus a service-hosted `download_url`. */
  readonly mediaUrl: (
    projectId: string,
    mediaId: string,
    phoneNumberId: string | undefined,
    downloadBase: string,
    version?: string | undefined
  ) => Effect.Effect<ProxyAnswer>
  /** `DELETE /<media_id>?phone_number_id=`. */
  readonly deleteMedia: (
    projectId: string,
    mediaId: string,
    phoneNumberId: string | undefined,
    version?: string | undefined
  ) => Effect.Effect<ProxyAnswer>
  /** The download behind a `download_url` token: the bytes and their type, or a refusal. */
  readonly download: (token: string) => Effect.Effect<ProxyAnswer>
  /** `GET /<waba_id>/message_templates` with the network's filters and paging. */
  readonly listTemplates: (projectId: string, businessAccountId: string, query: URLSearchParams, version?: string | undefined) => Effect.Effect<ProxyAnswer>
  /** `GET /<waba_id>/message_templates/<template_id>`. */
  readonly getTemplate: (projectId: string, businessAccountId: string, templateId: string, version?: string | undefined) => Effect.Effect<ProxyAnswer>
  /** `POST /<waba_id>/message_templates`: create, or edit with `hsm_id`; the body forwarded byte for byte. */
  readonly saveTemplate: (
    projectId: string,
    businessAccountId: string,
    hsmId: string | undefined,
    body: Uint8Array,
    version?: string | undefined
  ) => Effect.Effect<ProxyAnswer>
  /** `DELETE /<waba_id>/message_templates?name=&hsm_id=` (at least one). */
  readonly deleteTemplate: (
    projectId: string,
    businessAccountId: string,
    target: { readonly name?: string | undefined; readonly hsmId?: string | undefined },
    version?: string | undefined
  ) => Effect.Effect<ProxyAnswer>
  /** `GET`, `POST`, `DELETE /<phone_number_id>/block_users`: paging query or the body, forwarded. */
  readonly blockUsers: (
    projectId: string,
    phoneNumberId: string,
    method: "GET" | "POST" | "DELETE",
    query: URLSearchParams,
    body: Uint8Array,
    version?: string | undefined
  ) => Effect.Effect<ProxyAnswer>
  /** `GET`, `POST`, `DELETE /<phone_number_id>/username`, and `GET .../username_suggestions` (`method` `SUGGEST`). */
  readonly username: (
    projectId: string,
    phoneNumberId: string,
    method: "GET" | "POST" | "DELETE" | "SUGGEST",
    body: Uint8Array,
    version?: string | undefined
  ) => Effect.Effect<ProxyAnswer>
  /**
   * `POST /<flow_id>`: interactive form metadata. The flow must belong to one
   * of the project's business accounts: each is tried with its own token until
   * the network knows the flow; none does → 404 (code 100).
   */
  readonly flowMetadata: (projectId: string, flowId: string, body: Uint8Array, version?: string | undefined) => Effect.Effect<ProxyAnswer>
  /**
   * `GET /<phone_number_id>/contacts`: contacts with a conversation on the number; `wa_id`, and `customer_id` /
   * `has_customer` matched against the number's customer (contacts belong to a customer through the number).
   */
  readonly listContacts: (projectId: string, phoneNumberId: string, query: URLSearchParams, location: URL) => Effect.Effect<ProxyAnswer>
  /** `GET /<phone_number_id>/contacts/<wa_id>` (also a business-scoped id or Parley's contact id). */
  readonly getContact: (projectId: string, phoneNumberId: string, identifier: string) => Effect.Effect<ProxyAnswer>
  /** The kept copy of a message's media (`ext.media_url`), with its bytes, when it is the project's. */
  readonly keptMedia: (projectId: string, id: string) => Effect.Effect<Option.Option<StoredMedia>>
  /**
   * Any other request on the number's edges (`rest`: the segments after the number), forwarded unchanged with its
   * stored token; methods the network does not take answer its "unsupported request" error.
   */
  readonly forward: (
    projectId: string,
    phoneNumberId: string,
    method: string,
    rest: ReadonlyArray<string>,
    query: URLSearchParams,
    body: Uint8Array | undefined,
    contentType: string | undefined,
    version?: string | undefined
  ) => Effect.Effect<ProxyAnswer>
}>()("@parley/core/messaging/MessagingProxy") {
  static readonly layer = Layer.effect(
    MessagingProxy,
    Effect.gen(function*() {
      const configs = yield* MessageConfigsRepo
      const contacts = yield* ContactsRepo
      const conversations = yield* ConversationsRepo
      const inbox = yield* UpstreamInboxRepo
      const messaging = yield* Messaging
      const network = yield* MessagingNetwork
      const publicUrl = yield* PublicUrl
      const media = yield* MediaRepo

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

      const number = messaging.numberOf

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

      /** Is the recipient inside the 24-hour window on this number (decisions 7.5)? */
      const windowOpen = Effect.fn("MessagingProxy.windowOpen")(function*(
        config: MessageConfigRecord,
        recipient: { readonly waId: string | undefined; readonly userId: string | undefined }
      ) {
        const key = `${config.id}:${recipient.waId ?? recipient.userId}`
        const now = yield* Clock.currentTimeMillis
        if ((openWindows.get(key) ?? 0) > now) return true
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
        // Ingestion acknowledges before it processes: a message from this contact may be stored but not yet
        // processed. Then the network decides (it answers 131047 itself when the window is closed).
        const waiting = yield* inbox.listUnprocessed(new Date(now + 1).toISOString(), 50)
        return waiting.some((entry) => hasMessageFrom(entry.body, config.phone_number_id, recipient))
      })

      const markRead = Effect.fn("MessagingProxy.markRead")(function*(
        config: MessageConfigRecord,
        access: NetworkAccess,
        envelope: Json,
        body: Uint8Array
      ) {
        const messageId = str(envelope["message_id"])
        // Without a message id the network refuses it in its own words.
        if (messageId === undefined) return yield* rawAnswer(network.send(access, config.phone_number_id, body))
        const typing = isObject(envelope["typing_indicator"]) && envelope["typing_indicator"]["type"] === "text"
        const call = network.markRead(access, config.phone_number_id, { messageId, typingIndicator: typing })
        const answer = yield* rawAnswer(call)
        if (answer.status >= 200 && answer.status < 300) yield* messaging.markInboundRead(config, messageId)
        return answer
      })

      const sendMessage = Effect.fn("MessagingProxy.sendMessage")(function*(
        config: MessageConfigRecord,
        access: NetworkAccess,
        envelope: Json,
        body: Uint8Array
      ) {
        const to = str(envelope["to"])
        const waId = to === undefined ? undefined : phoneDigits(to) || undefined
        const userId = waId === undefined ? str(envelope["recipient"]) : undefined
        const type = str(envelope["type"]) ?? "text"
        if ((waId !== undefined || userId !== undefined) && type !== "template") {
          if (!(yield* windowOpen(config, { waId, userId }))) return outsideWindow()
        }
        const mediaIds = mediaIdsOf(envelope)
        if (mediaIds.size > 0) {
          const uploads = yield* media.findUploads(config.project_id, [...mediaIds])
          const foreign = uploads.find((u) => u.business_account_id !== config.business_account_id)
          if (foreign !== undefined) return accountMismatch(foreign.network_media_id)
        }
        // Recorded before it goes out (decisions 4.10); an envelope without a recipient is not recorded, the network
        // refuses it. Records and network ids of concurrent sends share their transactions.
        const recorded = yield* messaging.recordOutbound(config, { envelope, origin: "api" }).pipe(
          Effect.map(Option.some),
          Effect.catchTag("Unprocessable", () => Effect.succeed(Option.none()))
        )
        const outcome = yield* Effect.result(network.send(access, config.phone_number_id, body))
        if (outcome._tag === "Success") {
          const networkId = acceptedMessageId(outcome.success.value)
          if (Option.isSome(recorded) && networkId !== undefined) {
            // The message went out: its answer goes back even when the id cannot be stored.
            yield* messaging.assignNetworkId(config, recorded.value.message, networkId).pipe(
              Effect.catchCause((cause) => Effect.logError("A proxied send's network id could not be stored", cause))
            )
          }
          const { body: bytes, contentType, status } = outcome.success
          return { status, contentType, body: bytes } satisfies ProxyAnswer
        }
        const refused = outcome.failure
        if (Option.isSome(recorded)) {
          const error: Json = refused._tag === "NetworkRefused"
            ? { ...refused.error }
            : { code: 131016, title: "Service unavailable", message: refused.detail }
          yield* messaging.failOutbound(config.project_id, recorded.value.message.id, error).pipe(Effect.ignore)
        }
        if (refused._tag === "NetworkRefused") {
          return { status: refused.status, contentType: refused.contentType, body: refused.body } satisfies ProxyAnswer
        }
        if (refused.status !== undefined && refused.body !== undefined) {
          return { status: refused.status, contentType: refused.contentType ?? "", body: refused.body } satisfies ProxyAnswer
        }
        return unreachable(refused.reason)
      })

      const send = Effect.fn("MessagingProxy.send")(function*(
        projectId: string,
        phoneNumberId: string,
        body: Uint8Array,
        version?: string | undefined
      ) {
        const config = yield* number(projectId, phoneNumberId)
        if (Option.isNone(config)) return unknownObject(phoneNumberId)
        const access: NetworkAccess = { accessToken: config.value.access_token, version }
        const envelope = parseJson(body)
        // Not an envelope Parley can read: forwarded anyway, the network answers it.
        if (!isObject(envelope)) {
          return yield* rawAnswer(network.send(access, phoneNumberId, body)).pipe(
            Effect.catchTag("NetworkUnavailable", (e) => Effect.succeed(unreachable(e.reason)))
          )
        }
        if (str(envelope["status"]) === "read") {
          return yield* markRead(config.value, access, envelope, body).pipe(
            Effect.catchTag("NetworkUnavailable", (e) => Effect.succeed(unreachable(e.reason)))
          )
        }
        const to = str(envelope["to"])
        const lane = `${phoneNumberId}:${(to === undefined ? undefined : phoneDigits(to)) || str(envelope["recipient"]) || ""}`
        return yield* serialised(lane, sendMessage(config.value, access, envelope, body))
      })

      const ownNumber = (projectId: string, phoneNumberId: string) =>
        number(projectId, phoneNumberId).pipe(
          Effect.flatMap(Option.match({
            onNone: () => refuse(unknownObject(phoneNumberId)),
            onSome: Effect.succeed
          }))
        )

      const renderMessage = (selection: FieldSelection) => (m: Parameters<typeof toProxyMessage>[1]) =>
        selectFields(toProxyMessage(publicUrl, m), selection)
      const renderConversation = (selection: FieldSelection) => (c: Parameters<typeof toProxyConversation>[0]) =>
        selectFields(toProxyConversation(c), selection)

      const listMessages = (projectId: string, phoneNumberId: string, query: URLSearchParams, location: URL) =>
        answered(Effect.gen(function*() {
          const config = yield* ownNumber(projectId, phoneNumberId)
          const filter: MessageFilter = {
            msg_config_id: config.id,
            conversation_id: optional(query, "conversation_id"),
            direction: yield* oneOf<Direction>(query, "direction", ["inbound", "outbound"]),
            status: yield* oneOf<MessageStatus>(query, "status", ["pending", "sent", "delivered", "read", "failed"]),
            since: yield* dateTime(query, "since"),
            until: yield* dateTime(query, "until")
          }
          const window = yield* cursorWindow(query)
          const selection = yield* fieldsOf(query, MESSAGE_EXT_FIELDS)
          const slice = yield* messaging.listMessages(projectId, filter, window)
          return cursorBody(window, slice, renderMessage(selection), location)
        }))

      const getMessage = (projectId: string, phoneNumberId: string, id: string, query: URLSearchParams) =>
        answered(Effect.gen(function*() {
          yield* ownNumber(projectId, phoneNumberId)
          const selection = yield* fieldsOf(query, MESSAGE_EXT_FIELDS)
          const message = yield* messaging.getMessage(projectId, phoneNumberId, id).pipe(
            Effect.mapError(() => new Refusal({ answer: unknownObject(id) }))
          )
          return json(200, renderMessage(selection)(message))
        }))

      const listConversations = (projectId: string, phoneNumberId: string, query: URLSearchParams, location: URL) =>
        answered(Effect.gen(function*() {
          const config = yield* ownNumber(projectId, phoneNumberId)
          const phone = optional(query, "phone_number")
          const filter: ConversationFilter = {
            msg_config_id: config.id,
            status: yield* oneOf<ConversationStatus>(query, "status", ["active", "ended"]),
            assigned_user_id: optional(query, "assigned_user_id"),
            unassigned: yield* booleanParam(query, "unassigned"),
            last_active_since: yield* dateTime(query, "last_active_since"),
            last_active_until: yield* dateTime(query, "last_active_until"),
            phone_number: phone === undefined ? undefined : phoneDigits(phone)
          }
          const window = yield* cursorWindow(query)
          const selection = yield* fieldsOf(query, CONVERSATION_EXT_FIELDS)
          const slice = yield* messaging.listConversations(projectId, filter, window)
          return cursorBody(window, slice, renderConversation(selection), location)
        }))

      const getConversation = (projectId: string, phoneNumberId: string, id: string, query: URLSearchParams) =>
        answered(Effect.gen(function*() {
          yield* ownNumber(projectId, phoneNumberId)
          const selection = yield* fieldsOf(query, CONVERSATION_EXT_FIELDS)
          const conversation = yield* messaging.getConversation(projectId, id).pipe(
            Effect.mapError(() => new Refusal({ answer: unknownObject(id) }))
          )
          if (conversation.phone_number_id !== phoneNumberId) return yield* refuse(unknownObject(id))
          return json(200, renderConversation(selection)(conversation))
        }))

      const keptMedia = (projectId: string, id: string) => media.find(projectId, id)

      // download_url tokens: HMAC-signed (project, number, media, expiry), so any host process with the same
      // PARLEY_SECRET_KEY accepts them; without that key, a random key of this process.
      const configured = yield* FunctionSecretKey
      const tokenKey = configured !== undefined
        ? createHmac("sha256", Redacted.value(configured)).update("parley/proxy/media-download").digest()
        : randomBytes(32)
      const sign = (payload: string) => createHmac("sha256", tokenKey).update(payload).digest("base64url")
      const issueToken = (claims: { readonly p: string; readonly n: string; readonly m: string; readonly e: number }) => {
        const payload = Buffer.from(JSON.stringify(claims), "utf8").toString("base64url")
        return `${payload}.${sign(payload)}`
      }
      const readToken = (token: string) => {
        const [payload, mac] = token.split(".")
        if (payload === undefined || mac === undefined) return undefined
        const expected = Buffer.from(sign(payload))
        const given = Buffer.from(mac)
        if (expected.length !== given.length || !timingSafeEqual(expected, given)) return undefined
        try {
          const claims: unknown = JSON.parse(Buffer.from(payload, "base64url").toString("utf8"))
          if (!isObject(claims)) return undefined
          const { e, m, n, p } = claims
          return typeof p === "string" && typeof n === "string" && typeof m === "string" && typeof e === "number"
            ? { p, n, m, e }
            : undefined
        } catch {
          return undefined
        }
      }

      const orUnreachable = (effect: Effect.Effect<ProxyAnswer, NetworkUnavailable>) =>
        Effect.catchTag(effect, "NetworkUnavailable", (e) => Effect.succeed(unreachable(e.reason)))

      const mediaNumber = (projectId: string, phoneNumberId: string | undefined, mediaId: string) =>
        phoneNumberId === undefined
          ? refuse(invalidParameter(400, "phone_number_id is required"))
          : number(projectId, phoneNumberId).pipe(
            Effect.flatMap(Option.match({ onNone: () => refuse(unknownObject(mediaId)), onSome: Effect.succeed }))
          )

      const uploadMedia = (
        projectId: string,
        phoneNumberId: string,
        file: { readonly bytes: Uint8Array; readonly mimeType: string; readonly filename: string },
        version?: string | undefined
      ) =>
        answered(Effect.gen(function*() {
          const config = yield* ownNumber(projectId, phoneNumberId)
          const checked = checkMedia(file.mimeType, file.bytes)
          if (typeof checked !== "string") {
            return networkStyleError(400, 131053, "(#131053) Media upload error", { details: checked.details })
          }
          const answer = yield* orUnreachable(
            rawAnswer(network.uploadMedia({ accessToken: config.access_token, version }, phoneNumberId, file))
          )
          // Remembered so a send through another business account's number is refused (decisions 7.4).
          const uploaded = answer.status === 200 ? parseJson(answer.body) : undefined
          if (isObject(uploaded) && typeof uploaded["id"] === "string") {
            yield* media.recordUpload({
              network_media_id: uploaded["id"],
              project_id: projectId,
              msg_config_id: config.id,
              business_account_id: config.business_account_id,
              created_at: new Date(yield* Clock.currentTimeMillis).toISOString()
            })
          }
          return answer
        }))

      const mediaUrl = (
        projectId: string,
        mediaId: string,
        phoneNumberId: string | undefined,
        downloadBase: string,
        version?: string | undefined
      ) =>
        answered(Effect.gen(function*() {
          const config = yield* mediaNumber(projectId, phoneNumberId, mediaId)
          const access: NetworkAccess = { accessToken: config.access_token, version }
          const outcome = yield* Effect.result(network.getMedia(access, mediaId, { phoneNumberId: config.phone_number_id }))
          if (outcome._tag === "Failure") {
            return yield* orUnreachable(rawAnswer(Effect.fail(outcome.failure)))
          }
          const body = parseJson(outcome.success.body)
          const expires = (yield* Clock.currentTimeMillis) + MEDIA_DOWNLOAD_TTL_MS
          const token = issueToken({ p: projectId, n: config.phone_number_id, m: mediaId, e: expires })
          const info = outcome.success.value
          return json(200, {
            ...(isObject(body) ? body : {}),
            id: info.id,
            url: info.url,
            mime_type: info.mime_type,
            sha256: info.sha256,
            file_size: String(info.file_size),
            download_url: `${downloadBase}${token}`,
            download_url_expires_at: new Date(expires).toISOString()
          })
        }))

      const deleteMedia = (projectId: string, mediaId: string, phoneNumberId: string | undefined, version?: string | undefined) =>
        answered(Effect.gen(function*() {
          const config = yield* mediaNumber(projectId, phoneNumberId, mediaId)
          return yield* orUnreachable(rawAnswer(
            network.deleteMedia({ accessToken: config.access_token, version }, mediaId, { phoneNumberId: config.phone_number_id })
          ))
        }))

      const download = (token: string) =>
        answered(Effect.gen(function*() {
          const claims = readToken(token)
          const now = yield* Clock.currentTimeMillis
          if (claims === undefined || claims.e <= now) {
            return yield* refuse(networkStyleError(404, 100, "(#100) The download link is invalid or has expired", {
              details: "Ask GET /<media_id>?phone_number_id=<phone_number_id> for a new download_url"
            }))
          }
          const config = yield* mediaNumber(claims.p, claims.n, claims.m)
          const access: NetworkAccess = { accessToken: config.access_token }
          const info = yield* Effect.result(network.getMedia(access, claims.m, { phoneNumberId: config.phone_number_id }))
          if (info._tag === "Failure") return yield* orUnreachable(rawAnswer(Effect.fail(info.failure)))
          const bytes = yield* Effect.result(network.downloadMedia(access, info.success.value.url))
          if (bytes._tag === "Failure") return yield* orUnreachable(rawAnswer(Effect.fail(bytes.failure)))
          return { status: 200, contentType: info.success.value.mime_type, body: bytes.success.value } satisfies ProxyAnswer
        }))

      /** A business account of the project: the access token of one of its live numbers there. */
      const ownAccount = (projectId: string, businessAccountId: string) =>
        configs.listByBusinessAccount(businessAccountId).pipe(
          Effect.map((all) => all.find((c) => c.project_id === projectId && c.deleted_at === null)),
          Effect.flatMap((config) => config === undefined ? refuse(unknownObject(businessAccountId)) : Effect.succeed(config))
        )

      const forwarded = <A>(call: Effect.Effect<NetworkAnswer<A>, NetworkError>) => orUnreachable(rawAnswer(call))

      const listTemplates = (projectId: string, businessAccountId: string, query: URLSearchParams, version?: string | undefined) =>
        answered(Effect.gen(function*() {
          const config = yield* ownAccount(projectId, businessAccountId)
          const q = (name: string) => query.get(name) ?? undefined
          return yield* forwarded(network.listTemplates({ accessToken: config.access_token, version }, businessAccountId, {
            name: q("name"),
            status: q("status"),
            category: q("category"),
            language: q("language"),
            limit: q("limit"),
            before: q("before"),
            after: q("after"),
            fields: q("fields")
          }))
        }))

      const getTemplate = (projectId: string, businessAccountId: string, templateId: string, version?: string | undefined) =>
        answered(Effect.gen(function*() {
          const config = yield* ownAccount(projectId, businessAccountId)
          return yield* forwarded(network.getTemplate({ accessToken: config.access_token, version }, templateId))
        }))

      const saveTemplate = (
        projectId: string,
        businessAccountId: string,
        hsmId: string | undefined,
        body: Uint8Array,
        version?: string | undefined
      ) =>
        answered(Effect.gen(function*() {
          const config = yield* ownAccount(projectId, businessAccountId)
          const access: NetworkAccess = { accessToken: config.access_token, version }
          return hsmId === undefined
            ? yield* forwarded(network.createTemplate(access, businessAccountId, body))
            : yield* forwarded(network.editTemplate(access, hsmId, body))
        }))

      const deleteTemplate = (
        projectId: string,
        businessAccountId: string,
        target: { readonly name?: string | undefined; readonly hsmId?: string | undefined },
        version?: string | undefined
      ) =>
        answered(Effect.gen(function*() {
          const config = yield* ownAccount(projectId, businessAccountId)
          if (target.name === undefined && target.hsmId === undefined) {
            return yield* refuse(invalidParameter(400, "The parameter name or hsm_id is required."))
          }
          return yield* forwarded(network.deleteTemplate({ accessToken: config.access_token, version }, businessAccountId, target))
        }))

      const blockUsers = (
        projectId: string,
        phoneNumberId: string,
        method: "GET" | "POST" | "DELETE",
        query: URLSearchParams,
        body: Uint8Array,
        version?: string | undefined
      ) =>
        answered(Effect.gen(function*() {
          const config = yield* ownNumber(projectId, phoneNumberId)
          const access: NetworkAccess = { accessToken: config.access_token, version }
          if (method === "GET") {
            return yield* forwarded(network.listBlockedUsers(access, phoneNumberId, {
              limit: query.get("limit") ?? undefined,
              before: query.get("before") ?? undefined,
              after: query.get("after") ?? undefined
            }))
          }
          return yield* forwarded(
            method === "POST" ? network.blockUsers(access, phoneNumberId, body) : network.unblockUsers(access, phoneNumberId, body)
          )
        }))

      const username = (
        projectId: string,
        phoneNumberId: string,
        method: "GET" | "POST" | "DELETE" | "SUGGEST",
        body: Uint8Array,
        version?: string | undefined
      ) =>
        answered(Effect.gen(function*() {
          const config = yield* ownNumber(projectId, phoneNumberId)
          const access: NetworkAccess = { accessToken: config.access_token, version }
          switch (method) {
            case "GET":
              return yield* forwarded(network.getUsername(access, phoneNumberId))
            case "POST":
              return yield* forwarded(network.setUsername(access, phoneNumberId, body))
            case "DELETE":
              return yield* forwarded(network.deleteUsername(access, phoneNumberId))
            case "SUGGEST":
              return yield* forwarded(network.usernameSuggestions(access, phoneNumberId))
          }
        }))

      const flowMetadata = (projectId: string, flowId: string, body: Uint8Array, version?: string | undefined) =>
        answered(Effect.gen(function*() {
          const accounts = new Map<string, MessageConfigRecord>()
          let window: ListWindow = { mode: "cursor", limit: 100 }
          while (true) {
            const page: ListSlice<MessageConfigRecord> = yield* configs.list(projectId, {}, window)
            for (const c of page.items) if (!accounts.has(c.business_account_id)) accounts.set(c.business_account_id, c)
            const last = page.items[page.items.length - 1]
            if (!page.hasMore || last === undefined) break
            window = { mode: "cursor", limit: 100, after: createdCursorKeyOf(last) }
          }
          for (const config of accounts.values()) {
            const outcome = yield* Effect.result(network.updateFlowMetadata({ accessToken: config.access_token, version }, flowId, body))
            // "Unknown object" (100, subcode 33) means another account's flow: try the next one.
            if (outcome._tag === "Failure" && outcome.failure._tag === "NetworkRefused" && outcome.failure.code === 100 &&
              outcome.failure.error.error_subcode === 33) continue
            return yield* forwarded(outcome._tag === "Success" ? Effect.succeed(outcome.success) : Effect.fail(outcome.failure))
          }
          return unknownObject(flowId)
        }))

      const listContacts = (projectId: string, phoneNumberId: string, query: URLSearchParams, location: URL) =>
        answered(Effect.gen(function*() {
          const config = yield* ownNumber(projectId, phoneNumberId)
          const waId = optional(query, "wa_id")
          const customerId = optional(query, "customer_id")
          const hasCustomer = yield* booleanParam(query, "has_customer")
          const window = yield* cursorWindow(query)
          const excluded = (customerId !== undefined && config.customer_id !== customerId) ||
            (hasCustomer !== undefined && (config.customer_id !== null) !== hasCustomer)
          const slice = excluded
            ? { items: [], hasMore: false, total: 0 }
            : yield* messaging.listContacts(projectId, {
              msg_config_id: config.id,
              wa_id: waId === undefined ? undefined : phoneDigits(waId)
            }, window)
          return cursorBody(window, slice, toProxyContact, location)
        }))

      const getContact = (projectId: string, phoneNumberId: string, identifier: string) =>
        answered(Effect.gen(function*() {
          const config = yield* ownNumber(projectId, phoneNumberId)
          const contact = yield* messaging.getContact(projectId, identifier).pipe(
            Effect.mapError(() => new Refusal({ answer: unknownObject(identifier) }))
          )
          // Only contacts of this number: one with a conversation on it.
          const onNumber = contact.wa_id !== null
            ? (yield* messaging.listContacts(projectId, { msg_config_id: config.id, wa_id: contact.wa_id }, {
              mode: "cursor",
              limit: 1
            })).items.length > 0
            : Option.isSome(yield* conversations.findActive(config.id, contact.id))
          if (!onNumber) return yield* refuse(unknownObject(identifier))
          return json(200, toProxyContact(contact))
        }))

      const forward: MessagingProxy["Service"]["forward"] = (
        projectId,
        phoneNumberId,
        method,
        rest,
        query,
        body,
        contentType,
        version
      ) =>
        answered(Effect.gen(function*() {
          const config = yield* ownNumber(projectId, phoneNumberId)
          const path = [phoneNumberId, ...rest].join("/")
          // Dot segments would leave the number's edges once the network's URL is resolved.
          if (
            (method !== "GET" && method !== "POST" && method !== "DELETE") ||
            path.split("/").some((s) => s === "." || s === "..")
          ) {
            const reason = `Unsupported ${method.toLowerCase()} request. Object with ID '${phoneNumberId}' does not exist, ` +
              "cannot be loaded due to missing permissions, or does not support this operation"
            return networkStyleError(400, 100, `(#100) ${reason}`, { subcode: 33, details: reason })
          }
          // The number's stored token is the credential: a token in the query would override it.
          const params = new URLSearchParams(query)
          params.delete("access_token")
          return yield* forwarded(network.forward(
            { accessToken: config.access_token, version },
            { method, path, query: params, body, contentType }
          ))
        }))

      return MessagingProxy.of({
        forward,
        listContacts,
        getContact,
        flowMetadata,
        listTemplates,
        getTemplate,
        saveTemplate,
        deleteTemplate,
        blockUsers,
        username, number, send, listMessages, getMessage, listConversations, getConversation,
        keptMedia,
        uploadMedia,
        mediaUrl,
        deleteMedia,
        download
      })
    })
  )
}
