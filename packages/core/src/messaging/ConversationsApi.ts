/**
 * The Platform API reads of stored conversations and messages (decisions 4.8, 2.10, 3.5), in the proxy's
 * Conversation and Message shapes, and the conversation PATCH (`msg_conversation { status, metadata }`).
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { Authentication } from "../http/Middleware.ts"
import { NotFound, Unprocessable } from "../shared/ApiError.ts"
import { ListResponse, PagingQuery } from "../shared/Pagination.ts"
import { operation } from "../http/Operation.ts"

const data = <S extends Schema.Top>(schema: S) => Schema.Struct({ data: schema })
const IdParams = { id: Schema.String }
const Metadata = Schema.Record(Schema.String, Schema.Unknown)

/** The eight keys of a conversation's `ext` (spec "Conversation (proxy)"). */
export const MsgConversationExt = Schema.Struct({
  contact_name: Schema.NullOr(Schema.String),
  messages_count: Schema.Number,
  last_message_id: Schema.NullOr(Schema.String),
  last_message_type: Schema.NullOr(Schema.String),
  last_message_timestamp: Schema.NullOr(Schema.String),
  last_message_text: Schema.NullOr(Schema.String),
  last_inbound_at: Schema.NullOr(Schema.String),
  last_outbound_at: Schema.NullOr(Schema.String)
})

/** A conversation as `toProxyConversation` renders it. */
export const MsgConversation = Schema.Struct({
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
}).annotate({ identifier: "MsgConversation" })

/**
 * A message as `toProxyMessage` renders it: `id` (the network id), `timestamp`, `type`, the network's own
 * fields for its type (`from`, `text`, `image`, ...) kept as they are, and `ext` (every key of decisions 2.10).
 */
export const MsgMessage = Schema.StructWithRest(
  Schema.Struct({
    id: Schema.String,
    timestamp: Schema.String,
    type: Schema.String,
    ext: Schema.Record(Schema.String, Schema.Unknown)
  }),
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
