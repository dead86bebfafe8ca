/** The Platform API of workflow viewer embeds (issue 31 §3): create, list, get, update, revoke. */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Authentication } from "../http/Middleware.ts"
import { operation } from "../http/Operation.ts"
import { NotFound, Unprocessable } from "../shared/ApiError.ts"
import { PageResponse, PagingQuery } from "../shared/Pagination.ts"
import {
  CreatedWorkflowEmbed,
  WORKFLOW_EMBED_SCOPE_TYPES,
  WorkflowEmbed,
  WorkflowEmbedCreateInput,
  WorkflowEmbedUpdateInput
} from "./WorkflowEmbed.ts"

const data = <S extends Schema.Top>(schema: S) => Schema.Struct({ data: schema })
const IdParams = { id: Schema.String }

export class WorkflowEmbedsApi extends HttpApiGroup.make("workflowEmbeds")
  .add(
    HttpApiEndpoint.get("list", "/workflow_embeds", {
      query: {
        status: Schema.optionalKey(Schema.Literals(["active", "revoked"])),
        scope_type: Schema.optionalKey(Schema.Literals(WORKFLOW_EMBED_SCOPE_TYPES)),
        scope_id: Schema.optionalKey(Schema.String),
        page: PagingQuery.page,
        per_page: PagingQuery.per_page
      },
      success: PageResponse(WorkflowEmbed)
    }).annotateMerge(operation("List workflow viewer embeds", "The project's workflow viewer embeds, newest first, filtered by `status`, `scope_type` and `scope_id`; page paging. Tokens are never listed.")),
    HttpApiEndpoint.post("create", "/workflow_embeds", {
      payload: Schema.Struct({ workflow_embed: WorkflowEmbedCreateInput }),
      success: data(CreatedWorkflowEmbed).pipe(HttpApiSchema.status(201)),
      error: Unprocessable
    }).annotateMerge(operation("Create a workflow viewer embed", "Creates an embed of the workflow and execution viewer from `workflow_embed { scope_type (project or workflow), scope_id?, name?, access (view or edit)?, allowed_origins?, default_mode?, language?, expires_at? }`. The answer carries the raw `token` and its `embed_url` this once; later answers omit them.")),
    HttpApiEndpoint.get("get", "/workflow_embeds/:id", { params: IdParams, success: data(WorkflowEmbed), error: NotFound })
      .annotateMerge(operation("Get a workflow viewer embed", "One embed of the project by id, without its token; another project's id answers 404.")),
    HttpApiEndpoint.patch("update", "/workflow_embeds/:id", {
      params: IdParams,
      payload: Schema.Struct({ workflow_embed: WorkflowEmbedUpdateInput }),
      success: data(WorkflowEmbed),
      error: [NotFound, Unprocessable]
    }).annotateMerge(operation("Update a workflow viewer embed", "Changes `name`, `access`, `allowed_origins`, `default_mode`, `language` or `expires_at`; the scope never changes.")),
    HttpApiEndpoint.delete("revoke", "/workflow_embeds/:id", { params: IdParams, success: HttpApiSchema.NoContent, error: NotFound })
      .annotateMerge(operation("Revoke a workflow viewer embed", "Revokes the embed at once and for good: its token is refused from now on; the record stays with status `revoked`."))
  )
  .middleware(Authentication)
  .prefix("/platform/v1")
  .annotateMerge(OpenApi.annotations({ title: "Workflow viewer embeds", description: "Tokens that open the embedded workflow and execution viewer for the project or one workflow" }))
{}
