/**
 * `diagnostic_investigations`: answers assembled from stored messages and conversations, each from the endpoints
 * a person would read by hand (decisions 4.12, "MCP tool server"):
 * - `message_delivery`: one message's record, its status history (`ext.statuses`) and the network's errors;
 * - `api_send_trace`: the latest sends to one contact from a number, each with its origin, status and errors;
 * - `conversation_history`: a conversation, its latest messages and the workflow executions it started.
 */
import { Effect, Predicate, Schema } from "effect"
import { ExecutionsApi } from "../../executions/ExecutionsApi.ts"
import { MsgConversationsApi } from "../../messaging/ConversationsApi.ts"
import { MessagingProxyApi } from "../../messaging/ProxyApi.ts"
import { action, callEndpoint, type Tool } from "../Action.ts"

/** Network errors reported on a message: its own `errors` and those inside its status reports. */
const errorsOf = (message: unknown): ReadonlyArray<unknown> => {
  const own = Predicate.hasProperty(message, "errors") && Array.isArray(message.errors) ? message.errors : []
  const statuses = statusesOf(message)
  return [...own, ...statuses.flatMap((s) => Predicate.hasProperty(s, "errors") && Array.isArray(s.errors) ? s.errors : [])]
}

const statusesOf = (message: unknown): ReadonlyArray<unknown> =>
  Predicate.hasProperty(message, "ext") && Predicate.hasProperty(message.ext, "statuses") && Array.isArray(message.ext.statuses)
    ? message.ext.statuses
    : []

const Limit = Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 100 })))

export const Diagnostics: Tool = {
  name: "diagnostic_investigations",
  description: "Investigations over stored messages and conversations: why a message was (not) delivered, what " +
    "happened to recent sends to a contact, a conversation's history.",
  actions: [
    action(
      "message_delivery",
      "A message's record, its status history and the network's errors, by the network's message id (or Parley's)",
      Schema.Struct({ phone_number_id: Schema.String, message_id: Schema.String }),
      (params) =>
        Effect.gen(function*() {
          const message = yield* callEndpoint(MessagingProxyApi.endpoints.getMessage, params, { version: "v24.0" })
          const ext = Predicate.hasProperty(message, "ext") ? message.ext : undefined
          return {
            message,
            status: Predicate.hasProperty(ext, "status") ? ext.status : null,
            status_history: statusesOf(message),
            errors: errorsOf(message)
          }
        })
    ),
    action(
      "api_send_trace",
      "The latest outbound messages from `phone_number_id` to `phone_number` (newest first, `limit` 1-100, " +
        "default 20): origin (api, workflow, broadcast...), status, status history and errors of each",
      Schema.Struct({ phone_number_id: Schema.String, phone_number: Schema.String, limit: Limit }),
      ({ limit, phone_number, phone_number_id }) =>
        Effect.gen(function*() {
          const messages = yield* callEndpoint(MsgConversationsApi.endpoints.listMessages, {
            phone_number_id,
            phone_number,
            direction: "outbound",
            limit: limit ?? 20
          })
          return (Array.isArray(messages) ? messages : []).map((message) => {
            const ext = Predicate.hasProperty(message, "ext") ? message.ext : undefined
            return {
              id: Predicate.hasProperty(message, "id") ? message.id : null,
              type: Predicate.hasProperty(message, "type") ? message.type : null,
              timestamp: Predicate.hasProperty(message, "timestamp") ? message.timestamp : null,
              origin: Predicate.hasProperty(ext, "origin") ? ext.origin : null,
              status: Predicate.hasProperty(ext, "status") ? ext.status : null,
              status_history: statusesOf(message),
              errors: errorsOf(message)
            }
          })
        })
    ),
    action(
      "conversation_history",
      "A conversation, its latest messages (newest first, `limit` 1-100, default 20) and the workflow executions it started",
      Schema.Struct({ conversation_id: Schema.String, limit: Limit }),
      ({ conversation_id, limit }) =>
        Effect.gen(function*() {
          const conversation = yield* callEndpoint(MsgConversationsApi.endpoints.get, { id: conversation_id })
          const messages = yield* callEndpoint(MsgConversationsApi.endpoints.listMessages, { conversation_id, limit: limit ?? 20 })
          const executions = yield* callEndpoint(ExecutionsApi.endpoints.listByConversation, { id: conversation_id })
          return { conversation, messages, executions }
        })
    )
  ]
}
