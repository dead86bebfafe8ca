/** The Platform API of inbox embeds (decisions 2.17, 4.7): create, list, get, update, revoke. */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { operation } from "../http/Operation.ts"
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
    }).annotateMerge(operation("List inbox embeds", "The project's inbox embeds, newest first, filtered by `status`, `scope_type`, `scope_id` and `assigned_user_id`; page paging. Tokens are never listed.")),
    HttpApiEndpoint.post("create", "/inbox_embeds", {
      payload: Schema.Struct({ inbox_embed: InboxEmbedCreateInput }),
      success: data(CreatedInboxEmbed).pipe(HttpApiSchema.status(201)),
      error: Unprocessable
    }).annotateMerge(operation("Create an inbox embed", "Creates an embed from `inbox_embed { scope_type, scope_id?, name?, assigned_user_id?, allowed_origins?, default_mode?, language?, expires_at? }`. The answer carries the raw `token` and its `embed_url` this once; later answers omit them.")),
    HttpApiEndpoint.get("get", "/inbox_embeds/:id", { params: IdParams, success: data(InboxEmbed), error: NotFound })
      .annotateMerge(operation("Get an inbox embed", "One embed of the project by id, without its token; another project's id answers 404.")),
    HttpApiEndpoint.patch("update", "/inbox_embeds/:id", {
      params: IdParams,
      payload: Schema.Struct({ inbox_embed: InboxEmbedUpdateInput }),
      success: data(InboxEmbed),
      error: [NotFound, Unprocessable]
    }).annotateMerge(operation("Update an inbox embed", "Changes `name`, `assigned_user_id`, `assigned_user_name`, `allowed_origins`, `default_mode`, `language` or `expires_at`; the scope never changes.")),
    HttpApiEndpoint.delete("revoke", "/inbox_embeds/:id", { params: IdParams, success: HttpApiSchema.NoContent, error: NotFound })
      .annotateMerge(operation("Revoke an inbox embed", "Revokes the embed at once and for good: its token is refused from now on; the record stays with status `revoked`."))
  )
  .middleware(Authentication)
  .prefix("/platform/v1")
  .annotateMerge(OpenApi.annotations({ title: "Inbox embeds", description: "Tokens that open the embedded inbox for a scope of the project" }))
{}
