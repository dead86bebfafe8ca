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
import { operation } from "../http/Operation.ts"

const data = <S extends Schema.Top>(schema: S) => Schema.Struct({ data: schema })
const IdParams = { id: Schema.String }

/** 429 of the execution start burst (decisions 8.1), with the spec's `message`. */
export class StartRateExceeded extends Schema.Error<StartRateExceeded>("StartRateExceeded")({
  error: Schema.String,
  message: Schema.String
}, {
  httpApiStatus: 429,
  description: "Over the execution start burst of the key on this workflow (`Retry-After: 1`)"
}) {
  readonly _tag = "StartRateExceeded" as const
}

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
      payload: Schema.Struct({ workflow_execution: StartRequest }).annotate({
        examples: [{
          workflow_execution: {
            phone_number: "+15551234567",
            phone_number_id: "106540352242922",
            variables: { order_id: "A-1042" }
          }
        }]
      }),
      success: data(StartAcknowledgement).pipe(HttpApiSchema.status(202)),
      error: [NotFound, Unprocessable, StartRateExceeded]
    }).annotateMerge(operation(
      "Start an execution of a workflow",
      "Starts a run of an active workflow and answers 202 with the record, already readable. 422 when " +
        "the workflow is not active or the conversation is in handoff; a running execution of the same " +
        "conversation is superseded. Starts per key and workflow are limited per second (`X-Burst-RateLimit-*`)."
    )),
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
    }).annotateMerge(operation(
      "List a workflow's executions",
      "A workflow's executions, newest first, filtered by status, conversation, phone number, tracking " +
        "id and dates; cursor paging."
    )),
    HttpApiEndpoint.get("listByConversation", "/msg/conversations/:id/flow_executions", {
      params: IdParams,
      query: { status: Schema.optionalKey(ExecutionStatus), ...PagingQuery },
      success: ListResponse(ExecutionSummary),
      error: NotFound
    }).annotateMerge(operation(
      "List the executions of a conversation",
      "The executions that ran in a conversation, newest first."
    )),
    HttpApiEndpoint.get("get", "/workflow_executions/:id", { params: IdParams, success: data(ExecutionDetail), error: NotFound }).annotateMerge(operation(
      "Get an execution",
      "One execution by id or by its `tracking_id`, with its status, `waiting_reason`, current step and " +
        "`execution_context`."
    )),
    HttpApiEndpoint.patch("update", "/workflow_executions/:id", {
      params: IdParams,
      payload: Schema.Struct({ workflow_execution: Schema.optionalKey(Schema.Struct({ status: ExecutionStatus })) }),
      success: data(ExecutionSummary),
      error: [NotFound, Unprocessable]
    }).annotateMerge(operation(
      "Set an execution's status",
      "Moves an execution's status by the execution status rules (e.g. `ended`, `failed`, `waiting` for " +
        "handoff); other moves answer 422 naming them."
    )),
    HttpApiEndpoint.post("resume", "/workflow_executions/:id/resume", {
      params: IdParams,
      payload: ResumeRequest,
      success: data(ResumeAnswer),
      error: [NotFound, Unprocessable, Conflict]
    }).annotateMerge(operation(
      "Resume a waiting execution",
      "Resumes a waiting execution with a `text` or `payload` input and optional variables to merge. " +
        "409 when a resume is already pending; 422 when it is not waiting."
    )),
    HttpApiEndpoint.get("events", "/workflow_executions/:id/events", {
      params: IdParams,
      query: { event_type: Schema.optionalKey(Schema.String), ...PagingQuery },
      success: ListResponse(StepEvent),
      error: NotFound
    }).annotateMerge(operation(
      "List an execution's events",
      "An execution's step events in order: steps started and completed, messages sent, " +
        "waits, errors; large values cut, secrets masked."
    )),
    HttpApiEndpoint.get("event", "/workflow_events/:id", { params: IdParams, success: data(StepEvent), error: NotFound }).annotateMerge(operation(
      "Get one execution event",
      "One step event by id, with its full (capped) payload."
    )),
    HttpApiEndpoint.get("variables", "/workflows/:id/variables", { params: IdParams, success: data(WorkflowVariables), error: NotFound }).annotateMerge(operation(
      "The variables a workflow can use: fixed ones and those discovered in its runs",
      "The variables a workflow can use: the system ones, and those its runs have set (decisions " +
        "2.4.6), for editors and autocompletion."
    ))
  )
  .middleware(Authentication)
  .prefix("/platform/v1")
  .annotateMerge(OpenApi.annotations({ title: "Workflow executions", description: "Runs of workflows and their step events" }))
{}

/** The older surface's read of a run (interface spec, older surface). */
export class FlowExecutionsApi extends HttpApiGroup.make("flowExecutions")
  .add(HttpApiEndpoint.get("get", "/flow_executions/:id", { params: IdParams, success: data(FlowExecution), error: NotFound }).annotateMerge(operation(
    "Get a flow execution (older surface)",
    "The older surface's view of one execution."
  )))
  .middleware(Authentication)
  .prefix("/api/v1")
  .annotateMerge(OpenApi.annotations({ title: "Flow executions (older surface)", description: "Runs of flows" }))
{}
