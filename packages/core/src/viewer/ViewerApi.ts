/**
 * The workflow viewer's own data API (`/viewer/v1`), which the page at a workflow embed's `embed_url` calls with its
 * token in `X-Viewer-Token`. Every answer is limited to the embed's scope (the project's workflows or one of them);
 * the rules behind it are the Platform API's (`Viewer` calls the same services). Writes need `access: edit`.
 */
import { Context, Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiMiddleware, HttpApiSchema, HttpApiSecurity, OpenApi } from "effect/http-api"
import { StartAcknowledgement } from "../executions/ExecutionsApi.ts"
import { ExecutionDetail, ExecutionStatus, ExecutionSummary, StepEvent } from "../executions/Execution.ts"
import { operation } from "../http/Operation.ts"
import { Conflict, ErrorDetail, Forbidden, NotFound, Unauthorized, Unprocessable } from "../shared/ApiError.ts"
import { wholeNumberQuery } from "../shared/Pagination.ts"
import { TriggerType } from "../workflows/Trigger.ts"
import { Definition } from "../workflows/Workflow.ts"
import { EMBED_LANGUAGES, EMBED_MODES } from "../embeds/EmbedAccess.ts"
import { WORKFLOW_EMBED_ACCESS, WORKFLOW_EMBED_SCOPE_TYPES } from "./WorkflowEmbed.ts"
import type { ViewerSession } from "./WorkflowEmbeds.ts"

/** The embed whose token the current viewer request presented. */
export class CurrentViewer extends Context.Service<CurrentViewer, ViewerSession>()("@parley/core/viewer/CurrentViewer") {}

/** `X-Viewer-Token` → the embed it opens; 401 `Invalid viewer token` otherwise. */
export class ViewerAuthentication extends HttpApiMiddleware.Service<ViewerAuthentication, { provides: CurrentViewer }>()(
  "@parley/core/viewer/ViewerAuthentication",
  {
    security: { viewerToken: HttpApiSecurity.apiKey({ key: "X-Viewer-Token", in: "header" }) },
    error: Unauthorized,
    // The Platform client holds an API key, not an embed token: the page sends the header itself.
    requiredForClient: false
  }
) {}

const data = <S extends Schema.Top>(schema: S) => Schema.Struct({ data: schema })
const IdParams = { id: Schema.String }

export const ViewerSessionInfo = Schema.Struct({
  name: Schema.String,
  scope_type: Schema.Literals(WORKFLOW_EMBED_SCOPE_TYPES),
  scope_id: Schema.NullOr(Schema.String),
  scope_name: Schema.NullOr(Schema.String),
  access: Schema.Literals(WORKFLOW_EMBED_ACCESS),
  language: Schema.Literals(EMBED_LANGUAGES),
  default_mode: Schema.Literals(EMBED_MODES),
  /** The node types a definition may use, for adding nodes. */
  node_types: Schema.Array(Schema.String),
  /** Where test runs start: the project's sandbox number (or, in simulator mode, the simulated one); null when none. */
  sandbox: Schema.NullOr(Schema.Struct({ phone_number_id: Schema.String, display_phone_number: Schema.String }))
}).annotate({ identifier: "ViewerSession" })

export const ViewerWorkflowItem = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  status: Schema.String,
  updated_at: Schema.String
}).annotate({ identifier: "ViewerWorkflowItem" })

export const ViewerWorkflow = Schema.Struct({
  ...ViewerWorkflowItem.fields,
  lock_version: Schema.Int,
  definition: Definition
}).annotate({ identifier: "ViewerWorkflow" })

export const ViewerValidation = Schema.Struct({
  valid: Schema.Boolean,
  /** Every problem, its `path` naming the node (`nodes.<id>...`, `nodes[<i>]...`) or edge (`edges[<i>]...`). */
  problems: Schema.Array(ErrorDetail)
}).annotate({ identifier: "ViewerValidation" })

/** Where a run went over its revision's graph, from its step events. */
export const RunPath = Schema.Struct({
  /** Nodes entered, with how many times. */
  nodes: Schema.Array(Schema.Struct({ id: Schema.String, visits: Schema.Int })),
  /** Edges followed (ids of the revision's edges), in order, repeated when followed again. */
  edges: Schema.Array(Schema.String),
  /** The node the run failed on, when it failed on one. */
  failed_node: Schema.NullOr(Schema.String)
})

