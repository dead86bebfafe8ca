/**
 * What the embedded inbox does (issue 20 §1, decisions 2.17): the conversations of an embed's scope with the
 * inbox's filters, a thread, replies, mark-read, ending a conversation and settling a handoff. It keeps no rules
 * of its own: sends go through `Outbound.send` (the 24-hour window, recording, statuses), mark-read through the
 * proxy's path, conversation and execution moves through `Messaging` and `Executions`, exactly as the Platform
 * API's do. What it adds is the scope: a conversation outside it is "not found".
 */
import { Clock, Context, Effect, Layer, Option } from "effect"
import { ConversationClosing } from "../executions/ConversationClosing.ts"
import { Executions } from "../executions/Executions.ts"
import type { ExecutionRecord } from "../executions/Execution.ts"
import { StoredExecutions } from "../executions/StoredExecutions.ts"
import type { Principal } from "../projects/Projects.ts"
import { type NotFound, notFound, Unavailable, Unprocessable, unprocessable } from "../shared/ApiError.ts"
import type { ListSlice, ListWindow } from "../shared/Pagination.ts"
import type { ConversationFilter, ConversationRecord, MessageRecord, SentBy, StoredMedia } from "../messaging/Message.ts"
import { Messaging } from "../messaging/Messaging.ts"
import { MessagingProxy } from "../messaging/Proxy.ts"
import { Templates } from "../messaging/templates/Templates.ts"
import { CUSTOMER_SERVICE_WINDOW_MS, Outbound } from "../messaging/Outbound.ts"
import type { MessageConfigRecord } from "../messaging/numbers/MessageConfig.ts"
import type { InboxConversation, InboxMessage, InboxReplyInput } from "./InboxApi.ts"
import type { EmbedSession } from "./InboxEmbeds.ts"

export interface InboxListOptions {
  readonly status: "active" | "ended" | "all"
  readonly search: string | undefined
  /** A config id of the scope, or undefined for all of them. */
  readonly msg_config_id: string | undefined
  readonly unread: boolean
  readonly handoff: boolean
  readonly limit: number
}

/** Conversations a list reads at most to find its matches (newest first, as stored): a bound on one request's work. */
export const LIST_SCAN_MAX = 2000
/** Messages a thread shows: the latest ones. */
export const THREAD_MESSAGES = 100
/** Step events read to find a handoff's `context_data`: it is written with the handoff, among the last few. */
const HANDOFF_EVENTS = 10
/** Longest reply text (the network's limit on a text body). */
export const REPLY_TEXT_MAX = 4096

const conversationNotFound = (id: string) => notFound("Conversation", id)
const networkDown = () => new Unavailable({ error: "The messaging network could not be reached; try again" })

const templateParameters = (body: string | null) => new Set((body ?? "").match(/\{\{[^}]+\}\}/g) ?? []).size

export const principalOf = (session: EmbedSession): Principal => ({
  project: session.project,
  apiKey: { id: session.embed.id, name: `inbox embed ${session.embed.name}` }
})

export const sentByOf = (session: EmbedSession): SentBy =>
  session.embed.assigned_user_id !== null
    ? { type: "user", id: session.embed.assigned_user_id, name: session.embed.assigned_user_name }
    : { type: "inbox_embed", id: session.embed.id, name: session.embed.name }

const toMessage = (m: MessageRecord): InboxMessage => {
  const sentBy = m.ext_data["sent_by"] as SentBy | undefined
  const failure = m.status === "failed"
    ? m.statuses.flatMap((s) => {
      const errors = (s as { readonly errors?: ReadonlyArray<{ readonly title?: string; readonly message?: string }> }).errors
      return errors?.map((e) => e.message ?? e.title ?? "failed") ?? []
    })[0] ?? "failed"
    : null
  return {
    id: m.id,
    direction: m.direction,
    type: m.type,
    status: m.status,
    created_at: m.created_at,
    // A media message's rendition names the file and its Platform URL; the inbox shows the file and its caption.
    text: m.media === null ? m.content : typeof m.message_type_data?.["caption"] === "string" ? m.message_type_data["caption"] : null,
    media: m.media === null ? null : { content_type: m.media.content_type, filename: m.media.filename, byte_size: m.media.byte_size },
    sent_by: sentBy ?? null,
    error: failure
  }
}

