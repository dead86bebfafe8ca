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
import { operation } from "../../http/Operation.ts"

const data = <S extends Schema.Top>(schema: S) => Schema.Struct({ data: schema })
const NumberParams = { phone_number_id: Schema.String }

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
        "sent; stored messages and conversations are kept."
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