export const ViewerRun = Schema.Struct({
  execution: ExecutionDetail,
  /** The graph the run walks: its revision's, which later edits of the workflow do not change. */
  definition: Definition,
  path: RunPath,
  /** The latest 1000 step events, oldest first; `events_truncated` when older ones are left out. */
  events: Schema.Array(StepEvent),
  events_truncated: Schema.Boolean
}).annotate({ identifier: "ViewerRun" })

const DefinitionBody = Schema.Struct({ definition: Schema.Unknown })

export class ViewerApi extends HttpApiGroup.make("viewer")
  .add(
    HttpApiEndpoint.get("session", "/session", { success: data(ViewerSessionInfo) })
      .annotateMerge(operation("The viewer session", "The embed's name, scope, access, language, default mode and the project's sandbox number.")),
    HttpApiEndpoint.get("workflows", "/workflows", { success: data(Schema.Array(ViewerWorkflowItem)) })
      .annotateMerge(operation("List the viewer's workflows", "The workflows of the embed's scope (archived ones hidden), newest first, at most 200.")),
    HttpApiEndpoint.get("workflow", "/workflows/:id", { params: IdParams, success: data(ViewerWorkflow), error: NotFound })
      .annotateMerge(operation("Get a workflow's graph", "A workflow of the scope with its definition and `lock_version`; outside the scope answers 404.")),
    HttpApiEndpoint.post("validate", "/workflows/:id/validate", {
      params: IdParams,
      payload: DefinitionBody,
      success: data(ViewerValidation),
      error: NotFound
    }).annotateMerge(operation("Validate a definition", "Checks a definition being edited by the rules a save applies, without saving: every problem with the path of the node or edge it names.")),
    HttpApiEndpoint.patch("save", "/workflows/:id", {
      params: IdParams,
      payload: Schema.Struct({ definition: Schema.Unknown, lock_version: Schema.Int }),
      success: data(ViewerWorkflow),
      error: [NotFound, Forbidden, Unprocessable, Conflict]
    }).annotateMerge(operation("Save a definition", "Saves the definition as `PATCH /workflows/<id>` does, with the `lock_version` it was read at (409 when the workflow moved since). Needs `access: edit`.")),
    HttpApiEndpoint.get("executions", "/workflows/:id/executions", {
      params: IdParams,
      query: {
        status: Schema.optionalKey(ExecutionStatus),
        trigger_type: Schema.optionalKey(TriggerType),
        limit: Schema.optionalKey(wholeNumberQuery("^0*(?:[1-9][0-9]?|100)$", "Executions at most, 1-100 (default 50)"))
      },
      success: Schema.Struct({ data: Schema.Array(ExecutionSummary), has_more: Schema.Boolean }),
      error: NotFound
    }).annotateMerge(operation("List a workflow's executions", "The workflow's newest executions, filtered by `status` and `trigger_type`.")),
    HttpApiEndpoint.get("run", "/executions/:id", { params: IdParams, success: data(ViewerRun), error: NotFound })
      .annotateMerge(operation("Get a run over its graph", "An execution of the scope with its revision's graph, the path it took (nodes entered, edges followed, where it failed) and its step events.")),
    HttpApiEndpoint.post("resume", "/executions/:id/resume", {
      params: IdParams,
      success: data(ExecutionSummary),
      error: [NotFound, Forbidden, Unprocessable, Conflict]
    }).annotateMerge(operation("Resume a run", "Resumes a waiting run (a handoff) as `POST /workflow_executions/<id>/resume` does. Needs `access: edit`.")),
    HttpApiEndpoint.post("end", "/executions/:id/end", {
      params: IdParams,
      success: data(ExecutionSummary),
      error: [NotFound, Forbidden, Unprocessable]
    }).annotateMerge(operation("End a run", "Ends a live run as PATCH `status: ended` does. Needs `access: edit`.")),
    HttpApiEndpoint.post("testRun", "/workflows/:id/test_runs", {
      params: IdParams,
      payload: Schema.Struct({
        phone_number: Schema.String,
        variables: Schema.optionalKey(Schema.Record(Schema.String, Schema.Unknown))
      }),
      success: data(StartAcknowledgement).pipe(HttpApiSchema.status(202)),
      error: [NotFound, Forbidden, Unprocessable]
    }).annotateMerge(operation("Start a test run", "Starts the workflow for `phone_number` from the project's sandbox number, as `POST /workflows/<id>/executions` does. Needs `access: edit`."))
  )
  .middleware(ViewerAuthentication)
  .prefix("/viewer/v1")
  .annotateMerge(OpenApi.annotations({
    title: "Embedded workflow viewer",
    description: "What the embedded workflow and execution viewer calls, with its embed token in `X-Viewer-Token`"
  }))
{}
