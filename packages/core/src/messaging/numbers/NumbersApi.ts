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
import { operation } from "../../http/Operation.ts"
import { DisplayNameRequest, DisplayNameRequestInput } from "./DisplayNameRequest.ts"
import { HealthReport } from "./Health.ts"
import { MediaIngestInput, MediaIngestResult } from "../MediaIngest.ts"

const data = <S extends Schema.Top>(schema: S) => Schema.Struct({ data: schema })
const NumberParams = { phone_number_id: Schema.String }

/** 429 of the health checks (decisions 8.1): the spec's body adds a `message`; `Retry-After` says when to come back. */
export class HealthRateLimitExceeded extends Schema.Error<HealthRateLimitExceeded>("HealthRateLimitExceeded")({
  error: Schema.String,
  // Always sent; optional so the reference's generated example (`{ error }`) stays valid.
  message: Schema.optionalKey(Schema.String)
}, { httpApiStatus: 429 }) {
  readonly _tag = "HealthRateLimitExceeded" as const
}

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
    }).annotateMerge(operation(
      "List the project's phone numbers",
      "The project's connected phone numbers (production and sandbox), filtered by `customer_id` and " +
        "`kind`."
    )),
    HttpApiEndpoint.post("connect", "/msg/phone_numbers", {
      payload: Schema.Struct({ msg_config: MessageConfigCreateInput }),
      success: data(PhoneNumber).pipe(HttpApiSchema.status(201)),
      error: [Unprocessable, BadGateway]
    }).annotateMerge(operation(
      "Connect a phone number (its network credentials)",
      "Connects a number by its network credentials (`msg_config`: phone number id, business account " +
        "id, access token, ...). The token is stored encrypted and never returned."
    )),
    HttpApiEndpoint.post("connectToCustomer", "/customers/:id/msg/phone_numbers", {
      params: { id: Schema.String },
      payload: Schema.Struct({ msg_config: MessageConfigCreateInput }),
      success: data(PhoneNumber).pipe(HttpApiSchema.status(201)),
      error: [NotFound, Unprocessable, BadGateway]
    }).annotateMerge(operation(
      "Connect a phone number for a customer",
      "Connects a number manually for one of the project's customers (the alternative to a setup link)."
    )),
    HttpApiEndpoint.get("get", "/msg/phone_numbers/:phone_number_id", {
      params: NumberParams,
      success: data(PhoneNumber),
      error: NotFound
    }).annotateMerge(operation(
      "Get a phone number",
      "One connected number by its network `phone_number_id`."
    )),
    HttpApiEndpoint.delete("disconnect", "/msg/phone_numbers/:phone_number_id", {
      params: NumberParams,
      success: HttpApiSchema.NoContent,
      error: NotFound
    }).annotateMerge(operation(
      "Disconnect a phone number",
      "Disconnects the number: its webhooks and triggers are removed and `msg.phone_number.deleted` is " +
        "sent; stored messages and conversations are kept. A number the service provisioned is released to the " +
        "network."
    )),
    HttpApiEndpoint.get("health", "/msg/phone_numbers/:phone_number_id/health", {
      params: NumberParams,
      query: { test_message_to: Schema.optionalKey(Schema.String) },
      success: HttpApiSchema.WithHeaders(data(HealthReport), HealthRateLimitHeaders),
      error: [NotFound, Unprocessable, HealthRateLimitExceeded]
    }).annotateMerge(operation(
      "Check that the number can really send",
      "Runs the checks (access, connection, token on coexistence numbers, messaging health, webhook subscription " +
        "and verification, a test message with `test_message_to`) and folds them into `healthy`, `degraded`, " +
        "`unhealthy` or `error`. Answers are reused for 3 minutes (not with `test_message_to`); a run over 15 " +
        "seconds answers `error`; after access or token errors the number is checked again only after 5, 15, 30, " +
        "then 60 minutes, and held answers carry `retry_after`. A project runs at most 5 checks a second and 60 a " +
        "minute (429 with `Retry-After` beyond)."
    )),
    HttpApiEndpoint.post("requestDisplayName", "/msg/phone_numbers/:phone_number_id/display_name_requests", {
      params: NumberParams,
      payload: Schema.Struct({ display_name_request: DisplayNameRequestInput }),
      success: data(DisplayNameRequest).pipe(HttpApiSchema.status(201)),
      error: [NotFound, Unprocessable, BadGateway]
    }).annotateMerge(operation(
      "Request a new display name",
      "Submits the name to the network for review and cancels the number's open request; the request follows the " +
        "network's review (`pending_review`, `approved`, `applied`, ...). A refused submission is stored as `failed`."
    )),
    HttpApiEndpoint.get("listDisplayNameRequests", "/msg/phone_numbers/:phone_number_id/display_name_requests", {
      params: NumberParams,
      query: PagingQuery,
      success: ListResponse(DisplayNameRequest),
      error: NotFound
    }).annotateMerge(operation("List a number's display name requests", "Newest first; the open request is read again from the network.")),
    HttpApiEndpoint.get("getDisplayNameRequest", "/msg/phone_numbers/:phone_number_id/display_name_requests/:id", {
      params: { ...NumberParams, id: Schema.String },
      success: data(DisplayNameRequest),
      error: NotFound
    }).annotateMerge(operation("Get a display name request", "An open request is read again from the network first.")),
    HttpApiEndpoint.delete("cancelDisplayNameRequest", "/msg/phone_numbers/:phone_number_id/display_name_requests/:id", {
      params: { ...NumberParams, id: Schema.String },
      success: data(DisplayNameRequest),
      error: [NotFound, Unprocessable, BadGateway]
    }).annotateMerge(operation(
      "Cancel a display name request",
      "Answers the request `cancelled` and withdraws the change at the network (the number keeps the name it shows); " +
        "422 when it is already final (declined, failed, applied, expired, cancelled); 502 when the network cannot be reached."
    ))
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
    }).annotateMerge(operation(
      "Update a messaging configuration (older surface)",
      "Updates a messaging configuration on the older surface (credentials, inbound processing, webhook " +
        "settings)."
    ))
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
    }).annotateMerge(operation(
      "Ingest media from a URL",
      "Fetches `source` (private addresses refused, each redirect checked again, the network's type and size " +
        "limits enforced while reading) and uploads it to the network for `phone_number_id`: a media id " +
        "(`upstream_media`, default) or an asset handle for template headers (`upstream_resumable_asset`)."
    ))
  )
  .middleware(Authentication)
  .prefix("/platform/v1")
  .annotateMerge(OpenApi.annotations({ title: "Media ingest", description: "Media uploaded to the network from a URL" }))
{}
