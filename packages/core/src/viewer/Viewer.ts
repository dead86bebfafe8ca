/**
 * What the embedded workflow viewer reads and does (issue 31 §3), limited to its embed's scope:
 * workflows and their graphs, a definition checked as it is edited and saved with its `lock_version`, executions
 * with their revision's graph, path and step events, and the actions a person expects (resume, end, a test run on
 * the sandbox number). Every rule is the Platform API's: this calls the same services as the embed's project.
 */
import { Context, Effect, Layer, Option } from "effect"
import { Executions, type StartAnswer } from "../executions/Executions.ts"
import { StoredExecutions } from "../executions/StoredExecutions.ts"
import type { ExecutionDetail, ExecutionStatus, ExecutionSummary, StepEventRecord } from "../executions/Execution.ts"
import { Messaging } from "../messaging/Messaging.ts"
import { UpstreamSettings } from "../messaging/Upstream.ts"
import type { Principal } from "../projects/Projects.ts"
import { type Conflict, Forbidden, type NotFound, notFound, type Unprocessable, unprocessable } from "../shared/ApiError.ts"
import { Ids } from "../shared/Ids.ts"
import type { TriggerType } from "../workflows/Trigger.ts"
import { validateDefinition } from "../workflows/Definition.ts"
import { DefinitionReferences } from "../workflows/References.ts"
import type { Definition, WorkflowRecord, WorkflowSummary } from "../workflows/Workflow.ts"
import { Workflows } from "../workflows/Workflows.ts"
import { type RunPath, runPath } from "./RunPath.ts"
import type { ViewerSession } from "./WorkflowEmbeds.ts"

/** Step events a run's page shows at most. */
export const RUN_EVENTS_MAX = 1000
const WORKFLOWS_MAX = 200

export interface ViewerWorkflow {
  readonly id: string
  readonly name: string
  readonly status: string
  readonly updated_at: string
  readonly lock_version: number
  readonly definition: Definition
}

export interface ViewerRun {
  readonly execution: ExecutionDetail
  readonly definition: Definition
  readonly path: RunPath
  readonly events: ReadonlyArray<StepEventRecord>
  readonly events_truncated: boolean
}

export const principalOf = (session: ViewerSession): Principal => ({
  project: session.project,
  apiKey: { id: session.embed.id, name: `workflow embed ${session.embed.name}` }
})

const readOnly = () => new Forbidden({ error: "This viewer is read-only" })

const toViewerWorkflow = (w: WorkflowRecord): ViewerWorkflow => ({
  id: w.id,
  name: w.name,
  status: w.status,
  updated_at: w.updated_at,
  lock_version: w.lock_version,
  definition: w.definition
})

