/**
 * The embedded inbox's own data API (`/inbox/v1`), which the page at `embed_url` calls with its token in
 * `X-Inbox-Token`. Every answer is limited to the embed's scope; the rules behind it are the Platform API's
 * (`Inbox` calls the same services).
 */
import { Context, Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiMiddleware, HttpApiSchema, HttpApiSecurity, OpenApi } from "effect/http-api"
import { operation } from "../http/Operation.ts"
import { NotFound, Unauthorized, Unavailable, Unprocessable } from "../shared/ApiError.ts"
import { wholeNumberQuery } from "../shared/Pagination.ts"
import { EMBED_LANGUAGES, EMBED_MODES, EMBED_SCOPE_TYPES } from "./InboxEmbed.ts"
import type { EmbedSession } from "./InboxEmbeds.ts"

/** The embed whose token the current inbox request presented. */
export class CurrentEmbed extends Context.Service<CurrentEmbed, EmbedSession>()("@parley/core/inbox/CurrentEmbed") {}

/** `X-Inbox-Token` → the embed it opens; 401 `Invalid inbox token` otherwise. */
export class InboxAuthentication extends HttpApiMiddleware.Service<InboxAuthentication, { provides: CurrentEmbed }>()(
  "@parley/core/inbox/InboxAuthentication",
  {
    security: { token: HttpApiSecurity.apiKey({ key: "X-Inbox-Token", in: "header" }) },
    error: Unauthorized,
    // The Platform client holds an API key, not an embed token: the page sends the header itself.
    requiredForClient: false
  }
) {}

const data = <S extends Schema.Top>(schema: S) => Schema.Struct({ data: schema })
const IdParams = { id: Schema.String }

export const InboxNumber = Schema.Struct({
  msg_config_id: Schema.String,
  phone_number_id: Schema.String,
  name: Schema.String,
  display_phone_number: Schema.String
})

export const InboxSession = Schema.Struct({
  name: Schema.String,
  scope_type: Schema.Literals(EMBED_SCOPE_TYPES),
  scope_name: Schema.NullOr(Schema.String),
  language: Schema.Literals(EMBED_LANGUAGES),
  default_mode: Schema.Literals(EMBED_MODES),
  /** The name messages sent from this inbox are attributed to. */
  sender_name: Schema.String,
  numbers: Schema.Array(InboxNumber)
}).annotate({ identifier: "InboxSession" })

export const InboxHandoff = Schema.Struct({
  execution_id: Schema.String,
  workflow_id: Schema.String,
  reason: Schema.NullOr(Schema.String),
  source: Schema.String,
  since: Schema.String,
  /** The handoff node's `context_data` (2.3.12), null when it gave none. */
  context_data: Schema.Unknown
})

export const InboxConversation = Schema.Struct({
  id: Schema.String,
  status: Schema.Literals(["active", "ended"]),
  contact_name: Schema.NullOr(Schema.String),
  phone_number: Schema.NullOr(Schema.String),
  username: Schema.NullOr(Schema.String),
  msg_config_id: Schema.String,
  phone_number_id: Schema.String,
  last_active_at: Schema.String,
  last_message_text: Schema.NullOr(Schema.String),
  last_inbound_at: Schema.NullOr(Schema.String),
  /** Whether a non-template message may be sent now (decisions 7.5). */
  window_open: Schema.Boolean,
  unread_count: Schema.Number,
  handoff: Schema.NullOr(InboxHandoff)
}).annotate({ identifier: "InboxConversation" })
export type InboxConversation = typeof InboxConversation.Type

export const InboxMessage = Schema.Struct({
  id: Schema.String,
  direction: Schema.Literals(["inbound", "outbound"]),
  type: Schema.String,
  status: Schema.Literals(["pending", "sent", "delivered", "read", "failed"]),
  created_at: Schema.String,
  text: Schema.NullOr(Schema.String),
  media: Schema.NullOr(Schema.Struct({ content_type: Schema.String, filename: Schema.String, byte_size: Schema.Number })),
  sent_by: Schema.NullOr(Schema.Struct({ type: Schema.String, id: Schema.String, name: Schema.NullOr(Schema.String) })),
  error: Schema.NullOr(Schema.String)
}).annotate({ identifier: "InboxMessage" })
export type InboxMessage = typeof InboxMessage.Type

export const InboxThread = Schema.Struct({
  conversation: InboxConversation,
  /** The latest messages, oldest first. */
  messages: Schema.Array(InboxMessage)
}).annotate({ identifier: "InboxThread" })

