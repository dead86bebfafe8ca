/** The HTTP contract of broadcasts (decisions 4.9) and the older surface's `GET /msg_broadcasts` (1.5). */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Authentication } from "../http/Middleware.ts"
import { operation } from "../http/Operation.ts"
import { NotFound, Unprocessable } from "../shared/ApiError.ts"
import { PageResponse, PagingQuery } from "../shared/Pagination.ts"
import { documentedEnum } from "../shared/DocumentedEnum.ts"
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
    }).annotateMerge(operation("List broadcasts", "The project's broadcasts with their counters, newest first, in page mode; filtered by `status`, `msg_config_id` and `msg_template_id`.")),
    HttpApiEndpoint.post("create", "/msg/broadcasts", {
      payload: Schema.Struct({ msg_broadcast: MsgBroadcastCreateInput }),
      success: data(MsgBroadcast).pipe(HttpApiSchema.status(201)),
      error: Unprocessable
    }).annotateMerge(operation("Create a draft broadcast", "From `msg_broadcast { name, msg_config_id | phone_number_id, msg_template_id, scheduled_at? }`: a production number of the project and an approved template of its business account (else 422 `Template not linked to number`).")),
    HttpApiEndpoint.get("get", "/msg/broadcasts/:id", { params: IdParams, success: data(MsgBroadcast), error: NotFound })
      .annotateMerge(operation("Get a broadcast", "One broadcast with its counters and `stats`, read now from its recipients' messages (delivered, read, responded within 24 hours).")),
    HttpApiEndpoint.patch("update", "/msg/broadcasts/:id", {
      params: IdParams,
      payload: Schema.Struct({ status: Schema.optionalKey(documentedEnum(["stopped", "draft"])), name: Schema.optionalKey(Schema.String) }),
      success: data(MsgBroadcast),
      error: [NotFound, Unprocessable]
    }).annotateMerge(operation("Update a broadcast", "`status` `stopped` stops a sending broadcast (pending recipients stay pending), `status` `draft` moves a scheduled one back; `name` renames a draft. Other moves answer 422.")),
    HttpApiEndpoint.post("send", "/msg/broadcasts/:id/send", {
      params: IdParams,
      success: data(MsgBroadcast).pipe(HttpApiSchema.status(202)),
      error: [NotFound, Unprocessable]
    }).annotateMerge(operation("Send a broadcast now", "Moves a draft or scheduled broadcast with recipients to `sending` (202); the sender paces it inside the number's throughput and messaging limit.")),
    HttpApiEndpoint.post("schedule", "/msg/broadcasts/:id/schedule", {
      params: IdParams,
      payload: Schema.Struct({ scheduled_at: Schema.optionalKey(Schema.String) }),
      success: data(MsgBroadcast).pipe(HttpApiSchema.status(202)),
      error: [NotFound, Unprocessable]
    }).annotateMerge(operation("Schedule a broadcast", "`{ scheduled_at }` at least 1 minute and at most 30 days ahead (or the one given at creation); the broadcast needs recipients.")),
    HttpApiEndpoint.post("cancel", "/msg/broadcasts/:id/cancel", {
      params: IdParams,
      success: data(MsgBroadcast),
      error: [NotFound, Unprocessable]
    }).annotateMerge(operation("Cancel a schedule", "Moves a scheduled broadcast back to draft and clears `scheduled_at`.")),
    HttpApiEndpoint.post("addRecipients", "/msg/broadcasts/:id/recipients", {
      params: IdParams,
      payload: Schema.Struct({ recipients: Schema.Array(Schema.Unknown) }),
      success: data(RecipientsAddedBody).pipe(HttpApiSchema.status(201)),
      error: [NotFound, Unprocessable]
    }).annotateMerge(operation("Add recipients", "`{ recipients: [{ phone_number | contact_id, template_parameters }] }`, 1 to 1,000 per call, to a draft; parameters are checked against the template now. Answers `{ added, duplicates, errors }`, each error `Recipient <index>: <reason>`.")),
    HttpApiEndpoint.get("listRecipients", "/msg/broadcasts/:id/recipients", {
      params: IdParams,
      query: { status: Schema.optionalKey(RecipientStatus), ...PageQuery },
      success: PageResponse(MsgBroadcastRecipient),
      error: NotFound
    }).annotateMerge(operation("List recipients", "A broadcast's recipients, newest first, in page mode, filtered by `status`; with each one's message id and times.")),
    HttpApiEndpoint.delete("clearRecipients", "/msg/broadcasts/:id/recipients", {
      params: IdParams,
      success: data(MsgBroadcast),
      error: [NotFound, Unprocessable]
    }).annotateMerge(operation("Clear recipients", "Removes every recipient of a draft or scheduled broadcast; answers the broadcast."))
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
    }).annotateMerge(operation("List broadcasts (older surface)", "The same records as `GET /platform/v1/msg/broadcasts`, in page mode, filtered by `q[msg_config_id_eq]` and `q[msg_template_id_eq]`."))
  )
  .middleware(Authentication)
  .prefix("/api/v1")
  .annotateMerge(OpenApi.annotations({ title: "Broadcasts (older surface)", description: "msg_broadcasts are broadcasts" }))
{}
