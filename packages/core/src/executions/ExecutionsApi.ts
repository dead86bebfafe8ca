/**
 * The HTTP contract of workflow executions and their step events (decisions
 * 4.2) and the older surface's flow execution read (4.13).
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Authentication } from "../http/Middleware.ts"
import { Conflict, NotFound, Unprocessable } from "../shared/ApiError.ts"
import { ListResponse, DateTimeQuery, PagingQuery } from "../shared/Pagination.ts"
import { TriggerType } from "../workflows/Trigger.ts"
import { ExecutionDetail, ExecutionStatus, ExecutionSummary, FlowExecution, StepEvent, WaitingReason } from "./Execution.ts"
import { WorkflowVariables } from "./Variables.ts"

const data = <S extends Schema.Top>(schema: S) => Schema.Struct({ data: schema })
const IdParams = { id: Schema.String }

export const StartRequest = Schema.Struct({
  phone_number: Schema.optionalKey(Schema.NullOr(Schema.String)),
  recipient: Schema.optionalKey(Schema.NullOr(Schema.String)),
  phone_number_id: Schema.optionalKey(Schema.NullOr(Schema.String)),
  msg_config_id: Schema.optionalKey(Schema.NullOr(Schema.Union([Schema.String, Schema.Finite]))),
  variables: Schema.optionalKey(Schema.NullOr(Schema.Record(Schema.String, Schema.Unknown))),
  context: Schema.optionalKey(Schema.NullOr(Schema.Record(Schema.String, Schema.Unknown))),
  initial_data: Schema.optionalKey(Schema.Unknown)
})

export const StartAcknowledgement = Schema.Struct({
  message: Schema.String,
  workflow_id: Schema.String,
  id: Schema.String,
  tracking_id: Schema.String
})

export const ResumeRequest = Schema.Struct({
  message: Schema.optionalKey(Schema.Struct({
    kind: Schema.optionalKey(Schema.Literals(["payload", "text"])),
    data: Schema.optionalKey(Schema.Unknown)
  })),
  variables: Schema.optionalKey(Schema.NullOr(Schema.Record(Schema.String, Schema.Unknown)))
})

export const ResumeAnswer = Schema.Struct({
  ...ExecutionSummary.fields,
  requested_execution_id: Schema.String,
  parent_flow_execution_id: Schema.NullOr(Schema.String)
})

export class ExecutionsApi extends HttpApiGroup.make("executions")
  .add(
    HttpApiEndpoint.post("start", "/workflows/:id/executions", {
      params: IdParams,
      payload: Schema.Struct({ workflow_execution: StartRequest }),
      success: data(StartAcknowledgement).pipe(HttpApiSchema.status(202)),
      error: [NotFound, Unprocessable]
    }).annotateMerge(OpenApi.annotations({ summary: "Start an execution of a workflow" })),
    HttpApiEndpoint.get("list", "/workflows/:id/executions", {
      params: IdParams,
      query: {
        status: Schema.optionalKey(ExecutionStatus),
        waiting_reason: Schema.optionalKey(Schema.Union([WaitingReason, Schema.Literal("timeout")])),
        trigger_type: Schema.optionalKey(TriggerType),
        created_after: Schema.optionalKey(DateTimeQuery),
        created_before: Schema.optionalKey(DateTimeQuery),
        msg_conversation_id: Schema.optionalKey(Schema.String),
        ...PagingQuery
      },
      success: ListResponse(ExecutionSummary),
      error: NotFound
    }).annotateMerge(OpenApi.annotations({ summary: "List a workflow's executions" })),
    HttpApiEndpoint.get("listByConversation", "/msg/conversations/:id/flow_executions", {
      params: IdParams,
      query: { status: Schema.optionalKey(ExecutionStatus), ...PagingQuery },
      success: ListResponse(ExecutionSummary),
      error: NotFound
    }).annotateMerge(OpenApi.annotations({ summary: "List the executions of a conversation" })),
    HttpApiEndpoint.get("get", "/workflow_executions/:id", { params: IdParams, success: data(ExecutionDetail), error: NotFound }).annotateMerge(OpenApi.annotations({ summary: "Get an execution" })),
    HttpApiEndpoint.patch("update", "/workflow_executions/:id", {
      params: IdParams,
      payload: Schema.Struct({ workflow_execution: Schema.optionalKey(Schema.Struct({ status: ExecutionStatus })) }),
      success: data(ExecutionSummary),
      error: [NotFound, Unprocessable]
    }).annotateMerge(OpenApi.annotations({ summary: "Set an execution's status" })),
    HttpApiEndpoint.post("resume", "/workflow_executions/:id/resume", {
      params: IdParams,
      payload: ResumeRequest,
      success: data(ResumeAnswer),
      error: [NotFound, Unprocessable, Conflict]
    }).annotateMerge(OpenApi.annotations({ summary: "Resume a waiting execution" })),
    HttpApiEndpoint.get("events", "/workflow_executions/:id/events", {
      params: IdParams,
      query: { event_type: Schema.optionalKey(Schema.String), ...PagingQuery },
      success: ListResponse(StepEvent),
      error: NotFound
    }).annotateMerge(OpenApi.annotations({ summary: "List an execution's events" })),
    HttpApiEndpoint.get("event", "/workflow_events/:id", { params: IdParams, success: data(StepEvent), error: NotFound }).annotateMerge(OpenApi.annotations({ summary: "Get one execution event" })),
    HttpApiEndpoint.get("variables", "/workflows/:id/variables", { params: IdParams, success: data(WorkflowVariables), error: NotFound }).annotateMerge(OpenApi.annotations({ summary: "The variables a workflow can use: fixed ones and those discovered in its runs" }))
  )
  .middleware(Authentication)
  .prefix("/platform/v1")
  .annotateMerge(OpenApi.annotations({ title: "Workflow executions", description: "Runs of workflows and their step events" }))
{}

/** The older surface's read of a run (interface spec, older surface). */
export class FlowExecutionsApi extends HttpApiGroup.make("flowExecutions")
  .add(HttpApiEndpoint.get("get", "/flow_executions/:id", { params: IdParams, success: data(FlowExecution), error: NotFound }).annotateMerge(OpenApi.annotations({ summary: "Get a flow execution (older surface)" })))
  .middleware(Authentication)
  .prefix("/api/v1")
  .annotateMerge(OpenApi.annotations({ title: "Flow executions (older surface)", description: "Runs of flows" }))
{}
