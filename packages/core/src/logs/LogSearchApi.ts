/**
 * The HTTP contract of log search (decisions 4.7): `GET /log_search` (query string), `POST /log_search` (JSON body,
 * the only way to send `filters`) and `GET /log_search/catalog`. Parameters are decoded as given and checked by
 * `Logs.search`, so every refusal says which parameter and why in the same words.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { operation } from "../http/Operation.ts"
import { Authentication } from "../http/Middleware.ts"
import { LOG_TEXT_FIELDS, type LogTextField } from "./LogSearch.ts"
import { BadRequest, Unprocessable } from "../shared/ApiError.ts"
import { DateTimeQuery, PagingQuery } from "../shared/Pagination.ts"
import { SOURCES } from "./Catalog.ts"

const Bool = Schema.Literals(["true", "false"])
const text = (description: string) => Schema.optionalKey(Schema.String.annotate({ description }))

/**
 * One of `values`, as the document states it. Decoding takes any string: `Logs.search` checks it, so every refusal
 * names the accepted values in the same words, whichever form the request took.
 */
const oneOf = (values: ReadonlyArray<string>, description: string) =>
  Schema.optionalKey(Schema.String.check(Schema.makeFilter(() => true, { toJsonSchema: () => ({ enum: [...values] }) })).annotate({ description }))

const SOURCE_NAMES = ["all", ...SOURCES.flatMap((s) => [s.value, ...s.aliases])]
const PERIOD_NAMES = ["24h", "7d", "context"]

const describe = {
  query: "Free text: entries holding every word (letters and digits, any case); blank finds everything",
  source: "`all` (default), `external_api_log`, `msg_webhook_event`, `flow_event`, `webhook_delivery`, or an alias from the catalog",
  period: "`24h` (default), `7d`, or `context` (15 minutes either side of `around`)",
  around: "ISO 8601 date-time; required with `period=context`",
  problems_only: "Only failed requests, steps, delivery attempts and upstream statuses",
  errors_only: "Deprecated alias of `problems_only`",
  limit: "Events per page, 1-100 (default 20)",
  cursor: "`pagination.next_cursor` of the previous page",
  highlight_event_id: "Marks the event with this id (`highlighted: true`)",
  highlight_resource_id: "Marks the newest event about this resource"
}

export const LogSearchQuery = {
  query: text(describe.query),
  source: oneOf(SOURCE_NAMES, describe.source),
  period: oneOf(PERIOD_NAMES, describe.period),
  around: Schema.optionalKey(DateTimeQuery.annotate({ description: describe.around })),
  problems_only: Schema.optionalKey(Bool.annotate({ description: describe.problems_only })),
  errors_only: Schema.optionalKey(Bool.annotate({ description: describe.errors_only })),
  limit: PagingQuery.limit,
  cursor: text(describe.cursor),
  highlight_event_id: text(describe.highlight_event_id),
  highlight_resource_id: text(describe.highlight_resource_id)
}

export const LogSearchBody = Schema.Struct({
  query: Schema.optionalKey(Schema.NullOr(Schema.String).annotate({ description: describe.query })),
  source: oneOf(SOURCE_NAMES, describe.source),
  period: oneOf(PERIOD_NAMES, describe.period),
  around: Schema.optionalKey(DateTimeQuery.annotate({ description: describe.around })),
  problems_only: Schema.optionalKey(Schema.Boolean.annotate({ description: describe.problems_only })),
  errors_only: Schema.optionalKey(Schema.Boolean.annotate({ description: describe.errors_only })),
  filters: Schema.optionalKey(Schema.Unknown.annotate({
    description: "`{ key: value }` or `[{ key, value }]`; keys from the catalog's `filter_suggestions`, all must hold"
  })),
  // Any number decodes; `Logs.search` refuses one outside 1-100 or not whole, naming the bounds.
  limit: Schema.optionalKey(
    Schema.Number.check(Schema.makeFilter(() => true, { toJsonSchema: () => ({ type: "integer", minimum: 1, maximum: 100 }) }))
      .annotate({ description: describe.limit })
  ),
  cursor: text(describe.cursor),
  highlight_event_id: text(describe.highlight_event_id),
  highlight_resource_id: text(describe.highlight_resource_id)
})
export type LogSearchBody = typeof LogSearchBody.Type

