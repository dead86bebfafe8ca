/**
 * The HTTP contract of the older API log list (`GET /api_logs`, decisions 4.6): the project's API requests, newest
 * first, by cursor, over log search's entries (`ApiLogs`).
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { Authentication } from "../http/Middleware.ts"
import { operation } from "../http/Operation.ts"
import { BadRequest, Unprocessable } from "../shared/ApiError.ts"
import { ListResponse, PagingQuery } from "../shared/Pagination.ts"
import { API_LOG_PERIODS } from "./ApiLogs.ts"

export const ApiLog = Schema.Struct({
  id: Schema.String,
  endpoint: Schema.NullOr(Schema.String),
  http_method: Schema.NullOr(Schema.String),
  response_status: Schema.NullOr(Schema.Number),
  response_time_ms: Schema.NullOr(Schema.Number),
  ip_address: Schema.NullOr(Schema.String),
  error_message: Schema.NullOr(Schema.String),
  created_at: Schema.String,
  api_key_id: Schema.NullOr(Schema.String),
  api_key_name: Schema.NullOr(Schema.String)
})

export class ApiLogsApi extends HttpApiGroup.make("apiLogs")
  .add(
    HttpApiEndpoint.get("list", "/api_logs", {
      query: {
        endpoint: Schema.optionalKey(Schema.String.annotate({ description: "Part of the request path, any case" })),
        status_code: Schema.optionalKey(Schema.String.annotate({ description: "An HTTP status (100-599)" })),
        errors_only: Schema.optionalKey(Schema.Literals(["true", "false"]).annotate({ description: "Only requests answered 400 or above" })),
        period: Schema.optionalKey(Schema.Literals(API_LOG_PERIODS).annotate({ description: "`24h` (default), `7d` or `30d`" })),
        limit: PagingQuery.limit,
        after: PagingQuery.after
      },
      success: ListResponse(ApiLog),
      error: [BadRequest, Unprocessable]
    }).annotateMerge(operation(
      "List the project's API requests",
      "The older surface of log search's `external_api_log` source: each request with endpoint, method, status, " +
        "duration, caller address and API key, newest first, by cursor (`limit`, `after`)."
    ))
  )
  .middleware(Authentication)
  .prefix("/platform/v1")
  .annotateMerge(OpenApi.annotations({
    title: "API logs",
    description: "The project's API requests as log search keeps them (14 days by default)"
  }))
{}
