/**
 * The messaging proxy in the contract (spec "Messaging proxy", decisions
 * 4.10), so `/openapi.json`, `/docs` and `@parley/client` show it. The host
 * serves these routes raw, through the same pass-through as every other
 * `{proxy_url}` request: bodies go to the network byte for byte and its
 * answers (and errors, in the network's shape) come back unchanged, so
 * nothing here is decoded. The same paths also answer without the version
 * segment, and any other edge of a number of the project (business profile,
 * settings, ...) is forwarded too; media uploads are multipart
 * (`POST /proxy/<version>/<phone_number_id>/media` with `messaging_product`,
 * `file` and optional `type`). Authentication is the API key (`X-API-Key` or
 * `Authorization: Bearer`; `ProxyKey`), checked by the proxy itself: a
 * missing or wrong one answers 401 `{ "error": "Invalid API key" }`, and the
 * media download link needs none. Query parameters are
 * documented as optional: the proxy, not the contract, answers a missing one
 * (in the network's shape).
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { ProxyKey } from "../http/Middleware.ts"
import { operation } from "../http/Operation.ts"

const Version = Schema.String.annotate({ description: "The network's API version, `vNN.N` (e.g. `v24.0`), forwarded as given" })
const NumberParams = { version: Version, phone_number_id: Schema.String }
/** Whatever the network answered (or the stored record, in the network's shape), unchanged. */
const Answer = Schema.Unknown.annotate({ description: "The network's answer, status and body unchanged" })
const Envelope = Schema.Unknown.annotate({
  description: "The network's own request body, forwarded byte for byte",
  examples: [{ messaging_product: "whatsapp", to: "15551234567", type: "text", text: { body: "Your order has shipped" } }]
})

