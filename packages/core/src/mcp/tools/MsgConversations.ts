/** `msg_conversations`: stored conversations (decisions 4.8). */
import { MsgConversationsApi } from "../../messaging/ConversationsApi.ts"
import { endpoint, type Tool } from "../Action.ts"

export const MsgConversations: Tool = {
  name: "msg_conversations",
  description: "Conversations with contacts on the project's numbers.",
  actions: [
    endpoint("list", MsgConversationsApi.endpoints.list),
    endpoint("get", MsgConversationsApi.endpoints.get),
    endpoint("set_status", MsgConversationsApi.endpoints.update, {
      description: "Set a conversation's status (`msg_conversation.status`: active or ended) or its metadata"
    })
  ]
}
