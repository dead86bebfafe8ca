/**
 * The Platform API reads of stored conversations and messages (decisions 4.8, 2.10, 3.5), in the proxy's
 * Conversation and Message shapes, and the conversation PATCH (`msg_conversation { status, metadata }`).
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { Authentication } from "../http/Middleware.ts"
import { NotFound, Unprocessable } from "../shared/ApiError.ts"
import { described } from "../shared/Described.ts"
import { ListResponse, PagingQuery } from "../shared/Pagination.ts"
import { operation } from "../http/Operation.ts"

const data = <S extends Schema.Top>(schema: S) => Schema.Struct({ data: schema })
const IdParams = { id: Schema.String }
const Metadata = Schema.Record(Schema.String, Schema.Unknown)

/** The eight keys of a conversation's `ext` (spec "Conversation (proxy)"). */
export const MsgConversationExt = Schema.Struct({
  contact_name: Schema.NullOr(Schema.String),
  messages_count: Schema.Int,
  last_message_id: Schema.NullOr(Schema.String),
  last_message_type: Schema.NullOr(Schema.String),
  last_message_timestamp: Schema.NullOr(Schema.String),
  last_message_text: Schema.NullOr(Schema.String),
  last_inbound_at: Schema.NullOr(Schema.String),
  last_outbound_at: Schema.NullOr(Schema.String)
})

/** The spec's words for a conversation's fields ("Conversation (proxy)"). */
const CONVERSATION_FIELDS = {
  id: "The conversation's id (uuid)",
  phone_number: "The contact's number, normalized digits; null when only a business-scoped identity is known",
  status: "`active`, or `ended` (a new message then opens a new conversation)",
  last_active_at: "When a message last went either way (ISO 8601)",
  created_at: "When it opened (ISO 8601)",
  updated_at: "When it last changed (ISO 8601)",
  msg_config_id: "The connected number's configuration",
  phone_number_id: "The network's id of the number",
  metadata: "Your own data about the conversation (an object), or null",
  business_scoped_user_id: "The contact's business-scoped identity, when the network gives one",
  parent_business_scoped_user_id: "The parent business-scoped identity, when there is one",
  username: "The contact's username, when known",
  assigned_user_id: "The inbox user it is assigned to, if any",
  ext: "The service's own: contact name, message count, the last message and the last inbound and outbound times"
} as const

/** A conversation as `toProxyConversation` renders it. */
export const MsgConversation = Schema.Struct(described({
  id: Schema.String,
  phone_number: Schema.NullOr(Schema.String),
  status: Schema.Literals(["active", "ended"]),
  last_active_at: Schema.String,
  created_at: Schema.String,
  updated_at: Schema.String,
  msg_config_id: Schema.String,
  phone_number_id: Schema.String,
  metadata: Schema.NullOr(Metadata),
  business_scoped_user_id: Schema.NullOr(Schema.String),
  parent_business_scoped_user_id: Schema.NullOr(Schema.String),
  username: Schema.NullOr(Schema.String),
  assigned_user_id: Schema.NullOr(Schema.String),
  ext: MsgConversationExt
}, CONVERSATION_FIELDS)).annotate({ identifier: "MsgConversation" })

/**
 * A message as `toProxyMessage` renders it: `id` (the network id), `timestamp`, `type`, the network's own
 * fields for its type (`from`, `text`, `image`, ...) kept as they are, and `ext` (every key of decisions 2.10).
 */
export const MsgMessage = Schema.StructWithRest(
  Schema.Struct(described({
    id: Schema.String,
    timestamp: Schema.String,
    type: Schema.String,
    ext: Schema.Record(Schema.String, Schema.Unknown)
  }, {
    id: "The network's message id",
    timestamp: "When it was sent or received, epoch seconds",
    type: "`text`, `template`, `interactive`, `reaction` or a media type; the network's object of that name beside it",
    ext: "The service's own: `direction`, `status`, `processing_status`, `phone_number`, `has_media`, " +
      "`msg_conversation_id`, `contact_name`, `content`, `media_url`, `transcript`, `statuses[].errors[]`"
  })),
  [Schema.Record(Schema.String, Schema.Unknown)]
).annotate({ identifier: "MsgMessage" })
export type MsgMessage = typeof MsgMessage.Type

export const MsgConversationUpdateInput = Schema.Struct({
  status: Schema.optionalKey(Schema.Literals(["active", "ended"])),
  metadata: Schema.optionalKey(Schema.NullOr(Metadata))
})

export class MsgConversationsApi extends HttpApiGroup.make("msgConversations")
  .add(
    HttpApiEndpoint.get("list", "/msg/conversations", {
      query: {
        phone_number_id: Schema.optionalKey(Schema.String),
        phone_number: Schema.optionalKey(Schema.String),
        status: Schema.optionalKey(Schema.Literals(["active", "ended"])),
        ...PagingQuery
      },
      success: ListResponse(MsgConversation)
    }).annotateMerge(operation(
      "List conversations",
      "Conversations, newest activity first, filtered by number, contact phone and status."
    )),
    HttpApiEndpoint.get("get", "/msg/conversations/:id", { params: IdParams, success: data(MsgConversation), error: NotFound }).annotateMerge(operation(
      "Get a conversation",
      "One conversation with its contact and last activity."
    )),
    HttpApiEndpoint.patch("update", "/msg/conversations/:id", {
      params: IdParams,
      payload: Schema.Struct({ msg_conversation: MsgConversationUpdateInput }),
      success: data(MsgConversation),
      error: [NotFound, Unprocessable]
    }).annotateMerge(operation(
      "Update a conversation (status, metadata)",
      "Sets a conversation's `status` (`active`, `ended`) or replaces its `metadata`."
    )),
    HttpApiEndpoint.get("listMessages", "/msg/messages", {
      query: {
        phone_number_id: Schema.optionalKey(Schema.String),
        conversation_id: Schema.optionalKey(Schema.String),
        phone_number: Schema.optionalKey(Schema.String),
        direction: Schema.optionalKey(Schema.Literals(["inbound", "outbound"])),
        status: Schema.optionalKey(Schema.Literals(["pending", "sent", "delivered", "read", "failed"])),
        message_type: Schema.optionalKey(Schema.String),
        has_media: Schema.optionalKey(Schema.Literals(["true", "false"])),
        ...PagingQuery
      },
      success: ListResponse(MsgMessage)
    }).annotateMerge(operation(
      "List messages",
      "Stored messages, filtered by number, conversation, contact, direction, status, type and media; " +
        "cursor paging."
    ))
  )
  .middleware(Authentication)
  .prefix("/platform/v1")
  .annotateMerge(OpenApi.annotations({
    title: "Conversations and messages",
    description: "The stored conversations and messages of the project's numbers"
  }))
{}