export const InboxTemplate = Schema.Struct({
  name: Schema.String,
  language: Schema.String,
  category: Schema.String,
  body: Schema.NullOr(Schema.String),
  /** `{{n}}` placeholders of the body, in order: each needs a value. */
  parameter_count: Schema.Number
}).annotate({ identifier: "InboxTemplate" })

export const InboxReplyInput = Schema.Struct({
  text: Schema.optionalKey(Schema.String),
  template: Schema.optionalKey(Schema.Struct({
    name: Schema.String,
    language: Schema.String,
    parameters: Schema.optionalKey(Schema.Array(Schema.String))
  }))
})
export type InboxReplyInput = typeof InboxReplyInput.Type

export const InboxListQuery = {
  status: Schema.optionalKey(Schema.Literals(["active", "ended", "all"])),
  search: Schema.optionalKey(Schema.String),
  msg_config_id: Schema.optionalKey(Schema.String),
  unread: Schema.optionalKey(Schema.String),
  handoff: Schema.optionalKey(Schema.String),
  limit: Schema.optionalKey(wholeNumberQuery("^0*(?:[1-9][0-9]?|100)$", "Conversations at most, 1-100 (default 50)"))
}

export class InboxApi extends HttpApiGroup.make("inbox")
  .add(
    HttpApiEndpoint.get("session", "/session", { success: data(InboxSession) })
      .annotateMerge(operation("The inbox session", "The embed's name, scope, language, default mode, the name replies are attributed to, and the numbers of its scope.")),
    HttpApiEndpoint.get("conversations", "/conversations", {
      query: InboxListQuery,
      success: Schema.Struct({ data: Schema.Array(InboxConversation), has_more: Schema.Boolean }),
      error: Unprocessable
    }).annotateMerge(operation("List inbox conversations", "Conversations of the embed's scope, newest first, filtered as the inbox address is: `status`, `search`, `msg_config_id`, `unread=1`, `handoff=1`.")),
    HttpApiEndpoint.get("thread", "/conversations/:id", { params: IdParams, success: data(InboxThread), error: NotFound })
      .annotateMerge(operation("Get an inbox thread", "A conversation of the scope with its latest 100 messages, oldest first; outside the scope answers 404.")),
    HttpApiEndpoint.post("reply", "/conversations/:id/messages", {
      params: IdParams,
      payload: InboxReplyInput,
      success: data(InboxMessage).pipe(HttpApiSchema.status(201)),
      error: [NotFound, Unprocessable, Unavailable]
    }).annotateMerge(operation("Reply from the inbox", "Sends `text` (inside the 24-hour window) or `template { name, language, parameters? }` to the contact, attributed to the embed's user or name.")),
    HttpApiEndpoint.post("read", "/conversations/:id/read", {
      params: IdParams,
      success: data(Schema.Struct({ marked: Schema.Boolean })),
      error: [NotFound, Unavailable]
    }).annotateMerge(operation("Mark a thread read", "Marks the contact's messages read up to the latest, through the network as the proxy's mark-read does.")),
    HttpApiEndpoint.post("end", "/conversations/:id/end", {
      params: IdParams,
      success: data(InboxConversation),
      error: [NotFound, Unprocessable]
    }).annotateMerge(operation("End an inbox conversation", "Ends the conversation as the Platform API's PATCH `status: ended` does (reason `manual`).")),
    HttpApiEndpoint.post("resumeHandoff", "/conversations/:id/handoff/resume", {
      params: IdParams,
      success: data(InboxConversation),
      error: [NotFound, Unprocessable]
    }).annotateMerge(operation("Resume a handoff", "Resumes the conversation's execution in handoff (as `POST /workflow_executions/<id>/resume`); 422 when none is.")),
    HttpApiEndpoint.post("endHandoff", "/conversations/:id/handoff/end", {
      params: IdParams,
      success: data(InboxConversation),
      error: [NotFound, Unprocessable]
    }).annotateMerge(operation("End a handoff", "Ends the conversation's execution in handoff (as PATCH `status: ended`); 422 when none is.")),
    HttpApiEndpoint.get("templates", "/conversations/:id/templates", {
      params: IdParams,
      success: data(Schema.Array(InboxTemplate)),
      error: NotFound
    }).annotateMerge(operation("List inbox templates", "The approved templates of the conversation's number (synced from the network first), with their body and placeholder count."))
  )
  .middleware(InboxAuthentication)
  .prefix("/inbox/v1")
  .annotateMerge(OpenApi.annotations({
    title: "Embedded inbox",
    description: "What the embedded inbox page calls, with its embed token in `X-Inbox-Token`"
  }))
{}
