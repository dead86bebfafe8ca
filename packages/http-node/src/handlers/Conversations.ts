/**
 * Platform API reads of conversations and messages (decode → Messaging → encode), and the conversation PATCH
 * (through `ConversationClosing`: closing one ends its handoff run).
 */
import {
  ConversationClosing,
  createdCursorKeyOf,
  CurrentPrincipal,
  type ListSlice,
  type ListWindow,
  Messaging,
  type MsgMessage,
  ParleyApi,
  phoneDigits,
  PublicUrl,
  resolveWindow,
  toListBody,
  toProxyConversation,
  toProxyMessage
} from "@parley/core"
import { Effect, Option } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { locationOf } from "./Lists.ts"

const emptySlice: ListSlice<never> = { items: [], hasMore: false, total: 0 }

/** A blank filter value is no filter; a phone number keeps its digits only (`+`, spaces, dashes tolerated). */
const phone = (value: string | undefined) => {
  if (value === undefined) return undefined
  const digits = phoneDigits(value)
  return digits.length === 0 ? undefined : digits
}

export const MsgConversationsHandlers = HttpApiBuilder.group(
  ParleyApi,
  "msgConversations",
  Effect.fn(function*(handlers) {
    const messaging = yield* Messaging
    const closing = yield* ConversationClosing
    const publicUrl = yield* PublicUrl

    /**
     * A `phone_number_id` filter narrows to the project's live config of that number; a number the project has
     * not connected matches nothing (an empty list, not an error, as for any other filter value).
     */
    const listFor = <A>(
      projectId: string,
      phoneNumberId: string | undefined,
      window: ListWindow,
      list: (msgConfigId: string | undefined) => Effect.Effect<ListSlice<A>>
    ) =>
      Effect.gen(function*() {
        if (phoneNumberId === undefined) return yield* list(undefined)
        const config = yield* messaging.numberOf(projectId, phoneNumberId)
        return Option.isSome(config) ? yield* list(config.value.id) : (emptySlice as ListSlice<A>)
      }).pipe(Effect.map((slice) => ({ slice, window })))

    return handlers
      .handle("list", ({ query, request }) =>
        Effect.gen(function*() {
          const window = yield* resolveWindow(query)
          const principal = yield* CurrentPrincipal
          const { slice } = yield* listFor(principal.project.id, query.phone_number_id, window, (msgConfigId) =>
            messaging.listConversations(principal.project.id, {
              msg_config_id: msgConfigId,
              status: query.status,
              phone_number: phone(query.phone_number)
            }, window))
          return toListBody(window, slice, createdCursorKeyOf, toProxyConversation, yield* locationOf(request))
        }))
      .handle("get", ({ params }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          return { data: toProxyConversation(yield* messaging.getConversation(principal.project.id, params.id)) }
        }))
      .handle("update", ({ params, payload }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const updated = yield* closing.update(principal.project.id, params.id, payload.msg_conversation)
          return { data: toProxyConversation(updated) }
        }))
      .handle("listMessages", ({ query, request }) =>
        Effect.gen(function*() {
          const window = yield* resolveWindow(query)
          const principal = yield* CurrentPrincipal
          const { slice } = yield* listFor(principal.project.id, query.phone_number_id, window, (msgConfigId) =>
            messaging.listMessages(principal.project.id, {
              msg_config_id: msgConfigId,
              conversation_id: query.conversation_id,
              phone_number: phone(query.phone_number),
              direction: query.direction,
              status: query.status,
              type: query.message_type,
              has_media: query.has_media === undefined ? undefined : query.has_media === "true"
            }, window))
          return toListBody(window, slice, createdCursorKeyOf, (m) => toProxyMessage(publicUrl, m) as MsgMessage, yield* locationOf(request))
        }))
  })
)