export class MessagingProxyApi extends HttpApiGroup.make("proxy")
  .add(
    HttpApiEndpoint.post("send", "/proxy/:version/:phone_number_id/messages", {
      params: NumberParams,
      payload: Envelope,
      success: Answer
    }).annotateMerge(operation(
      "Send a message, or mark one read (with the typing indicator)",
      "Recorded before it is forwarded (`ext.status` pending) and linked to its conversation; sends to one " +
        "conversation go out in the order they arrived. Outside the 24-hour window only templates are accepted (131047)."
    )),
    HttpApiEndpoint.get("listMessages", "/proxy/:version/:phone_number_id/messages", {
      params: NumberParams,
      success: Answer
    }).annotateMerge(operation(
      "Stored messages of the number",
      "Filters `conversation_id`, `direction`, `status`, `since`, `until`; cursors `limit`, `after`, `before`; " +
        "`fields` selects fields, `ext(...)` the service's own."
    )),
    HttpApiEndpoint.get("getMessage", "/proxy/:version/:phone_number_id/messages/:message_id", {
      params: { ...NumberParams, message_id: Schema.String },
      success: Answer
    }).annotateMerge(operation(
      "One stored message, by the network's id",
      "A message the service stored (sent through the proxy or received), in the network's shape with " +
        "`ext` fields; 404 in the network's shape when unknown."
    )),
    HttpApiEndpoint.get("listConversations", "/proxy/:version/:phone_number_id/conversations", {
      params: NumberParams,
      success: Answer
    }).annotateMerge(operation(
      "Conversations of the number",
      "Filters `status`, `phone_number`, `assigned_user_id`, `unassigned`, `last_active_since`, `last_active_until`; " +
        "cursors and `fields` as for messages."
    )),
    HttpApiEndpoint.get("getConversation", "/proxy/:version/:phone_number_id/conversations/:conversation_id", {
      params: { ...NumberParams, conversation_id: Schema.String },
      success: Answer
    }).annotateMerge(operation(
      "One conversation",
      "One stored conversation of the number, in the proxy's shape."
    )),
    HttpApiEndpoint.get("listContacts", "/proxy/:version/:phone_number_id/contacts", {
      params: NumberParams,
      success: Answer
    }).annotateMerge(operation(
      "Contacts who wrote to or were written from the number",
      "The contacts of the number (who wrote in or was written to), with cursor paging in the network's " +
        "style."
    )),
    HttpApiEndpoint.get("getMedia", "/proxy/:version/:media_id", {
      params: { version: Version, media_id: Schema.String },
      query: { phone_number_id: Schema.optionalKey(Schema.String) },
      success: Answer
    }).annotateMerge(operation(
      "Media metadata (or any object by id)",
      "`url` is the network's address (bearer only, 5 minutes); `download_url` the service's (no key, 4 minutes). " +
        "`phone_number_id` is optional, as at the network. Without it the id may also name a number of the project " +
        "(its fields, `fields` as asked) or a template of its business accounts, answered as the network answers it."
    )),
    HttpApiEndpoint.delete("deleteMedia", "/proxy/:version/:media_id", {
      params: { version: Version, media_id: Schema.String },
      query: { phone_number_id: Schema.optionalKey(Schema.String) },
      success: Answer
    }).annotateMerge(operation(
      "Delete uploaded media",
      "Deletes media uploaded for the project's numbers, at the network and in the service's store."
    )),
    HttpApiEndpoint.get("listTemplates", "/proxy/:version/:business_account_id/message_templates", {
      params: { version: Version, business_account_id: Schema.String },
      success: Answer
    }).annotateMerge(operation(
      "Message templates of the business account",
      "The business account's message templates as the network lists them; the service's template " +
        "mirror is updated from the answer."
    )),
    HttpApiEndpoint.post("createTemplate", "/proxy/:version/:business_account_id/message_templates", {
      params: { version: Version, business_account_id: Schema.String },
      payload: Envelope.annotate({
        examples: [{
          name: "order_shipped",
          language: "en_US",
          category: "UTILITY",
          components: [{ type: "BODY", text: "Hi {{1}}, order {{2}} has shipped.", example: { body_text: [["Ana", "A-1042"]] } }]
        }]
      }),
      success: Answer
    }).annotateMerge(operation(
      "Create a message template",
      "Authentication templates follow the spec's rules (no HEADER, `code_expiration_minutes` 1-90, OTP buttons)."
    )),
    HttpApiEndpoint.get("getTemplate", "/proxy/:version/:business_account_id/message_templates/:template_id", {
      params: { version: Version, business_account_id: Schema.String, template_id: Schema.String },
      success: Answer
    }).annotateMerge(operation(
      "One message template",
      "The template with the network's id `template_id` of the business account, as the network answers it."
    )),
    HttpApiEndpoint.post("uploadMedia", "/proxy/:version/:phone_number_id/media", {
      params: NumberParams,
      payload: Schema.Struct({
        messaging_product: Schema.String.annotate({ description: "`whatsapp`" }),
        file: Schema.String.annotate({ description: "The file's bytes, with its filename and content type", format: "binary" }),
        type: Schema.optionalKey(Schema.String.annotate({ description: "The MIME type; else the file part's" }))
      }).pipe(HttpApiSchema.asMultipart()),
      success: Answer
    }).annotateMerge(operation(
      "Upload media",
      "A multipart form (`messaging_product`, `file`, optional `type`) uploaded to the network for the number; " +
        "answers `{ id }`, the media id to send with."
    )),
    HttpApiEndpoint.get("listBlockedUsers", "/proxy/:version/:phone_number_id/block_users", {
      params: NumberParams,
      success: Answer
    }).annotateMerge(operation("Blocked users of the number", "The network's block list, forwarded; cursor paging as the network's.")),
    HttpApiEndpoint.post("blockUsers", "/proxy/:version/:phone_number_id/block_users", {
      params: NumberParams,
      payload: Envelope,
      success: Answer
    }).annotateMerge(operation(
      "Block users",
      "`{ messaging_product, block_users: [{ user }] }` forwarded to the network; only contacts who wrote in can be blocked."
    )),
    HttpApiEndpoint.delete("unblockUsers", "/proxy/:version/:phone_number_id/block_users", {
      params: NumberParams,
      payload: Envelope,
      success: Answer
    }).annotateMerge(operation("Unblock users", "`{ messaging_product, block_users: [{ user }] }` forwarded to the network.")),
    HttpApiEndpoint.get("getUsername", "/proxy/:version/:phone_number_id/username", {
      params: NumberParams,
      success: Answer
    }).annotateMerge(operation("The number's username", "The username the network holds for the number, and its status.")),
    HttpApiEndpoint.post("setUsername", "/proxy/:version/:phone_number_id/username", {
      params: NumberParams,
      payload: Envelope,
      success: Answer
    }).annotateMerge(operation("Set the number's username", "`{ username }` forwarded to the network.")),
    HttpApiEndpoint.delete("deleteUsername", "/proxy/:version/:phone_number_id/username", {
      params: NumberParams,
      success: Answer
    }).annotateMerge(operation("Remove the number's username", "Forwarded to the network.")),
    HttpApiEndpoint.get("usernameSuggestions", "/proxy/:version/:phone_number_id/username_suggestions", {
      params: NumberParams,
      success: Answer
    }).annotateMerge(operation("Username suggestions", "Usernames the network suggests for the number.")),
    HttpApiEndpoint.post("updateFlowMetadata", "/proxy/:version/:flow_id", {
      params: { version: Version, flow_id: Schema.String },
      payload: Envelope,
      success: Answer
    }).annotateMerge(operation(
      "Update an interactive form's metadata",
      "`name`, `categories` (at least one if given, e.g. `APPOINTMENT_BOOKING`, `CUSTOMER_SUPPORT`), `endpoint_uri`, " +
        "`application_id` of a form of the project's business accounts; answers `{ success }`."
    )),
    HttpApiEndpoint.delete("deleteTemplate", "/proxy/:version/:business_account_id/message_templates", {
      params: { version: Version, business_account_id: Schema.String },
      query: { name: Schema.optionalKey(Schema.String), hsm_id: Schema.optionalKey(Schema.String) },
      success: Answer
    }).annotateMerge(operation(
      "Delete a message template by `name` (every language) or `hsm_id`",
      "Deletes a template at the network by `name` (every language) or `hsm_id`; the mirror drops it " +
        "too."
    ))
  )
  .middleware(ProxyKey)
  .annotateMerge(OpenApi.annotations({
    title: "Messaging proxy",
    description: "The messaging network's API, proxied: the network's requests and answers, stored messages and " +
      "conversations in its shape. Point an existing Cloud API client at this host's `/proxy` (e.g. " +
      "`http://localhost:3000/proxy`, with or without a version segment such as `/proxy/v24.0`) where it had the " +
      "network's base URL, with the project's key in `X-API-Key` (or `Authorization: Bearer`) instead of a token. " +
      "Other edges of a number (business profile, settings, ...) are forwarded too."
  }))
{}
