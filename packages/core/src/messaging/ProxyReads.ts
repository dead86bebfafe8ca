/**
 * The proxy's reads of what Parley stored (decisions 1.3, 4.10): messages,
 * conversations and contacts of one number, with the spec's filters, cursor
 * paging and `fields` selection, in the network's error shape when refused.
 */
import { Effect, Option } from "effect"
import { ConversationsRepo } from "./MessagingRepo.ts"
import { PublicUrl } from "../shared/PublicUrl.ts"
import { type CursorKey, decodeCursor, encodeCursor, type ListSlice, type ListWindow } from "../shared/Pagination.ts"
import { dateTimeRefusal, toIso } from "../shared/Time.ts"
import {
  type ConversationFilter,
  type ConversationStatus,
  createdCursorKeyOf,
  type Direction,
  type MessageFilter,
  type MessageStatus,
  toProxyContact,
  toProxyConversation,
  toProxyMessage
} from "./Message.ts"
import { Messaging } from "./Messaging.ts"
import { phoneDigits } from "./numbers/MessageConfig.ts"
import { answered, invalidParameter, json, ownNumberOf, type ProxyAnswer, Refusal, refuse, unknownObject } from "./ProxyAnswers.ts"
import { CONVERSATION_EXT_FIELDS, type FieldSelection, MESSAGE_EXT_FIELDS, parseFields, selectFields } from "./ProxyFields.ts"

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
  const iso = /^\d{4}-\d{2}-\d{2}T/.test(v) ? toIso(v) : undefined
  return iso === undefined
    ? refuse(invalidParameter(400, dateTimeRefusal(name, v) ?? `${name} must be an ISO 8601 date-time`))
    : Effect.succeed(iso)
}

const booleanParam = (query: URLSearchParams, name: string) => {
  const v = optional(query, name)
  if (v === undefined) return Effect.succeed(undefined)
  if (v === "true") return Effect.succeed(true)
  if (v === "false") return Effect.succeed(false)
  return refuse(invalidParameter(400, `${name} must be true or false`))
}

/** `limit` 1-100 (default 20; outside: 400 code 100, the network's invalid parameter, decisions 7.3), `before`/`after` cursors (400 when undecodable), decisions 1.3. */
const cursorWindow = (query: URLSearchParams) =>
  Effect.gen(function*() {
    const raw = optional(query, "limit")
    const limit = raw === undefined ? 20 : /^\d+$/.test(raw) ? Number(raw) : Number.NaN
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > 100) {
      return yield* refuse(invalidParameter(400, "limit must be between 1 and 100"))
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

export interface ProxyReads {
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
  /**
   * `GET /<phone_number_id>/contacts`: contacts with a conversation on the number; `wa_id`, and `customer_id` /
   * `has_customer` matched against the number's customer (contacts belong to a customer through the number).
   */
  readonly listContacts: (projectId: string, phoneNumberId: string, query: URLSearchParams, location: URL) => Effect.Effect<ProxyAnswer>
  /** `GET /<phone_number_id>/contacts/<wa_id>` (also a business-scoped id or Parley's contact id). */
  readonly getContact: (projectId: string, phoneNumberId: string, identifier: string) => Effect.Effect<ProxyAnswer>
}

export const makeProxyReads = Effect.gen(function*() {
  const messaging = yield* Messaging
  const conversations = yield* ConversationsRepo
  const publicUrl = yield* PublicUrl
  const ownNumber = ownNumberOf(messaging.numberOf)

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
  return { listMessages, getMessage, listConversations, getConversation, listContacts, getContact } satisfies ProxyReads
})
