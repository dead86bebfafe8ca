/** `msg_conversations`: stored conversations (decisions 4.8). */
import { endpoint, type Tool } from "../Action.ts"

export const MsgConversations: Tool = {
  name: "msg_conversations",
  description: "Conversations with contacts on the project's numbers.",
  actions: [
    endpoint("list", "msgConversations.list"),
    endpoint("get", "msgConversations.get"),
    endpoint("set_status", "msgConversations.update", {
      description: "Set a conversation's status (`msg_conversation.status`: active or ended) or its metadata"
    })
  ]
}
