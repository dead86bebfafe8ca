/**
 * The HTTP contract of connected numbers: the Platform API's phone numbers
 * (spec "Phone number", decisions 2.11, 4.8: list, manual connection, to a
 * customer too, get, disconnect) and the older surface's message config update (spec "Message
 * config"). Write bodies use the `msg_config` envelope; credentials are
 * write-only and appear in no answer.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Authentication } from "../../http/Middleware.ts"
import {
  BadGateway,
  BadRequest,
  Forbidden,
  NotFound,
  PayloadTooLarge,
  TooManyRequests,
  Unprocessable
} from "../../shared/ApiError.ts"
import { ListResponse, PagingQuery } from "../../shared/Pagination.ts"
import {
  MessageConfig,
  MessageConfigCreateInput,
  MessageConfigKind,
  MessageConfigUpdateInput,
  PhoneNumber
} from "./MessageConfig.ts"
import { DisplayNameRequest, DisplayNameRequestInput } from "./DisplayNameRequest.ts"
import { HealthReport } from "./Health.ts"
import { MediaIngestInput, MediaIngestResult } from "../MediaIngest.ts"

const data = <S extends Schema.Top>(schema: S) => Schema.Struct({ data: schema })
const NumberParams = { phone_number_id: Schema.String }

/** What is left of the project's health check windows (decisions 8.1). */
const HealthRateLimitHeaders = {
  "x-health-ratelimit-second-limit": Schema.String,
  "x-health-ratelimit-second-remaining": Schema.String,
  "x-health-ratelimit-minute-limit": Schema.String,
  "x-health-ratelimit-minute-remaining": Schema.String
}

export class PhoneNumbersApi extends HttpApiGroup.make("phoneNumbers")
  .add(
    HttpApiEndpoint.get("list", "/msg/phone_numbers", {
      query: { customer_id: Schema.optionalKey(Schema.String), kind: Schema.optionalKey(MessageConfigKind), ...PagingQuery },
      success: ListResponse(PhoneNumber)
    }).annotateMerge(OpenApi.annotations({ summary: "List the project's phone numbers" })),
    HttpApiEndpoint.post("connect", "/msg/phone_numbers", {
      payload: Schema.Struct({ msg_config: MessageConfigCreateInput }),
      success: data(PhoneNumber).pipe(HttpApiSchema.status(201)),
      error: [Unprocessable, BadGateway]
    }).annotateMerge(OpenApi.annotations({ summary: "Connect a phone number (its network credentials)" })),
    HttpApiEndpoint.post("connectToCustomer", "/customers/:id/msg/phone_numbers", {
      params: { id: Schema.String },
      payload: Schema.Struct({ msg_config: MessageConfigCreateInput }),
      success: data(PhoneNumber).pipe(HttpApiSchema.status(201)),
      error: [NotFound, Unprocessable, BadGateway]
    }).annotateMerge(OpenApi.annotations({ summary: "Connect a phone number for a customer" })),
    HttpApiEndpoint.get("get", "/msg/phone_numbers/:phone_number_id", {
      params: NumberParams,
      success: data(PhoneNumber),
      error: NotFound
    }).annotateMerge(OpenApi.annotations({ summary: "Get a phone number" })),
    HttpApiEndpoint.delete("disconnect", "/msg/phone_numbers/:phone_number_id", {
      params: NumberParams,
      success: HttpApiSchema.NoContent,
      error: NotFound
    }).annotateMerge(OpenApi.annotations({ summary: "Disconnect a phone number (a provisioned one is released)" })),
    HttpApiEndpoint.get("health", "/msg/phone_numbers/:phone_number_id/health", {
      params: NumberParams,
      query: { test_message_to: Schema.optionalKey(Schema.String) },
      success: HttpApiSchema.WithHeaders(data(HealthReport), HealthRateLimitHeaders),
      error: [NotFound, Unprocessable, TooManyRequests]
    }).annotateMerge(OpenApi.annotations({
      summary: "Check that the number can really send",
      description: "Answers are reused for 3 minutes (not with `test_message_to`); after access or token errors " +
        "the number is checked again only after 5, 15, 30, then 60 minutes, and held answers carry `retry_after`. " +
        "A project runs at most 5 checks a second and 60 a minute (429 with `Retry-After` beyond)."
    })),
    HttpApiEndpoint.post("requestDisplayName", "/msg/phone_numbers/:phone_number_id/display_name_requests", {
      params: NumberParams,
      payload: Schema.Struct({ display_name_request: DisplayNameRequestInput }),
      success: data(DisplayNameRequest).pipe(HttpApiSchema.status(201)),
      error: [NotFound, Unprocessable, BadGateway]
    }).annotateMerge(OpenApi.annotations({ summary: "Request a new display name (cancels the open request)" })),
    HttpApiEndpoint.get("listDisplayNameRequests", "/msg/phone_numbers/:phone_number_id/display_name_requests", {
      params: NumberParams,
      query: PagingQuery,
      success: ListResponse(DisplayNameRequest),
      error: NotFound
    }).annotateMerge(OpenApi.annotations({ summary: "List a number's display name requests" })),
    HttpApiEndpoint.get("getDisplayNameRequest", "/msg/phone_numbers/:phone_number_id/display_name_requests/:id", {
      params: { ...NumberParams, id: Schema.String },
      success: data(DisplayNameRequest),
      error: NotFound
    }).annotateMerge(OpenApi.annotations({ summary: "Get a display name request" })),
    HttpApiEndpoint.delete("cancelDisplayNameRequest", "/msg/phone_numbers/:phone_number_id/display_name_requests/:id", {
      params: { ...NumberParams, id: Schema.String },
      success: data(DisplayNameRequest),
      error: [NotFound, Unprocessable]
    }).annotateMerge(OpenApi.annotations({ summary: "Cancel an open display name request" }))
  )
  .middleware(Authentication)
  .prefix("/platform/v1")
  .annotateMerge(OpenApi.annotations({
    title: "Phone numbers",
    description: "Numbers connected to the project (message configs) with the network's facts about them"
  }))
{}

