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
import { BadGateway, NotFound, Unprocessable } from "../../shared/ApiError.ts"
import { ListResponse, PagingQuery } from "../../shared/Pagination.ts"
import {
  MessageConfig,
  MessageConfigCreateInput,
  MessageConfigKind,
  MessageConfigUpdateInput,
  PhoneNumber
} from "./MessageConfig.ts"

const data = <S extends Schema.Top>(schema: S) => Schema.Struct({ data: schema })
const NumberParams = { phone_number_id: Schema.String }

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
    }).annotateMerge(OpenApi.annotations({ summary: "Disconnect a phone number" }))
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