export class Inbox extends Context.Service<Inbox, {
  readonly numbers: (session: EmbedSession) => Effect.Effect<ReadonlyArray<MessageConfigRecord>>
  readonly list: (
    session: EmbedSession,
    query: InboxListOptions
  ) => Effect.Effect<{ readonly items: ReadonlyArray<InboxConversation>; readonly hasMore: boolean }, Unprocessable>
  readonly thread: (
    session: EmbedSession,
    id: string
  ) => Effect.Effect<{ readonly conversation: InboxConversation; readonly messages: ReadonlyArray<InboxMessage> }, NotFound>
  readonly reply: (session: EmbedSession, id: string, input: InboxReplyInput) => Effect.Effect<InboxMessage, NotFound | Unprocessable | Unavailable>
  /** Marks the contact's messages read up to the latest (through the network, as the proxy's mark-read). */
  readonly markRead: (session: EmbedSession, id: string) => Effect.Effect<boolean, NotFound | Unavailable>
  readonly end: (session: EmbedSession, id: string) => Effect.Effect<InboxConversation, NotFound | Unprocessable>
  readonly settleHandoff: (
    session: EmbedSession,
    id: string,
    how: "resume" | "end"
  ) => Effect.Effect<InboxConversation, NotFound | Unprocessable>
  readonly templates: (
    session: EmbedSession,
    id: string
  ) => Effect.Effect<ReadonlyArray<{ name: string; language: string; category: string; body: string | null; parameter_count: number }>, NotFound>
  /** The stored copy of a message's media, when the message is in scope. */
  readonly media: (session: EmbedSession, messageId: string) => Effect.Effect<StoredMedia, NotFound>
}>()("@parley/core/inbox/Inbox") {
  static readonly layer = Layer.effect(
    Inbox,
    Effect.gen(function*() {
      const runs = yield* StoredExecutions
      const mirror = yield* Templates
      const messaging = yield* Messaging
      const closing = yield* ConversationClosing
      const outbound = yield* Outbound
      const proxy = yield* MessagingProxy
      const executions = yield* Executions

      const inScope = (session: EmbedSession, c: { readonly project_id: string; readonly phone_number_id: string; readonly msg_config_id: string }, customerConfigs: ReadonlySet<string>) =>
        c.project_id === session.project.id &&
        (session.embed.scope_type === "project" ||
          (session.embed.scope_type === "phone_number" && c.phone_number_id === session.embed.scope_id) ||
          (session.embed.scope_type === "customer" && customerConfigs.has(c.msg_config_id)))

      const numbers = Effect.fn("Inbox.numbers")(function*(session: EmbedSession) {
        const found: Array<MessageConfigRecord> = []
        const filter = session.embed.scope_type === "customer" ? { customer_id: session.embed.scope_id! } : {}
        let page = 1
        while (true) {
          const slice = yield* messaging.listNumbers(session.project.id, filter, { mode: "page", page, perPage: 100 })
          found.push(...slice.items.filter((c) => c.deleted_at === null))
          if (page * 100 >= slice.total || slice.items.length === 0) break
          page++
        }
        return session.embed.scope_type === "phone_number" ? found.filter((c) => c.phone_number_id === session.embed.scope_id) : found
      })

      /** Config ids of a customer scope (every config the customer ever had: ended conversations stay visible). */
      const customerConfigIds = (session: EmbedSession) =>
        session.embed.scope_type === "customer"
          ? Effect.map(numbers(session), (list) => new Set(list.map((c) => c.id)))
          : Effect.succeed(new Set<string>())

      const handoffOf = (projectId: string, conversationId: string) =>
        runs.list(projectId, { msg_conversation_id: conversationId, status: "handoff" }, { mode: "cursor", limit: 1 }).pipe(
          Effect.map((slice) => Option.fromNullishOr(slice.items[0]))
        )

      const unreadCount = (projectId: string, conversationId: string) =>
        messaging.listMessages(projectId, { conversation_id: conversationId, direction: "inbound", status: "delivered" }, {
          mode: "page",
          page: 1,
          perPage: 1
        }).pipe(Effect.map((slice) => slice.total))

      /** A handoff node's `context_data` (2.3.12): carried by the step log's latest `execution_handoff`. */
      const contextDataOf = (execution: ExecutionRecord) =>
        runs.latestSteps(execution, HANDOFF_EVENTS).pipe(Effect.map((events) =>
          events.find((e) => e.event_type === "execution_handoff")?.payload["context_data"] ?? null
        ))

      const render = Effect.fn("Inbox.render")(function*(c: ConversationRecord, handoff?: Option.Option<ExecutionRecord>) {
        const nowMs = yield* Clock.currentTimeMillis
        const execution = handoff ?? (yield* handoffOf(c.project_id, c.id))
        const contextData = Option.isSome(execution) && execution.value.handoff?.source === "action_step"
          ? yield* contextDataOf(execution.value)
          : null
        return {
          id: c.id,
          status: c.status,
          contact_name: c.contact_name,
          phone_number: c.phone_number,
          username: c.username,
          msg_config_id: c.msg_config_id,
          phone_number_id: c.phone_number_id,
          last_active_at: c.last_active_at,
          last_message_text: c.last_message_text,
          last_inbound_at: c.last_inbound_at,
          window_open: c.last_inbound_at !== null && Date.parse(c.last_inbound_at) + CUSTOMER_SERVICE_WINDOW_MS > nowMs,
          unread_count: yield* unreadCount(c.project_id, c.id),
          handoff: Option.match(execution, {
            onNone: () => null,
            onSome: (e) => ({
              execution_id: e.id,
              workflow_id: e.workflow_id,
              reason: e.handoff?.reason ?? null,
              source: e.handoff?.source ?? "api",
              since: e.last_event_at,
              context_data: contextData
            })
          })
        } satisfies InboxConversation
      })

      const find = Effect.fn("Inbox.find")(function*(session: EmbedSession, id: string) {
        const found = yield* messaging.findConversation(session.project.id, id)
        if (Option.isNone(found) || !inScope(session, found.value, yield* customerConfigIds(session))) {
          return yield* conversationNotFound(id)
        }
        return found.value
      })

      const matchesSearch = (search: string | undefined) => (c: ConversationRecord) => {
        if (search === undefined) return true
        const needle = search.toLowerCase()
        const digits = search.replace(/\D/g, "")
        return [c.contact_name, c.username, c.last_message_text].some((v) => v?.toLowerCase().includes(needle) === true) ||
          (digits.length > 0 && c.phone_number?.includes(digits) === true)
      }

      const list = Effect.fn("Inbox.list")(function*(session: EmbedSession, query: InboxListOptions) {
        const projectId = session.project.id
        const customerConfigs = yield* customerConfigIds(session)
        if (query.msg_config_id !== undefined) {
          const config = yield* messaging.findNumber(projectId, query.msg_config_id)
          if (Option.isNone(config) || !inScope(session, { ...config.value, msg_config_id: config.value.id }, customerConfigs)) {
            return yield* unprocessable("msg_config_id is not a number of this inbox", [
              { path: "msg_config_id", message: "is not a number of this inbox" }
            ])
          }
        }
        const search = query.search?.trim() === "" ? undefined : query.search?.trim()
        const accepts = (c: ConversationRecord) =>
          inScope(session, c, customerConfigs) &&
          (query.status === "all" || c.status === query.status) &&
          (query.msg_config_id === undefined || c.msg_config_id === query.msg_config_id) &&
          matchesSearch(search)(c)

        const picked: Array<InboxConversation> = []
        const take = Effect.fnUntraced(function*(c: ConversationRecord, handoff?: Option.Option<ExecutionRecord>) {
          if (!accepts(c)) return
          const rendered = yield* render(c, handoff)
          if (query.unread && rendered.unread_count === 0) return
          picked.push(rendered)
        })

        if (query.handoff) {
          // Conversations in handoff are few: start from the executions in handoff.
          const inHandoff = yield* runs.list(projectId, { status: "handoff" }, { mode: "cursor", limit: 100 })
          const byConversation = new Map(
            inHandoff.items.flatMap((e) => (e.msg_conversation_id === null ? [] : [[e.msg_conversation_id, e] as const]))
          )
          const found = yield* messaging.findConversations(projectId, [...byConversation.keys()])
          const ordered = [...found].sort((a, b) => b.created_at.localeCompare(a.created_at) || b.id.localeCompare(a.id))
          for (const c of ordered) {
            if (picked.length > query.limit) break
            yield* take(c, Option.fromNullishOr(byConversation.get(c.id)))
          }
        } else {
          const filter: ConversationFilter = {
            ...(query.msg_config_id !== undefined ? { msg_config_id: query.msg_config_id } : {}),
            ...(query.status !== "all" ? { status: query.status } : {})
          }
          let window: ListWindow = { mode: "cursor", limit: 100 }
          let scanned = 0
          while (picked.length <= query.limit && scanned < LIST_SCAN_MAX) {
            const slice: ListSlice<ConversationRecord> = yield* messaging.listConversations(projectId, filter, window)
            for (const c of slice.items) {
              if (picked.length > query.limit) break
              yield* take(c)
            }
            scanned += slice.items.length
            const last: ConversationRecord | undefined = slice.items[slice.items.length - 1]
            if (!slice.hasMore || last === undefined) break
            window = { mode: "cursor", limit: 100, after: { sortKey: last.created_at, id: last.id } }
          }
        }
        return { items: picked.slice(0, query.limit), hasMore: picked.length > query.limit }
      })

      const thread = Effect.fn("Inbox.thread")(function*(session: EmbedSession, id: string) {
        const c = yield* find(session, id)
        const latest = yield* messaging.listMessages(session.project.id, { conversation_id: c.id }, { mode: "cursor", limit: THREAD_MESSAGES })
        return { conversation: yield* render(c), messages: [...latest.items].reverse().map(toMessage) }
      })

      const reply = Effect.fn("Inbox.reply")(function*(session: EmbedSession, id: string, input: InboxReplyInput) {
        const c = yield* find(session, id)
        const config = yield* messaging.numberOf(session.project.id, c.phone_number_id)
        if (Option.isNone(config)) return yield* unprocessable("The conversation's number is no longer connected")
        const recipient = c.phone_number !== null ? { to: c.phone_number } : { recipient: c.business_scoped_user_id }
        let envelope: Record<string, unknown>
        if (input.template !== undefined) {
          const parameters = input.template.parameters ?? []
          envelope = {
            messaging_product: "whatsapp",
            ...recipient,
            type: "template",
            template: {
              name: input.template.name,
              language: { code: input.template.language },
              ...(parameters.length > 0
                ? { components: [{ type: "body", parameters: parameters.map((text) => ({ type: "text", text })) }] }
                : {})
            }
          }
        } else {
          const text = input.text?.trim() ?? ""
          if (text.length === 0 || text.length > REPLY_TEXT_MAX) {
            return yield* unprocessable(`text must be 1-${REPLY_TEXT_MAX} characters`, [
              { path: "text", message: `must be 1-${REPLY_TEXT_MAX} characters` }
            ])
          }
          envelope = { messaging_product: "whatsapp", recipient_type: "individual", ...recipient, type: "text", text: { body: text } }
        }
        const outcome = yield* outbound.send(config.value, envelope, { origin: "api", sentBy: sentByOf(session) })
        switch (outcome._tag) {
          case "Accepted":
            if (Option.isSome(outcome.message)) return toMessage(outcome.message.value)
            return yield* unprocessable("The network accepted the message without a recipient")
          case "Refused":
            return yield* unprocessable(outcome.error.error_user_msg ?? outcome.error.message)
          case "OutsideWindow":
            return yield* unprocessable("Only template messages can be sent outside the 24-hour window", [
              { path: "text", message: "outside the 24-hour window: send a template" }
            ])
          case "AccountMismatch":
            return yield* unprocessable(`Media ${outcome.mediaId} was uploaded through another business account`)
          case "Withheld":
            return yield* new Unprocessable({ error: outcome.withheld.message, code: outcome.withheld.reason })
          case "Unavailable":
            return yield* networkDown()
        }
      })

      const markRead = Effect.fn("Inbox.markRead")(function*(session: EmbedSession, id: string) {
        const c = yield* find(session, id)
        const unread = yield* messaging.listMessages(session.project.id, { conversation_id: c.id, direction: "inbound", status: "delivered" }, {
          mode: "cursor",
          limit: 1
        })
        const latest = unread.items[0]
        if (latest === undefined || latest.network_id === null) return false
        const envelope = { messaging_product: "whatsapp", status: "read", message_id: latest.network_id }
        const answer = yield* proxy.send(session.project.id, c.phone_number_id, new TextEncoder().encode(JSON.stringify(envelope)))
        if (answer.status >= 500) return yield* networkDown()
        return answer.status >= 200 && answer.status < 300
      })

      const end = Effect.fn("Inbox.end")(function*(session: EmbedSession, id: string) {
        yield* find(session, id)
        return yield* render(yield* closing.update(session.project.id, id, { status: "ended" }).pipe(
          Effect.catchTag("NotFound", () => Effect.fail(conversationNotFound(id)))
        ))
      })

      const settleHandoff = Effect.fn("Inbox.settleHandoff")(function*(session: EmbedSession, id: string, how: "resume" | "end") {
        const c = yield* find(session, id)
        const execution = yield* handoffOf(session.project.id, c.id)
        if (Option.isNone(execution)) return yield* unprocessable("The conversation is not in handoff")
        const principal = principalOf(session)
        const gone = () => Effect.fail(unprocessable("The conversation is not in handoff"))
        if (how === "resume") {
          yield* executions.resume(principal, execution.value.id, {}).pipe(
            Effect.catchTag("Conflict", (e) => Effect.fail(unprocessable(e.error))),
            Effect.catchTag("NotFound", gone)
          )
        } else {
          yield* executions.move(principal, execution.value.id, "ended").pipe(Effect.catchTag("NotFound", gone))
        }
        return yield* render(yield* find(session, id))
      })

      const templates = Effect.fn("Inbox.templates")(function*(session: EmbedSession, id: string) {
        const c = yield* find(session, id)
        const config = yield* messaging.findNumber(session.project.id, c.msg_config_id)
        if (Option.isNone(config)) return []
        // The Platform API's read: the account is synced from the network first, so new approvals show.
        const slice = yield* mirror.list(principalOf(session), {
          business_account_id: config.value.business_account_id,
          status: "approved"
        }, { mode: "cursor", limit: 100 })
        return slice.items.map((t) => {
          const body = t.components.find((part) => String(part["type"]).toUpperCase() === "BODY")
          const text = typeof body?.["text"] === "string" ? body["text"] : null
          return { name: t.name, language: t.language, category: t.category, body: text, parameter_count: templateParameters(text) }
        })
      })

      const media = Effect.fn("Inbox.media")(function*(session: EmbedSession, messageId: string) {
        const message = yield* messaging.findMessage(session.project.id, messageId)
        if (Option.isNone(message) || message.value.media === null) return yield* notFound("Media", messageId)
        yield* find(session, message.value.conversation_id).pipe(Effect.catchTag("NotFound", () => Effect.fail(notFound("Media", messageId))))
        const stored = yield* messaging.findMedia(session.project.id, message.value.media.id)
        if (Option.isNone(stored)) return yield* notFound("Media", messageId)
        return stored.value
      })

      return Inbox.of({ numbers, list, thread, reply, markRead, end, settleHandoff, templates, media })
    })
  )
}