/** The older surface's message configs (decisions 1.5): the same records as the phone numbers. */
export class MsgConfigsApi extends HttpApiGroup.make("msgConfigs")
  .add(
    HttpApiEndpoint.patch("update", "/msg_configs/:id", {
      params: { id: Schema.String },
      payload: Schema.Struct({ msg_config: MessageConfigUpdateInput }),
      success: data(MessageConfig),
      error: [NotFound, Unprocessable, BadGateway]
    }).annotateMerge(OpenApi.annotations({ summary: "Update a messaging configuration (older surface)" }))
  )
  .middleware(Authentication)
  .prefix("/api/v1")
  .annotateMerge(OpenApi.annotations({ title: "Message configs (older surface)", description: "Message configs are phone numbers" }))
{}

/** `POST /msg/media` (decisions 4.8): a file fetched from a URL and uploaded to the network for a number. */
export class MsgMediaApi extends HttpApiGroup.make("msgMedia")
  .add(
    HttpApiEndpoint.post("ingest", "/msg/media", {
      payload: Schema.Struct({ media_ingest: MediaIngestInput }),
      success: data(MediaIngestResult),
      error: [BadRequest, Forbidden, NotFound, PayloadTooLarge, BadGateway]
    }).annotateMerge(OpenApi.annotations({
      summary: "Ingest media from a URL",
      description: "Fetches `source` (private addresses refused, redirects re-checked, the network's type and size " +
        "limits enforced) and uploads it to the network for `phone_number_id`; answers the network's media id."
    }))
  )
  .middleware(Authentication)
  .prefix("/platform/v1")
  .annotateMerge(OpenApi.annotations({ title: "Media ingest", description: "Media uploaded to the network from a URL" }))
{}
