/**
 * The HTTP contract of a workflow's lifecycle (issue 32 §3, §4): its revisions (list, fetch, compare, store a draft,
 * restore, move waiting runs), its staged rollout, its experiments and its drop-off. Host handlers, `/openapi.json`,
 * the typed client and the MCP tools derive from these declarations.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Authentication } from "../../http/Middleware.ts"
import { operation } from "../../http/Operation.ts"
import { Conflict, NotFound, Unprocessable } from "../../shared/ApiError.ts"
import { ListResponse, PagingQuery } from "../../shared/Pagination.ts"
import { RevisionComparison, RevisionDetail, RevisionSummary, Rollout } from "../../workflows/Revision.ts"
import { DefinitionInput, Workflow } from "../../workflows/Workflow.ts"
import { Experiment, NodeDropOff } from "./Experiments.ts"
import { MigrationRequestBody, MigrationResult } from "./RunMigration.ts"

const data = <S extends Schema.Top>(schema: S) => Schema.Struct({ data: schema })
const IdParams = { id: Schema.String }
const RevisionParams = { id: Schema.String, revision_id: Schema.String }
const LockVersion = Schema.Struct({ lock_version: Schema.optionalKey(Schema.NullOr(Schema.Int)) })

export class WorkflowLifecycleApi extends HttpApiGroup.make("workflowLifecycle")
  .add(
    HttpApiEndpoint.get("listRevisions", "/workflows/:id/revisions", {
      params: IdParams,
      query: PagingQuery,
      success: ListResponse(RevisionSummary),
      error: NotFound
    }).annotateMerge(operation(
      "List a workflow's revisions",
      "Every graph of the workflow, newest first: the ones saved (with who saved them, when and how) and the ones " +
        "runs were started on, each with how many runs started on it and how many wait on it now. Paging as every " +
        "list: cursor mode by default (`limit`, `before`, `after`), page mode with `page`/`per_page`."
    )),
    HttpApiEndpoint.post("saveRevision", "/workflows/:id/revisions", {
      params: IdParams,
      payload: Schema.Struct({ revision: Schema.Struct({ definition: DefinitionInput }) }),
      success: data(RevisionDetail).pipe(HttpApiSchema.status(201)),
      error: [NotFound, Unprocessable]
    }).annotateMerge(operation(
      "Store a definition as a revision",
      "Validates `revision.definition` as an update would and stores it as a revision without making it the " +
        "current definition: a graph to stage in a rollout, restore, or migrate runs to."
    )),
    HttpApiEndpoint.get("getRevision", "/workflows/:id/revisions/:revision_id", {
      params: RevisionParams,
      success: data(RevisionDetail),
      error: NotFound
    }).annotateMerge(operation("Get a revision", "One revision of the workflow with its graph (`definition`).")),
    HttpApiEndpoint.get("compareRevisions", "/workflows/:id/revisions/:revision_id/compare", {
      params: RevisionParams,
      query: { with: Schema.String.annotate({ description: "The revision to compare with (the newer side)" }) },
      success: data(RevisionComparison),
      error: NotFound
    }).annotateMerge(operation(
      "Compare two revisions",
      "What changed from the revision to `with`: nodes added, removed and changed (with the fields that differ), " +
        "edges added and removed (by source, target and label)."
    )),
    HttpApiEndpoint.post("restoreRevision", "/workflows/:id/revisions/:revision_id/restore", {
      params: RevisionParams,
      payload: LockVersion,
      success: data(Workflow),
      error: [NotFound, Unprocessable, Conflict]
    }).annotateMerge(operation(
      "Restore a revision as the current definition",
      "The revision's graph becomes the workflow's definition again, checked as any save (a reference gone since " +
        "answers 422). Send the `lock_version` you read: a stale one answers 409. Runs keep their revision."
    )),
    HttpApiEndpoint.post("migrateRuns", "/workflows/:id/revisions/:revision_id/migrate", {
      params: RevisionParams,
      payload: MigrationRequestBody,
      success: data(MigrationResult),
      error: NotFound
    }).annotateMerge(operation(
      "Move waiting runs to a revision",
      "Each waiting run on another revision whose node the revision still has (same id and type) moves to it and " +
        "goes on from there; one whose node is gone stays or ends, as `on_missing_node` says. `dry_run` counts " +
        "only. Each run moves in its own write: repeating a request cut short finishes it."
    )),
    HttpApiEndpoint.get("getRollout", "/workflows/:id/rollout", {
      params: IdParams,
      success: data(Schema.NullOr(Rollout)),
      error: NotFound
    }).annotateMerge(operation("Get a workflow's rollout", "The staged rollout in progress, or null.")),
    HttpApiEndpoint.put("startRollout", "/workflows/:id/rollout", {
      params: IdParams,
      payload: Schema.Struct({ rollout: Schema.Struct({ revision_id: Schema.String, percent: Schema.Int }) }),
      success: data(Rollout),
      error: [NotFound, Unprocessable]
    }).annotateMerge(operation(
      "Start or change a staged rollout",
      "New runs of `percent` % of contacts (sticky per contact: raising the share keeps those already in) start " +
        "on `revision_id`, the others on the current definition, until the rollout is promoted or rolled back."
    )),
    HttpApiEndpoint.post("promoteRollout", "/workflows/:id/rollout/promote", {
      params: IdParams,
      payload: LockVersion,
      success: data(Workflow),
      error: [NotFound, Unprocessable, Conflict]
    }).annotateMerge(operation(
      "Promote the rollout",
      "The rollout's revision becomes the current definition (with the `lock_version` you read) and the rollout ends."
    )),
    HttpApiEndpoint.delete("rollBack", "/workflows/:id/rollout", {
      params: IdParams,
      success: HttpApiSchema.NoContent,
      error: NotFound
    }).annotateMerge(operation(
      "Roll the rollout back",
      "The rollout ends: new runs all start on the current definition. Runs started on the rollout's revision keep it."
    )),
    HttpApiEndpoint.get("getExperiment", "/workflows/:id/experiments/:node_id", {
      params: { id: Schema.String, node_id: Schema.String },
      success: data(Experiment),
      error: NotFound
    }).annotateMerge(operation(
      "Get an experiment's results",
      "A split node's experiment: per branch, the runs assigned, the ones that reached the goal after, and the " +
        "conversion with its 95 % Wilson score interval."
    )),
    HttpApiEndpoint.get("dropOff", "/workflows/:id/drop_off", {
      params: IdParams,
      success: data(Schema.Array(NodeDropOff)),
      error: NotFound
    }).annotateMerge(operation(
      "Get a workflow's drop-off per node",
      "Per node, from the step events kept: runs that entered it, left it, wait on it now, and dropped there."
    ))
  )
  .middleware(Authentication)
  .prefix("/platform/v1")
  .annotateMerge(OpenApi.annotations({
    title: "Workflow lifecycle",
    description: "Revisions, staged rollouts, moving waiting runs, experiments and drop-off"
  }))
{}
