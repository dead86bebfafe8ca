/**
 * The HTTP contract of workflows and triggers (Platform API) and of flows (the
 * older surface). Host handlers, `/openapi.json` and the typed client all
 * derive from these declarations.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Authentication } from "../http/Middleware.ts"
import { Conflict, NotFound, Unprocessable } from "../shared/ApiError.ts"
import { ListResponse, PageResponse, DateTimeQuery, PagingQuery } from "../shared/Pagination.ts"
import { Trigger, TriggerInput } from "./Trigger.ts"
import {
  Flow,
  Workflow,
  WorkflowCreateInput,
  WorkflowStatus,
  WorkflowUpdateInput,
  WorkflowWithDefinition
} from "./Workflow.ts"

const data = <S extends Schema.Top>(schema: S) => Schema.Struct({ data: schema })
const IdParams = { id: Schema.String }

export class WorkflowsApi extends HttpApiGroup.make("workflows")
  .add(
    HttpApiEndpoint.get("list", "/workflows", {
      query: {
        status: Schema.optionalKey(WorkflowStatus),
        name_contains: Schema.optionalKey(Schema.String),
        created_after: Schema.optionalKey(DateTimeQuery),
        created_before: Schema.optionalKey(DateTimeQuery),
        ...PagingQuery
      },
      success: ListResponse(Workflow)
    }).annotateMerge(OpenApi.annotations({ summary: "List workflows" })),
    HttpApiEndpoint.post("create", "/workflows", {
      payload: Schema.Struct({ workflow: WorkflowCreateInput }),
      success: data(Workflow).pipe(HttpApiSchema.status(201)),
      error: [Unprocessable]
    }).annotateMerge(OpenApi.annotations({ summary: "Create a workflow" })),
    HttpApiEndpoint.get("get", "/workflows/:id", { params: IdParams, success: data(Workflow), error: NotFound }).annotateMerge(OpenApi.annotations({ summary: "Get a workflow" })),
    HttpApiEndpoint.patch("update", "/workflows/:id", {
      params: IdParams,
      // `flow` is the deprecated alias of the envelope (decisions 9).
      payload: Schema.Struct({
        workflow: Schema.optionalKey(WorkflowUpdateInput),
        flow: Schema.optionalKey(WorkflowUpdateInput)
      }),
      success: data(Workflow),
      error: [NotFound, Unprocessable, Conflict]
    }).annotateMerge(OpenApi.annotations({ summary: "Update a workflow (with its `lock_version`)" })),
    HttpApiEndpoint.delete("delete", "/workflows/:id", {
      params: IdParams,
      success: HttpApiSchema.NoContent,
      error: [NotFound, Unprocessable]
    }).annotateMerge(OpenApi.annotations({ summary: "Delete a workflow" })),
    HttpApiEndpoint.get("definition", "/workflows/:id/definition", {
      params: IdParams,
      success: data(WorkflowWithDefinition),
      error: NotFound
    }).annotateMerge(OpenApi.annotations({ summary: "Get a workflow's definition (nodes and edges)" }))
  )
  .middleware(Authentication)
  .prefix("/platform/v1")
  .annotateMerge(OpenApi.annotations({ title: "Workflows", description: "Workflow graphs and their lifecycle" }))
{}

export class TriggersApi extends HttpApiGroup.make("triggers")
  .add(
    HttpApiEndpoint.get("list", "/workflows/:id/triggers", {
      params: IdParams,
      success: data(Schema.Array(Trigger)),
      error: NotFound
    }).annotateMerge(OpenApi.annotations({ summary: "List a workflow's triggers" })),
    HttpApiEndpoint.post("create", "/workflows/:id/triggers", {
      params: IdParams,
      payload: Schema.Struct({ trigger: TriggerInput }),
      success: data(Trigger).pipe(HttpApiSchema.status(201)),
      error: [NotFound, Unprocessable]
    }).annotateMerge(OpenApi.annotations({ summary: "Add a trigger to a workflow" })),
    HttpApiEndpoint.put("replace", "/workflows/:id/triggers", {
      params: IdParams,
      payload: Schema.Struct({ triggers: Schema.Array(TriggerInput) }),
      success: data(Schema.Array(Trigger)),
      error: [NotFound, Unprocessable]
    }).annotateMerge(OpenApi.annotations({ summary: "Replace all of a workflow's triggers" })),
    HttpApiEndpoint.patch("update", "/triggers/:id", {
      params: IdParams,
      payload: Schema.Struct({ trigger: Schema.Struct({ active: Schema.optionalKey(Schema.Boolean) }) }),
      success: data(Trigger),
      error: [NotFound, Unprocessable]
    }).annotateMerge(OpenApi.annotations({ summary: "Update a trigger" })),
    HttpApiEndpoint.delete("delete", "/triggers/:id", {
      params: IdParams,
      success: HttpApiSchema.NoContent,
      error: NotFound
    }).annotateMerge(OpenApi.annotations({ summary: "Delete a trigger" }))
  )
  .middleware(Authentication)
  .prefix("/platform/v1")
  .annotateMerge(OpenApi.annotations({ title: "Triggers", description: "What starts a workflow automatically" }))
{}

/** The older, flow-oriented surface over the same records (decisions 1.5, 4.13). */
export class FlowsApi extends HttpApiGroup.make("flows")
  .add(
    HttpApiEndpoint.get("list", "/flows", {
      query: {
        "q[status_eq]": Schema.optionalKey(WorkflowStatus),
        page: PagingQuery.page,
        per_page: PagingQuery.per_page
      },
      success: PageResponse(Flow)
    }).annotateMerge(OpenApi.annotations({ summary: "List flows (older surface)" })),
    HttpApiEndpoint.get("get", "/flows/:id", { params: IdParams, success: data(Flow), error: NotFound }).annotateMerge(OpenApi.annotations({ summary: "Get a flow (older surface)" })),
    HttpApiEndpoint.patch("update", "/flows/:id", {
      params: IdParams,
      payload: Schema.Struct({
        flow: Schema.Struct({
          name: Schema.optionalKey(Schema.String),
          description: Schema.optionalKey(Schema.NullOr(Schema.String)),
          definition: Schema.optionalKey(Schema.Unknown),
          lock_version: Schema.optionalKey(Schema.NullOr(Schema.Int))
        })
      }),
      success: Schema.Struct({ data: Flow, message: Schema.String }),
      error: [NotFound, Unprocessable, Conflict]
    }).annotateMerge(OpenApi.annotations({ summary: "Update a flow (older surface)" }))
  )
  .middleware(Authentication)
  .prefix("/api/v1")
  .annotateMerge(OpenApi.annotations({ title: "Flows (older surface)", description: "Flows are workflows" }))
{}
