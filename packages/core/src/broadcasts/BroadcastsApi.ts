/** The HTTP contract of broadcasts (decisions 4.9) and the older surface's `GET /msg_broadcasts` (1.5). */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Authentication } from "../http/Middleware.ts"
import { NotFound, Unprocessable } from "../shared/ApiError.ts"
import { PageResponse, PagingQuery } from "../shared/Pagination.ts"
import { BroadcastStatus, MsgBroadcast, MsgBroadcastCreateInput, MsgBroadcastRecipient, RecipientStatus } from "./Broadcast.ts"

const data = <S extends Schema.Top>(schema: S) => Schema.Struct({ data: schema })
const IdParams = { id: Schema.String }
const PageQuery = { page: PagingQuery.page, per_page: PagingQuery.per_page }

export const RecipientsAddedBody = Schema.Struct({
  added: Schema.Int,
  duplicates: Schema.Int,
  errors: Schema.Array(Schema.String)
})

export class MsgBroadcastsApi extends HttpApiGroup.make("msgBroadcasts")
  .add(
    HttpApiEndpoint.get("list", "/msg/broadcasts", {
      query: {
        status: Schema.optionalKey(BroadcastStatus),
        msg_config_id: Schema.optionalKey(Schema.String),
        msg_template_id: Schema.optionalKey(Schema.String),
        ...PageQuery
      },
      success: PageResponse(MsgBroadcast)
    }).annotateMerge(OpenApi.annotations({ summary: "List broadcasts" })),
    HttpApiEndpoint.post("create", "/msg/broadcasts", {
      payload: Schema.Struct({ msg_broadcast: MsgBroadcastCreateInput }),
      success: data(MsgBroadcast).pipe(HttpApiSchema.status(201)),
      error: Unprocessable
    }).annotateMerge(OpenApi.annotations({ summary: "Create a draft broadcast" })),
    HttpApiEndpoint.get("get", "/msg/broadcasts/:id", { params: IdParams, success: data(MsgBroadcast), error: NotFound })
      .annotateMerge(OpenApi.annotations({ summary: "Get a broadcast with its counters" })),
    HttpApiEndpoint.patch("update", "/msg/broadcasts/:id", {
      params: IdParams,
      payload: Schema.Struct({ status: Schema.optionalKey(Schema.String), name: Schema.optionalKey(Schema.String) }),
      success: data(MsgBroadcast),
      error: [NotFound, Unprocessable]
    }).annotateMerge(OpenApi.annotations({ summary: "Stop a sending broadcast, move a scheduled one back to draft, rename a draft" })),
    HttpApiEndpoint.post("send", "/msg/broadcasts/:id/send", {
      params: IdParams,
      success: data(MsgBroadcast).pipe(HttpApiSchema.status(202)),
      error: [NotFound, Unprocessable]
    }).annotateMerge(OpenApi.annotations({ summary: "Start sending now" })),
    HttpApiEndpoint.post("schedule", "/msg/broadcasts/:id/schedule", {
      params: IdParams,
      payload: Schema.Struct({ scheduled_at: Schema.optionalKey(Schema.String) }),
      success: data(MsgBroadcast).pipe(HttpApiSchema.status(202)),
      error: [NotFound, Unprocessable]
    }).annotateMerge(OpenApi.annotations({ summary: "Schedule sending (1 minute to 30 days ahead)" })),
    HttpApiEndpoint.post("cancel", "/msg/broadcasts/:id/cancel", {
      params: IdParams,
      success: data(MsgBroadcast),
      error: [NotFound, Unprocessable]
    }).annotateMerge(OpenApi.annotations({ summary: "Cancel a schedule (back to draft)" })),
    HttpApiEndpoint.post("addRecipients", "/msg/broadcasts/:id/recipients", {
      params: IdParams,
      payload: Schema.Struct({ recipients: Schema.Array(Schema.Unknown) }),
      success: data(RecipientsAddedBody).pipe(HttpApiSchema.status(201)),
      error: [NotFound, Unprocessable]
    }).annotateMerge(OpenApi.annotations({ summary: "Add 1 to 1,000 recipients to a draft" })),
    HttpApiEndpoint.get("listRecipients", "/msg/broadcasts/:id/recipients", {
      params: IdParams,
      query: { status: Schema.optionalKey(RecipientStatus), ...PageQuery },
      success: PageResponse(MsgBroadcastRecipient),
      error: NotFound
    }).annotateMerge(OpenApi.annotations({ summary: "List a broadcast's recipients" })),
    HttpApiEndpoint.delete("clearRecipients", "/msg/broadcasts/:id/recipients", {
      params: IdParams,
      success: data(MsgBroadcast),
      error: [NotFound, Unprocessable]
    }).annotateMerge(OpenApi.annotations({ summary: "Remove every recipient of a draft or scheduled broadcast" }))
  )
  .middleware(Authentication)
  .prefix("/platform/v1")
  .annotateMerge(OpenApi.annotations({ title: "Broadcasts", description: "Template sends to many recipients with delivery statistics" }))
{}

/** The older surface's list over the same records (decisions 1.5). */
export class LegacyBroadcastsApi extends HttpApiGroup.make("legacyBroadcasts")
  .add(
    HttpApiEndpoint.get("list", "/msg_broadcasts", {
      query: {
        "q[msg_config_id_eq]": Schema.optionalKey(Schema.String),
        "q[msg_template_id_eq]": Schema.optionalKey(Schema.String),
        ...PageQuery
      },
      success: PageResponse(MsgBroadcast)
    }).annotateMerge(OpenApi.annotations({ summary: "List broadcasts (older surface)" }))
  )
  .middleware(Authentication)
  .prefix("/api/v1")
  .annotateMerge(OpenApi.annotations({ title: "Broadcasts (older surface)", description: "msg_broadcasts are broadcasts" }))
{}
