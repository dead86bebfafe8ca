/** `msg_messages`: stored messages (Platform API) and sends through the messaging proxy (decisions 4.10). */
import { Effect, Predicate } from "effect"
import { MsgConversationsApi } from "../../messaging/ConversationsApi.ts"
import { MessagingProxyApi } from "../../messaging/ProxyApi.ts"
import { type Action, endpoint, errorOf, exchange, type Tool, ToolFailure } from "../Action.ts"
import { SEND_REQUIRED, sendBodyProperties } from "./SendBody.ts"

/** The proxy's paths carry the network's version; the tools always speak the current one. */
const version = { version: "v24.0" }

/** The network's refusal of a free-form send outside the 24-hour window. */
const WINDOW_CLOSED = 131047

/** What a template send keeps of the refused message: the number and the recipient. */
const RECIPIENT = ["phone_number_id", "messaging_product", "recipient_type", "to", "recipient"]

const isWindowClosed = (body: unknown) =>
  Predicate.hasProperty(body, "error") && Predicate.hasProperty(body.error, "code") && body.error.code === WINDOW_CLOSED

const plainSend = endpoint("send", MessagingProxyApi.endpoints.send, {
  fixed: version,
  description: "Send a message from `phone_number_id`: the rest of params is the network's body (`messaging_product`, " +
    "`to`, `type` and the type's object: text, template, image/audio/video/document, interactive). Outside the " +
    "24-hour window only a template is accepted; with `allow_start_with_template` true and a `template` object, " +
    "a refused non-template send sends that template instead (`started_with_template` in the answer)"
})

/**
 * `send`, which may open a closed window: when the proxy refuses a non-template send with 131047 and the caller
 * allowed it, the same recipient gets the `template` object given beside the message.
 */
const send: Action = {
  ...plainSend,
  params: {
    ...plainSend.params,
    properties: {
      ...plainSend.params.properties,
      // The whole body the network takes, not only the path's number (the contract's body schema is "anything").
      ...sendBodyProperties,
      allow_start_with_template: {
        type: "boolean",
        description: "When the window is closed, send `template` (the network's template object) instead"
      },
      template: {
        ...(sendBodyProperties["template"] as object),
        description: "With `type: template`, the template sent; with `allow_start_with_template`, the one sent when the " +
          "window is closed"
      }
    },
    required: [...(plainSend.params.required ?? []), ...SEND_REQUIRED]
  },
  run: (params) =>
    Effect.gen(function*() {
      const { allow_start_with_template: allowed, template, ...message } = params
      if (allowed !== undefined && !Predicate.isBoolean(allowed)) {
        return yield* new ToolFailure({ error: "allow_start_with_template must be a boolean" })
      }
      const isTemplate = message["type"] === "template"
      // The `template` object rides in the body only when it is what is sent.
      const first = yield* exchange(MessagingProxyApi.endpoints.send, isTemplate ? { ...message, template } : message, version)
      if (first.status < 400) return first.body
      if (allowed !== true || isTemplate || !isWindowClosed(first.body)) {
        return yield* new ToolFailure({ error: errorOf(first.status, first.body) })
      }
      if (!Predicate.isObject(template)) {
        return yield* new ToolFailure({ error: "template is required to start a closed window (allow_start_with_template)" })
      }
      const envelope = Object.fromEntries(Object.entries(message).filter(([key]) => RECIPIENT.includes(key)))
      const started = yield* exchange(MessagingProxyApi.endpoints.send, { ...envelope, type: "template", template }, version)
      if (started.status >= 400) return yield* new ToolFailure({ error: errorOf(started.status, started.body) })
      return { ...(Predicate.isObject(started.body) ? started.body : {}), started_with_template: true }
    })
}

export const MsgMessages: Tool = {
  name: "msg_messages",
  description: "Messages of the project's numbers: list and read stored ones, send (text, template, media, " +
    "interactive, in the network's request shape), mark one read.",
  actions: [
    endpoint("list", MsgConversationsApi.endpoints.listMessages),
    endpoint("get", MessagingProxyApi.endpoints.getMessage, { fixed: version }),
    send,
    endpoint("mark_read", MessagingProxyApi.endpoints.send, {
      fixed: version,
      description: "Mark an inbound message read: `phone_number_id`, `messaging_product`, `status` \"read\", " +
        "`message_id`, optional `typing_indicator`"
    })
  ]
}
