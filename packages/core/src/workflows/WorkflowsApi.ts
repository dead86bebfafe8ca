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
import { operation } from "../http/Operation.ts"

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
    }).annotateMerge(operation(
      "List workflows",
      "The project's workflows, newest first, with cursor paging; filter by `status`. Each record " +
        "carries `execution_count` and `last_executed_at`."
    )),
    HttpApiEndpoint.post("create", "/workflows", {
      payload: Schema.Struct({ workflow: WorkflowCreateInput }),
      success: data(Workflow).pipe(HttpApiSchema.status(201)),
      error: [Unprocessable]
    }).annotateMerge(operation(
      "Create a workflow",
      "Creates a workflow in `draft` (or the given status) from `workflow { name, definition?, ... }`. " +
        "A definition is validated whole: the first problem answers 422 with `details`. " +
        "The slug comes from the name."
    )),
    HttpApiEndpoint.get("get", "/workflows/:id", { params: IdParams, success: data(Workflow), error: NotFound }).annotateMerge(operation(
      "Get a workflow",
      "One workflow of the project by id; another project's id answers 404."
    )),
    HttpApiEndpoint.patch("update", "/workflows/:id", {
      params: IdParams,
      // `flow` is the deprecated alias of the envelope (decisions 9).
      payload: Schema.Struct({
        workflow: Schema.optionalKey(WorkflowUpdateInput),
        flow: Schema.optionalKey(WorkflowUpdateInput)
      }),
      success: data(Workflow),
      error: [NotFound, Unprocessable, Conflict]
    }).annotateMerge(operation(
      "Update a workflow (with its `lock_version`)",
      "Changes name, description, status, settings or definition. Send the `lock_version` you read: a " +
        "stale one answers 409. Running and waiting executions keep the graph they started with."
    )),
    HttpApiEndpoint.delete("delete", "/workflows/:id", {
      params: IdParams,
      success: HttpApiSchema.NoContent,
      error: [NotFound, Unprocessable]
    }).annotateMerge(operation(
      "Delete a workflow",
      "Deletes the workflow and its triggers. Its running and waiting executions are ended first " +
        "(`workflow_deleted`); a parent that called it continues."
    )),
    HttpApiEndpoint.get("definition", "/workflows/:id/definition", {
      params: IdParams,
      success: data(WorkflowWithDefinition),
      error: NotFound
    }).annotateMerge(operation(
      "Get a workflow's definition (nodes and edges)",
      "The workflow's graph: its `nodes` and `edges` as last saved."
    ))
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
    }).annotateMerge(operation(
      "List a workflow's triggers",
      "What starts this workflow: `inbound_message` (a number's new conversations), `project_event` " +
        "(with a property filter) and `msg_event` (observer runs)."
    )),
    HttpApiEndpoint.post("create", "/workflows/:id/triggers", {
      params: IdParams,
      payload: Schema.Struct({ trigger: TriggerInput }),
      success: data(Trigger).pipe(HttpApiSchema.status(201)),
      error: [NotFound, Unprocessable]
    }).annotateMerge(operation(
      "Add a trigger to a workflow",
      "Adds one trigger. An `inbound_message` trigger on a number another active workflow already " +
        "claims answers 422 naming that workflow."
    )),
    HttpApiEndpoint.put("replace", "/workflows/:id/triggers", {
      params: IdParams,
      payload: Schema.Struct({ triggers: Schema.Array(TriggerInput) }),
      success: data(Schema.Array(Trigger)),
      error: [NotFound, Unprocessable]
    }).annotateMerge(operation(
      "Replace all of a workflow's triggers",
      "Replaces every trigger of the workflow in one step (an empty list removes them all); all are " +
        "validated before any is written."
    )),
    HttpApiEndpoint.patch("update", "/triggers/:id", {
      params: IdParams,
      payload: Schema.Struct({ trigger: Schema.Struct({ active: Schema.optionalKey(Schema.Boolean) }) }),
      success: data(Trigger),
      error: [NotFound, Unprocessable]
    }).annotateMerge(operation(
      "Update a trigger",
      "Changes a trigger's config or turns it on or off (`active`)."
    )),
    HttpApiEndpoint.delete("delete", "/triggers/:id", {
      params: IdParams,
      success: HttpApiSchema.NoContent,
      error: NotFound
    }).annotateMerge(operation(
      "Delete a trigger",
      "Removes a trigger; executions it started are not affected."
    ))
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
    }).annotateMerge(operation(
      "List flows (older surface)",
      "The older surface's view of workflows (flows), page-numbered with `meta`."
    )),
    HttpApiEndpoint.get("get", "/flows/:id", { params: IdParams, success: data(Flow), error: NotFound }).annotateMerge(operation(
      "Get a flow (older surface)",
      "One flow of the older surface, with its definition."
    )),
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
    }).annotateMerge(operation(
      "Update a flow (older surface)",
      "Updates a flow; answers `message: Flow updated successfully` next to `data`. Definitions follow " +
        "the graph rules and the `lock_version` rule."
    ))
  )
  .middleware(Authentication)
  .prefix("/api/v1")
  .annotateMerge(OpenApi.annotations({ title: "Flows (older surface)", description: "Flows are workflows" }))
{}
