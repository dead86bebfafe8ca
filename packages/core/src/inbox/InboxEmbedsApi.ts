/** The Platform API of inbox embeds (decisions 2.17, 4.7): create, list, get, update, revoke. */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Authentication } from "../http/Middleware.ts"
import { NotFound, Unprocessable } from "../shared/ApiError.ts"
import { PageResponse, PagingQuery } from "../shared/Pagination.ts"
import {
  CreatedInboxEmbed,
  EMBED_SCOPE_TYPES,
  InboxEmbed,
  InboxEmbedCreateInput,
  InboxEmbedUpdateInput
} from "./InboxEmbed.ts"

const data = <S extends Schema.Top>(schema: S) => Schema.Struct({ data: schema })
const IdParams = { id: Schema.String }

export class InboxEmbedsApi extends HttpApiGroup.make("inboxEmbeds")
  .add(
    HttpApiEndpoint.get("list", "/inbox_embeds", {
      query: {
        status: Schema.optionalKey(Schema.Literals(["active", "revoked"])),
        scope_type: Schema.optionalKey(Schema.Literals(EMBED_SCOPE_TYPES)),
        scope_id: Schema.optionalKey(Schema.String),
        assigned_user_id: Schema.optionalKey(Schema.String),
        page: PagingQuery.page,
        per_page: PagingQuery.per_page
      },
      success: PageResponse(InboxEmbed)
    }).annotateMerge(OpenApi.annotations({ summary: "List inbox embeds" })),
    HttpApiEndpoint.post("create", "/inbox_embeds", {
      payload: Schema.Struct({ inbox_embed: InboxEmbedCreateInput }),
      success: data(CreatedInboxEmbed).pipe(HttpApiSchema.status(201)),
      error: Unprocessable
    }).annotateMerge(OpenApi.annotations({
      summary: "Create an inbox embed",
      description: "The answer carries the raw `token` and its `embed_url` this once; later answers omit them."
    })),
    HttpApiEndpoint.get("get", "/inbox_embeds/:id", { params: IdParams, success: data(InboxEmbed), error: NotFound })
      .annotateMerge(OpenApi.annotations({ summary: "Get an inbox embed" })),
    HttpApiEndpoint.patch("update", "/inbox_embeds/:id", {
      params: IdParams,
      payload: Schema.Struct({ inbox_embed: InboxEmbedUpdateInput }),
      success: data(InboxEmbed),
      error: [NotFound, Unprocessable]
    }).annotateMerge(OpenApi.annotations({ summary: "Update an inbox embed" })),
    HttpApiEndpoint.delete("revoke", "/inbox_embeds/:id", { params: IdParams, success: HttpApiSchema.NoContent, error: NotFound })
      .annotateMerge(OpenApi.annotations({ summary: "Revoke an inbox embed", description: "At once and for good; the record stays with status `revoked`." }))
  )
  .middleware(Authentication)
  .prefix("/platform/v1")
  .annotateMerge(OpenApi.annotations({ title: "Inbox embeds", description: "Tokens that open the embedded inbox for a scope of the project" }))
{}
