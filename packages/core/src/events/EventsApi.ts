/**
 * The HTTP contract of project events and event definitions (spec "Project
 * events", decisions 4.5). Bodies carry no envelope (decisions 1.1).
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Authentication } from "../http/Middleware.ts"
import { NotFound, PaymentRequired, Unprocessable } from "../shared/ApiError.ts"
import { ListResponse, DateTimeQuery, PagingQuery } from "../shared/Pagination.ts"
import {
  EventDefinitionDeletion,
  EventDefinition,
  EventDefinitionInput,
  EventDefinitionUpdateInput,
  EventInput,
  ProjectEvent
} from "./Event.ts"
import { operation } from "../http/Operation.ts"

const data = <S extends Schema.Top>(schema: S) => Schema.Struct({ data: schema })
const IdParams = { id: Schema.String }

export class EventsApi extends HttpApiGroup.make("events")
  .add(
    HttpApiEndpoint.post("emit", "/events", {
      payload: EventInput.annotate({
        examples: [{ name: "order.shipped", conversation_id: null, properties: { order_id: "A-1042", total: 42.5 } }]
      }),
      success: data(ProjectEvent).pipe(HttpApiSchema.status(201)),
      error: [PaymentRequired, Unprocessable]
    }).annotateMerge(operation(
      "Emit a project event",
      "Records a project event (`name`, `properties`, optional `occurred_at`, contact or conversation). " +
        "Checked against the event limits (lowercase name, 25 keys, 1 KB values, 8 KB); starts matching " +
        "`project_event` triggers and webhook deliveries."
    )),
    HttpApiEndpoint.get("list", "/events", {
      query: {
        name: Schema.optionalKey(Schema.String),
        conversation_id: Schema.optionalKey(Schema.String),
        occurred_after: Schema.optionalKey(DateTimeQuery),
        occurred_before: Schema.optionalKey(DateTimeQuery),
        ...PagingQuery
      },
      success: ListResponse(ProjectEvent)
    }).annotateMerge(operation(
      "List project events",
      "Project events, newest first, filtered by name, contact, conversation and time; cursor paging."
    ))
  )
  .middleware(Authentication)
  .prefix("/platform/v1")
  .annotateMerge(OpenApi.annotations({
    title: "Project events",
    description: "Timestamped custom records (name and flat properties); page mode by default, cursor mode with limit"
  }))
{}

export class EventDefinitionsApi extends HttpApiGroup.make("eventDefinitions")
  .add(
    HttpApiEndpoint.get("list", "/event-definitions", {
      query: { include_archived: Schema.optionalKey(Schema.Literals(["true", "false"])) },
      success: data(Schema.Array(EventDefinition))
    }).annotateMerge(operation(
      "List event definitions",
      "Event definitions: each name the project has emitted or declared, with its description and " +
        "property types."
    )),
    HttpApiEndpoint.post("save", "/event-definitions", {
      payload: EventDefinitionInput,
      // 201 when created; 200 when the definition with that name was updated or restored.
      success: [data(EventDefinition).pipe(HttpApiSchema.status(201)), data(EventDefinition)],
      error: [PaymentRequired, Unprocessable]
    }).annotateMerge(operation(
      "Create or update an event definition by name",
      "Declares or updates the definition of an event name (upsert by name)."
    )),
    HttpApiEndpoint.get("get", "/event-definitions/:id", { params: IdParams, success: data(EventDefinition), error: NotFound }).annotateMerge(operation(
      "Get an event definition",
      "One event definition by id."
    )),
    HttpApiEndpoint.patch("update", "/event-definitions/:id", {
      params: IdParams,
      payload: EventDefinitionUpdateInput,
      success: data(EventDefinition),
      error: [NotFound, PaymentRequired, Unprocessable]
    }).annotateMerge(operation(
      "Update an event definition",
      "Changes a definition's description or property types."
    )),
    HttpApiEndpoint.delete("delete", "/event-definitions/:id", {
      params: IdParams,
      success: data(EventDefinitionDeletion).pipe(HttpApiSchema.status(202)),
      error: NotFound
    }).annotateMerge(operation(
      "Delete an event definition (202: the deletion completes in the background)",
      "Deletes a definition and its events in the background (202); emitting the name answers 422 until " +
        "it completes."
    ))
  )
  .middleware(Authentication)
  .prefix("/platform/v1")
  .annotateMerge(OpenApi.annotations({
    title: "Event definitions",
    description: "Names, meanings and expected properties of project events; deletion is asynchronous"
  }))
{}
