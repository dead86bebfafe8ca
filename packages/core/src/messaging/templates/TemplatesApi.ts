/** The HTTP contract of the template mirror (decisions 4.8.1): `GET /msg/templates` and one template by id. */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { Authentication } from "../../http/Middleware.ts"
import { NotFound } from "../../shared/ApiError.ts"
import { ListResponse, PagingQuery } from "../../shared/Pagination.ts"
import { MsgTemplate } from "./Template.ts"

export class MsgTemplatesApi extends HttpApiGroup.make("msgTemplates")
  .add(
    HttpApiEndpoint.get("list", "/msg/templates", {
      query: {
        phone_number_id: Schema.optionalKey(Schema.String),
        business_account_id: Schema.optionalKey(Schema.String),
        name: Schema.optionalKey(Schema.String),
        language: Schema.optionalKey(Schema.String),
        status: Schema.optionalKey(Schema.String),
        category: Schema.optionalKey(Schema.String),
        ...PagingQuery
      },
      success: ListResponse(MsgTemplate)
    }).annotateMerge(OpenApi.annotations({ summary: "List message templates" })),
    HttpApiEndpoint.get("get", "/msg/templates/:id", {
      params: { id: Schema.String },
      success: Schema.Struct({ data: MsgTemplate }),
      error: NotFound
    }).annotateMerge(OpenApi.annotations({ summary: "Get a message template" }))
  )
  .middleware(Authentication)
  .prefix("/platform/v1")
  .annotateMerge(OpenApi.annotations({
    title: "Message templates",
    description: "The service's mirror of the network's templates: the ids send_template and broadcasts name"
  }))
{}
