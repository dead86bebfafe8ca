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

const data = <S extends Schema.Top>(schema: S) => Schema.Struct({ data: schema })
const IdParams = { id: Schema.String }

export class EventsApi extends HttpApiGroup.make("events")
  .add(
    HttpApiEndpoint.post("emit", "/events", {
      payload: EventInput,
      success: data(ProjectEvent).pipe(HttpApiSchema.status(201)),
      error: [PaymentRequired, Unprocessable]
    }).annotateMerge(OpenApi.annotations({ summary: "Emit a project event" })),
    HttpApiEndpoint.get("list", "/events", {
      query: {
        name: Schema.optionalKey(Schema.String),
        conversation_id: Schema.optionalKey(Schema.String),
        occurred_after: Schema.optionalKey(DateTimeQuery),
        occurred_before: Schema.optionalKey(DateTimeQuery),
        ...PagingQuery
      },
      success: ListResponse(ProjectEvent)
    }).annotateMerge(OpenApi.annotations({ summary: "List project events" }))
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
    }).annotateMerge(OpenApi.annotations({ summary: "List event definitions" })),
    HttpApiEndpoint.post("save", "/event-definitions", {
      payload: EventDefinitionInput,
      // 201 when created; 200 when the definition with that name was updated or restored.
      success: [data(EventDefinition).pipe(HttpApiSchema.status(201)), data(EventDefinition)],
      error: [PaymentRequired, Unprocessable]
    }).annotateMerge(OpenApi.annotations({ summary: "Create or update an event definition by name" })),
    HttpApiEndpoint.get("get", "/event-definitions/:id", { params: IdParams, success: data(EventDefinition), error: NotFound }).annotateMerge(OpenApi.annotations({ summary: "Get an event definition" })),
    HttpApiEndpoint.patch("update", "/event-definitions/:id", {
      params: IdParams,
      payload: EventDefinitionUpdateInput,
      success: data(EventDefinition),
      error: [NotFound, PaymentRequired, Unprocessable]
    }).annotateMerge(OpenApi.annotations({ summary: "Update an event definition" })),
    HttpApiEndpoint.delete("delete", "/event-definitions/:id", {
      params: IdParams,
      success: data(EventDefinitionDeletion).pipe(HttpApiSchema.status(202)),
      error: NotFound
    }).annotateMerge(OpenApi.annotations({ summary: "Delete an event definition (202: the deletion completes in the background)" }))
  )
  .middleware(Authentication)
  .prefix("/platform/v1")
  .annotateMerge(OpenApi.annotations({
    title: "Event definitions",
    description: "Names, meanings and expected properties of project events; deletion is asynchronous"
  }))
{}
