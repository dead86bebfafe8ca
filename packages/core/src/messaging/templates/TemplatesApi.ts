/** The HTTP contract of the template mirror (decisions 4.8.1): `GET /msg/templates` and one template by id. */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { Authentication } from "../../http/Middleware.ts"
import { NotFound } from "../../shared/ApiError.ts"
import { ListResponse, PagingQuery } from "../../shared/Pagination.ts"
import { MsgTemplate } from "./Template.ts"
import { operation } from "../../http/Operation.ts"

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
    }).annotateMerge(operation(
      "List message templates",
      "The service's mirror of the project's message templates, filtered by number or " +
        "business account, name, language, status and category."
    )),
    HttpApiEndpoint.get("get", "/msg/templates/:id", {
      params: { id: Schema.String },
      success: Schema.Struct({ data: MsgTemplate }),
      error: NotFound
    }).annotateMerge(operation(
      "Get a message template",
      "One template of the mirror by its id (what `send_template` and broadcasts name)."
    ))
  )
  .middleware(Authentication)
  .prefix("/platform/v1")
  .annotateMerge(OpenApi.annotations({
    title: "Message templates",
    description: "The service's mirror of the network's templates: the ids send_template and broadcasts name"
  }))
{}
