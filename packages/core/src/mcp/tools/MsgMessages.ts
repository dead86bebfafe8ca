/** `msg_messages`: stored messages (Platform API) and sends through the messaging proxy (decisions 4.10). */
import { endpoint, type Tool } from "../Action.ts"

/** The proxy's paths carry the network's version; the tools always speak the current one. */
const version = { version: "v24.0" }

export const MsgMessages: Tool = {
  name: "msg_messages",
  description: "Messages of the project's numbers: list and read stored ones, send (text, template, media, " +
    "interactive, in the network's request shape), mark one read.",
  actions: [
    endpoint("list", "msgConversations.listMessages"),
    endpoint("get", "proxy.getMessage", { fixed: version }),
    endpoint("send", "proxy.send", {
      fixed: version,
      description: "Send a message from `phone_number_id`: the rest of params is the network's body " +
        "(`messaging_product`, `to`, `type` and the type's object); outside the 24-hour window only a template is accepted",
    }),
    endpoint("mark_read", "proxy.send", {
      fixed: version,
      description: "Mark an inbound message read: `phone_number_id`, `messaging_product`, `status` \"read\", " +
        "`message_id`, optional `typing_indicator`"
    })
  ]
}
