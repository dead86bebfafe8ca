/** The HTTP contract of contact erasure (decisions 4.8): `DELETE /msg/contacts/<identifier>`, 204 once queued. */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Authentication } from "../http/Middleware.ts"
import { NotFound, Unprocessable } from "../shared/ApiError.ts"

export class MsgContactsApi extends HttpApiGroup.make("msgContacts")
  .add(
    HttpApiEndpoint.delete("erase", "/msg/contacts/:identifier", {
      params: { identifier: Schema.String },
      success: HttpApiSchema.NoContent,
      error: [NotFound, Unprocessable]
    }).annotateMerge(OpenApi.annotations({
      summary: "Erase a contact",
      description: "The identifier is the contact's id, its phone number, or its business-scoped id (or that id's parent). " +
        "Answers 204 once the erasure is queued (again while it is queued or running); the contact, its conversations, " +
        "messages, stored media, executions with their step events, linked project events and the delivery logs that " +
        "mention it are then erased in the background."
    }))
  )
  .middleware(Authentication)
  .prefix("/platform/v1")
  .annotateMerge(OpenApi.annotations({ title: "Contacts", description: "Erasure of a contact and everything stored about it" }))
{}
