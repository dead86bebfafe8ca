/**
 * The HTTP contract of webhooks (spec "Webhooks", decisions 4.6): number-
 * level and project-level registrations in the `msg_webhook` envelope, test
 * deliveries, and the delivery log with manual retries.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Authentication } from "../http/Middleware.ts"
import { documentedEnum } from "../shared/DocumentedEnum.ts"
import { NotFound, PaymentRequired, Unprocessable } from "../shared/ApiError.ts"
import { ListResponse, DateTimeQuery, PagingQuery } from "../shared/Pagination.ts"
import {
  DeliveryPeriod,
  DeliveryStatus,
  MsgWebhook,
  NUMBER_EVENTS,
  PROJECT_EVENTS,
  WebhookDelivery,
  WebhookDeliveryDetail,
  WebhookInput,
  WebhookKind,
  WebhookTestResult,
  WebhookUpdateInput
} from "./Webhook.ts"
import { operation } from "../http/Operation.ts"

const data = <S extends Schema.Top>(schema: S) => Schema.Struct({ data: schema })
const Bool = Schema.Literals(["true", "false"])
const CreatePayload = Schema.Struct({ msg_webhook: WebhookInput }).annotate({
  examples: [{
    msg_webhook: {
      url: "https://example.com/hooks/parley",
      secret_key: "a-long-random-signing-secret",
      events: ["msg.message.received", "workflow.execution.failed"]
    }
  }]
})

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
    }).annotateMerge(operation(
      "List a phone number's webhooks",
      "The webhooks registered on one phone number."
    )),
    HttpApiEndpoint.post("createForNumber", "/msg/phone_numbers/:phone_number_id/webhooks", {
      params: NumberParams,
      payload: CreatePayload,
      success: data(MsgWebhook).pipe(HttpApiSchema.status(201)),
      error: [NotFound, PaymentRequired, Unprocessable]
    }).annotateMerge(operation(
      "Create a webhook for a phone number",
      "Registers a webhook for one number's events; the answer holds its signing `secret_key`."
    )),
    HttpApiEndpoint.get("getForNumber", "/msg/phone_numbers/:phone_number_id/webhooks/:id", {
      params: NumberWebhookParams,
      success: data(MsgWebhook),
      error: NotFound
    }).annotateMerge(operation(
      "Get a phone number's webhook",
      "One webhook of the number."
    )),
    HttpApiEndpoint.patch("updateForNumber", "/msg/phone_numbers/:phone_number_id/webhooks/:id", {
      params: NumberWebhookParams,
      payload: Schema.Struct({ msg_webhook: WebhookUpdateInput }),
      success: data(MsgWebhook),
      error: [NotFound, PaymentRequired, Unprocessable]
    }).annotateMerge(operation(
      "Update a phone number's webhook",
      "Changes the number's webhook: URL, events, headers, active state, buffering."
    )),
    HttpApiEndpoint.delete("deleteForNumber", "/msg/phone_numbers/:phone_number_id/webhooks/:id", {
      params: NumberWebhookParams,
      success: HttpApiSchema.NoContent,
      error: NotFound
    }).annotateMerge(operation(
      "Delete a phone number's webhook",
      "Removes the number's webhook; queued deliveries to it are dropped."
    )),
    HttpApiEndpoint.get("list", "/msg/webhooks", {
      query: { ...listQuery, phone_number_id: Schema.optionalKey(Schema.String) },
      success: ListResponse(MsgWebhook),
      error: NotFound
    }).annotateMerge(operation(
      "List webhooks",
      "The project's webhooks (project-wide and per number)."
    )),
    HttpApiEndpoint.post("create", "/msg/webhooks", {
      payload: CreatePayload,
      success: data(MsgWebhook).pipe(HttpApiSchema.status(201)),
      error: [NotFound, PaymentRequired, Unprocessable]
    }).annotateMerge(operation(
      "Create a webhook",
      "Registers a webhook: the events to receive, URL (private addresses refused), payload " +
        "version, optional buffering. Deliveries are signed with its `secret_key`."
    )),
    HttpApiEndpoint.get("get", "/msg/webhooks/:id", { params: IdParams, success: data(MsgWebhook), error: NotFound }).annotateMerge(operation(
      "Get a webhook",
      "One webhook with its status (`active`, or paused after repeated failures)."
    )),
    HttpApiEndpoint.patch("update", "/msg/webhooks/:id", {
      params: IdParams,
      payload: Schema.Struct({ msg_webhook: WebhookUpdateInput }),
      success: data(MsgWebhook),
      error: [NotFound, PaymentRequired, Unprocessable]
    }).annotateMerge(operation(
      "Update a webhook",
      "Changes a webhook; reactivating a paused one resumes deliveries."
    )),
    HttpApiEndpoint.delete("delete", "/msg/webhooks/:id", {
      params: IdParams,
      success: HttpApiSchema.NoContent,
      error: NotFound
    }).annotateMerge(operation(
      "Delete a webhook",
      "Removes a webhook; queued deliveries to it are dropped."
    )),
    HttpApiEndpoint.post("test", "/msg/webhooks/:id/test", {
      params: IdParams,
      // No envelope (decisions 1.1); the body itself is optional.
      payload: [Schema.Struct({ event_type: Schema.optionalKey(Schema.NullOr(documentedEnum([...NUMBER_EVENTS, ...PROJECT_EVENTS]))) }), Schema.Null],
      success: data(WebhookTestResult),
      error: [NotFound, Unprocessable]
    }).annotateMerge(operation(
      "Send a test delivery to a webhook",
      "Sends a signed test delivery now and answers with the receiver's status and timing."
    ))
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
    }).annotateMerge(operation(
      "List webhook deliveries",
      "Delivery log: each delivery with event, status, attempts and the receiver's answers, filtered by " +
        "webhook, status and event."
    )),
    HttpApiEndpoint.get("get", "/webhook_deliveries/:id", {
      params: IdParams,
      success: data(WebhookDeliveryDetail),
      error: NotFound
    }).annotateMerge(operation(
      "Get a webhook delivery",
      "One delivery with its attempts (request, status, response body capped)."
    )),
    HttpApiEndpoint.post("retry", "/webhook_deliveries/:id/retry", {
      params: IdParams,
      success: data(WebhookDelivery).pipe(HttpApiSchema.status(202)),
      error: [NotFound, Unprocessable]
    }).annotateMerge(operation(
      "Retry a webhook delivery",
      "Queues a failed delivery again, as a new attempt of the same delivery."
    ))
  )
  .middleware(Authentication)
  .prefix("/platform/v1")
  .annotateMerge(OpenApi.annotations({
    title: "Webhook deliveries",
    description: "The delivery log (30 days): status, attempts and the exact body; failed deliveries can be sent again"
  }))
{}