const textFields = Object.fromEntries(LOG_TEXT_FIELDS.map((name) => [name, Schema.NullOr(Schema.String)])) as {
  readonly [K in LogTextField]: Schema.NullOr<Schema.String>
}

export const LogEvent = Schema.Struct({
  id: Schema.String,
  source: Schema.String,
  /** The same instant as `occurred_at`. */
  timestamp: Schema.String,
  occurred_at: Schema.String,
  ingested_at: Schema.String,
  level: Schema.Literals(["info", "warning", "error"]),
  message: Schema.String,
  ...textFields,
  response_status: Schema.NullOr(Schema.Number),
  response_time_ms: Schema.NullOr(Schema.Number),
  attributes: Schema.Record(Schema.String, Schema.Unknown),
  payload: Schema.Unknown,
  highlighted: Schema.Boolean
})
export type LogEvent = typeof LogEvent.Type

export const LogSearchAnswer = Schema.Struct({
  available: Schema.Boolean,
  source: Schema.String,
  window: Schema.Struct({ since: Schema.String, until: Schema.String }),
  events: Schema.Array(LogEvent),
  pagination: Schema.Struct({ has_more: Schema.Boolean, next_cursor: Schema.NullOr(Schema.String) }),
  error: Schema.optionalKey(Schema.String),
  code: Schema.optionalKey(Schema.String)
})
export type LogSearchAnswer = typeof LogSearchAnswer.Type

const Sources = Schema.Array(Schema.String)

export const LogCatalogAnswer = Schema.Struct({
  available: Schema.Boolean,
  catalog: Schema.Struct({
    sources: Schema.Array(Schema.Struct({ value: Schema.String, label: Schema.String, color: Schema.String, aliases: Sources })),
    filter_suggestions: Schema.Array(Schema.Struct({
      key: Schema.String,
      label: Schema.String,
      description: Schema.String,
      param_key: Schema.String,
      sources: Sources
    })),
    detail_fields: Schema.Array(Schema.String)
  })
})
export type LogCatalogAnswer = typeof LogCatalogAnswer.Type

export class LogSearchApi extends HttpApiGroup.make("logSearch")
  .add(
    HttpApiEndpoint.get("search", "/log_search", {
      query: LogSearchQuery,
      success: LogSearchAnswer,
      error: [BadRequest, Unprocessable]
    }).annotateMerge(operation(
      "Search the project's logs (filters need POST)",
      "Free-text search over API requests, upstream webhook events, workflow step events and webhook deliveries " +
        "of the last 24 hours or 7 days, or 15 minutes around `around` (`period=context`); `problems_only` keeps " +
        "failures; newest first with a cursor. Entries are kept 14 days by default."
    )),
    HttpApiEndpoint.post("searchPost", "/log_search", {
      payload: LogSearchBody,
      success: LogSearchAnswer,
      error: [BadRequest, Unprocessable]
    }).annotateMerge(operation(
      "Search the project's logs, with filters",
      "The same search with a JSON body, which alone takes `filters` (`{ key: value }` or `[{ key, value }]`, keys " +
        "from the catalog such as `flow_execution_id`, `webhook_id`, `phone_number_id`); a malformed `filters` " +
        "answers 422."
    )),
    HttpApiEndpoint.get("catalog", "/log_search/catalog", {
      success: LogCatalogAnswer
    }).annotateMerge(operation(
      "List the log sources, filter keys and detail fields",
      "The catalog a log search UI is built from: sources with labels, colours and aliases, the filter " +
        "suggestions with the sources they apply to, and the detail fields of an entry."
    ))
  )
  .middleware(Authentication)
  .prefix("/platform/v1")
  .annotateMerge(OpenApi.annotations({
    title: "Log search",
    description: "API requests, upstream webhook events, workflow step events and webhook delivery attempts of the " +
      "project, kept 14 days by default, searched by words, time, exact filters and problems, newest first"
  }))
{}