export class Viewer extends Context.Service<Viewer, {
  readonly sandbox: (session: ViewerSession) => Effect.Effect<Option.Option<{ readonly phone_number_id: string; readonly display_phone_number: string }>>
  readonly workflows: (session: ViewerSession) => Effect.Effect<ReadonlyArray<WorkflowSummary>>
  readonly workflow: (session: ViewerSession, id: string) => Effect.Effect<ViewerWorkflow, NotFound>
  /** Every problem of a definition being edited; none when a save would take it. */
  readonly validate: (session: ViewerSession, id: string, definition: unknown) => Effect.Effect<ReadonlyArray<{ readonly path: string; readonly message: string }>, NotFound>
  readonly save: (
    session: ViewerSession,
    id: string,
    definition: unknown,
    lockVersion: number
  ) => Effect.Effect<ViewerWorkflow, NotFound | Forbidden | Unprocessable | Conflict>
  readonly executions: (
    session: ViewerSession,
    workflowId: string,
    filter: { readonly status?: ExecutionStatus | undefined; readonly trigger_type?: TriggerType | undefined },
    limit: number
  ) => Effect.Effect<{ readonly items: ReadonlyArray<ExecutionSummary>; readonly hasMore: boolean }, NotFound>
  readonly run: (session: ViewerSession, id: string) => Effect.Effect<ViewerRun, NotFound>
  readonly resume: (session: ViewerSession, id: string) => Effect.Effect<ExecutionSummary, NotFound | Forbidden | Unprocessable | Conflict>
  readonly end: (session: ViewerSession, id: string) => Effect.Effect<ExecutionSummary, NotFound | Forbidden | Unprocessable>
  /** A run of the workflow for `phoneNumber` from the project's sandbox number (422 when it has none). */
  readonly testRun: (
    session: ViewerSession,
    workflowId: string,
    phoneNumber: string,
    variables: Readonly<Record<string, unknown>> | undefined
  ) => Effect.Effect<StartAnswer, NotFound | Forbidden | Unprocessable>
}>()("@parley/core/viewer/Viewer") {
  static readonly layer = Layer.effect(
    Viewer,
    Effect.gen(function*() {
      const workflowService = yield* Workflows
      const executions = yield* Executions
      const runs = yield* StoredExecutions
      const messaging = yield* Messaging
      const refs = yield* Effect.context<DefinitionReferences | Ids>()
      const upstream = yield* Effect.serviceOption(UpstreamSettings)

      const inScope = (session: ViewerSession, workflowId: string) =>
        session.embed.scope_type === "project" || session.embed.scope_id === workflowId

      const findWorkflow = Effect.fnUntraced(function*(session: ViewerSession, id: string) {
        if (!inScope(session, id)) return yield* notFound("Workflow", id)
        return yield* workflowService.getWithDefinition(principalOf(session), id)
      })

      const writable = (session: ViewerSession) => session.embed.access === "edit" ? Effect.void : Effect.fail(readOnly())

      /** A run of the scope: 404 for another project's or another workflow's. */
      const findRun = Effect.fnUntraced(function*(session: ViewerSession, id: string) {
        const found = yield* runs.find(session.project.id, id)
        if (Option.isNone(found) || !inScope(session, found.value.workflow_id)) return yield* notFound("Workflow execution", id)
        return found.value
      })

      /** The project's number of kind `sandbox`, else the simulated network's number when the project has it. */
      const sandbox = Effect.fn("Viewer.sandbox")(function*(session: ViewerSession) {
        const listed = yield* messaging.listNumbers(session.project.id, { kind: "sandbox" }, { mode: "page", page: 1, perPage: 1 })
        let config = Option.fromNullishOr(listed.items[0])
        const simulated = Option.flatMap(upstream, (u) => u.simulatedNumber)
        if (Option.isNone(config) && Option.isSome(simulated)) {
          config = Option.filter(
            yield* messaging.findNumberOf(session.project.id, simulated.value.phoneNumberId),
            (c) => c.deleted_at === null
          )
        }
        return Option.map(config, (c) => ({ phone_number_id: c.phone_number_id, display_phone_number: c.display_phone_number }))
      })

      const workflows = Effect.fn("Viewer.workflows")(function*(session: ViewerSession) {
        if (session.embed.scope_type === "workflow") {
          const one = yield* Effect.option(workflowService.getSummary(principalOf(session), session.embed.scope_id ?? ""))
          return Option.toArray(one)
        }
        const slice = yield* workflowService.list(principalOf(session), {}, { mode: "page", page: 1, perPage: WORKFLOWS_MAX })
        return slice.items
      })

      const validate = Effect.fn("Viewer.validate")(function*(session: ViewerSession, id: string, definition: unknown) {
        const current = yield* findWorkflow(session, id)
        return yield* validateDefinition(definition, { projectId: session.project.id, workflowId: id, previous: current.definition }).pipe(
          Effect.provideContext(refs),
          Effect.as([]),
          Effect.catchTag("Unprocessable", (e) => Effect.succeed(e.details ?? [{ path: "definition", message: e.error }]))
        )
      })

      const save = Effect.fn("Viewer.save")(function*(session: ViewerSession, id: string, definition: unknown, lockVersion: number) {
        yield* findWorkflow(session, id)
        yield* writable(session)
        yield* workflowService.update(principalOf(session), id, { definition, lock_version: lockVersion })
        return toViewerWorkflow(yield* workflowService.getWithDefinition(principalOf(session), id))
      })

      const list = Effect.fn("Viewer.executions")(function*(
        session: ViewerSession,
        workflowId: string,
        filter: { readonly status?: ExecutionStatus | undefined; readonly trigger_type?: TriggerType | undefined },
        limit: number
      ) {
        if (!inScope(session, workflowId)) return yield* notFound("Workflow", workflowId)
        return yield* executions.list(principalOf(session), { workflow_id: workflowId, ...filter }, { mode: "cursor", limit })
      })

      const run = Effect.fn("Viewer.run")(function*(session: ViewerSession, id: string) {
        const record = yield* findRun(session, id)
        const execution = yield* executions.get(principalOf(session), record.id)
        const revision = yield* runs.revision(record.revision_id)
        if (Option.isNone(revision)) return yield* notFound("Workflow execution", id)
        const listed = yield* runs.steps(session.project.id, record, {}, { mode: "page", page: 1, perPage: RUN_EVENTS_MAX })
        // The latest events, put back in the order they happened.
        const events = [...listed.items].sort((a, b) => a.seq - b.seq)
        return {
          execution,
          definition: revision.value.definition,
          path: runPath(revision.value.definition, events),
          events,
          events_truncated: listed.total > events.length
        }
      })

      const resume = Effect.fn("Viewer.resume")(function*(session: ViewerSession, id: string) {
        const record = yield* findRun(session, id)
        yield* writable(session)
        const { requested_execution_id: _, parent_flow_execution_id: __, ...summary } = yield* executions.resume(principalOf(session), record.id, {})
        return summary
      })

      const end = Effect.fn("Viewer.end")(function*(session: ViewerSession, id: string) {
        const record = yield* findRun(session, id)
        yield* writable(session)
        return yield* executions.move(principalOf(session), record.id, "ended")
      })

      const testRun = Effect.fn("Viewer.testRun")(function*(
        session: ViewerSession,
        workflowId: string,
        phoneNumber: string,
        variables: Readonly<Record<string, unknown>> | undefined
      ) {
        yield* findWorkflow(session, workflowId)
        yield* writable(session)
        const number = yield* sandbox(session)
        if (Option.isNone(number)) return yield* unprocessable("The project has no sandbox number")
        return yield* executions.start(principalOf(session), workflowId, {
          phone_number: phoneNumber,
          phone_number_id: number.value.phone_number_id,
          ...(variables !== undefined ? { variables } : {})
        }, { ip: null, user_agent: "parley workflow viewer" })
      })

      return Viewer.of({
        sandbox,
        workflows,
        workflow: (session, id) => Effect.map(findWorkflow(session, id), toViewerWorkflow),
        validate,
        save,
        executions: list,
        run,
        resume,
        end,
        testRun
      })
    })
  )
}
