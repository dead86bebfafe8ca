/**
 * The HTTP contract of webhooks (spec "Webhooks", decisions 4.6): number-
 * level and project-level registrations in the `msg_webhook` envelope, test
 * deliveries, and the delivery log with manual retries.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Authentication } from "../http/Middleware.ts"
import { NotFound, PaymentRequired, Unprocessable } from "../shared/ApiError.ts"
import { ListResponse, DateTimeQuery, PagingQuery } from "../shared/Pagination.ts"
import {
  DeliveryPeriod,
  DeliveryStatus,
  MsgWebhook,
  WebhookDelivery,
  WebhookDeliveryDetail,
  WebhookInput,
  WebhookKind,
  WebhookTestResult,
  WebhookUpdateInput
} from "./Webhook.ts"

const data = <S extends Schema.Top>(schema: S) => Schema.Struct({ data: schema })
const Bool = Schema.Literals(["true", "false"])

const listQuery = {
  url_contains: Schema.optionalKey(Schema.String),
  kind: Schema.optionalKey(WebhookKind),
  active: Schema.optionalKey(Bool),
  created_after: Schema.optionalKey(DateTimeQuery),
  created_before: Schema.optionalKey(DateTimeQuery),
  ...PagingQuery
}

const NumberParams = { phone_number_id: Schema.String }
const NumberWebhookParams = { phone_number_id: Schema.String, id: Schema.String }
const IdParams = { id: Schema.String }

export class WebhooksApi extends HttpApiGroup.make("webhooks")
  .add(
    HttpApiEndpoint.get("listForNumber", "/msg/phone_numbers/:phone_number_id/webhooks", {
      params: NumberParams,
      query: listQuery,
      success: ListResponse(MsgWebhook),
      error: NotFound
    }).annotateMerge(OpenApi.annotations({ summary: "List a phone number's webhooks" })),
    HttpApiEndpoint.post("createForNumber", "/msg/phone_numbers/:phone_number_id/webhooks", {
      params: NumberParams,
      payload: Schema.Struct({ msg_webhook: WebhookInput }),
      success: data(MsgWebhook).pipe(HttpApiSchema.status(201)),
      error: [NotFound, PaymentRequired, Unprocessable]
    }).annotateMerge(OpenApi.annotations({ summary: "Create a webhook for a phone number" })),
    HttpApiEndpoint.get("getForNumber", "/msg/phone_numbers/:phone_number_id/webhooks/:id", {
      params: NumberWebhookParams,
      success: data(MsgWebhook),
      error: NotFound
    }).annotateMerge(OpenApi.annotations({ summary: "Get a phone number's webhook" })),
    HttpApiEndpoint.patch("updateForNumber", "/msg/phone_numbers/:phone_number_id/webhooks/:id", {
      params: NumberWebhookParams,
      payload: Schema.Struct({ msg_webhook: WebhookUpdateInput }),
      success: data(MsgWebhook),
      error: [NotFound, PaymentRequired, Unprocessable]
    }).annotateMerge(OpenApi.annotations({ summary: "Update a phone number's webhook" })),
    HttpApiEndpoint.delete("deleteForNumber", "/msg/phone_numbers/:phone_number_id/webhooks/:id", {
      params: NumberWebhookParams,
      success: HttpApiSchema.NoContent,
      error: NotFound
    }).annotateMerge(OpenApi.annotations({ summary: "Delete a phone number's webhook" })),
    HttpApiEndpoint.get("list", "/msg/webhooks", {
      query: { ...listQuery, phone_number_id: Schema.optionalKey(Schema.String) },
      success: ListResponse(MsgWebhook),
      error: NotFound
    }).annotateMerge(OpenApi.annotations({ summary: "List webhooks" })),
    HttpApiEndpoint.post("create", "/msg/webhooks", {
      payload: Schema.Struct({ msg_webhook: WebhookInput }),
      success: data(MsgWebhook).pipe(HttpApiSchema.status(201)),
      error: [NotFound, PaymentRequired, Unprocessable]
    }).annotateMerge(OpenApi.annotations({ summary: "Create a webhook" })),
    HttpApiEndpoint.get("get", "/msg/webhooks/:id", { params: IdParams, success: data(MsgWebhook), error: NotFound }).annotateMerge(OpenApi.annotations({ summary: "Get a webhook" })),
    HttpApiEndpoint.patch("update", "/msg/webhooks/:id", {
      params: IdParams,
      payload: Schema.Struct({ msg_webhook: WebhookUpdateInput }),
      success: data(MsgWebhook),
      error: [NotFound, PaymentRequired, Unprocessable]
    }).annotateMerge(OpenApi.annotations({ summary: "Update a webhook" })),
    HttpApiEndpoint.delete("delete", "/msg/webhooks/:id", {
      params: IdParams,
      success: HttpApiSchema.NoContent,
      error: NotFound
    }).annotateMerge(OpenApi.annotations({ summary: "Delete a webhook" })),
    HttpApiEndpoint.post("test", "/msg/webhooks/:id/test", {
      params: IdParams,
      // No envelope (decisions 1.1); the body itself is optional.
      payload: [Schema.Struct({ event_type: Schema.optionalKey(Schema.NullOr(Schema.String)) }), Schema.Null],
      success: data(WebhookTestResult),
      error: [NotFound, Unprocessable]
    }).annotateMerge(OpenApi.annotations({ summary: "Send a test delivery to a webhook" }))
  )
  .middleware(Authentication)
  .prefix("/platform/v1")
  .annotateMerge(OpenApi.annotations({
    title: "Webhooks",
    description: "Signed deliveries of message events per phone number and of project events per project"
  }))
{}

export class WebhookDeliveriesApi extends HttpApiGroup.make("webhookDeliveries")
  .add(
    HttpApiEndpoint.get("list", "/webhook_deliveries", {
      query: {
        status: Schema.optionalKey(DeliveryStatus),
        event: Schema.optionalKey(Schema.String),
        webhook_id: Schema.optionalKey(Schema.String),
        errors_only: Schema.optionalKey(Bool),
        period: Schema.optionalKey(DeliveryPeriod),
        ...PagingQuery
      },
      success: ListResponse(WebhookDelivery)
    }).annotateMerge(OpenApi.annotations({ summary: "List webhook deliveries" })),
    HttpApiEndpoint.get("get", "/webhook_deliveries/:id", {
      params: IdParams,
      success: data(WebhookDeliveryDetail),
      error: NotFound
    }).annotateMerge(OpenApi.annotations({ summary: "Get a webhook delivery" })),
    HttpApiEndpoint.post("retry", "/webhook_deliveries/:id/retry", {
      params: IdParams,
      success: data(WebhookDelivery).pipe(HttpApiSchema.status(202)),
      error: [NotFound, Unprocessable]
    }).annotateMerge(OpenApi.annotations({ summary: "Retry a webhook delivery" }))
  )
  .middleware(Authentication)
  .prefix("/platform/v1")
  .annotateMerge(OpenApi.annotations({
    title: "Webhook deliveries",
    description: "The delivery log (30 days): status, attempts and the exact body; failed deliveries can be sent again"
  }))
{}
