/**
 * The executions endpoints as a service (decisions 2.5, 3.2, 4.2): start
 * (the record exists when the 202 is answered), reads, status moves and
 * resume. Runs go through the `Launcher` and the `ExecutionEngine`.
 */
import { Clock, Context, Effect, Layer, Option } from "effect"
import { Messaging } from "../messaging/Messaging.ts"
import { ExecutionsRepo, StepEventsRepo } from "./ExecutionsRepo.ts"
import { Transactor } from "../ports/Transactor.ts"
import { StoredWorkflows } from "../workflows/StoredWorkflows.ts"
import type { Principal } from "../projects/Projects.ts"
import { Conflict, invalid, type NotFound, notFound, unprocessable, type Unprocessable } from "../shared/ApiError.ts"
import type { ListSlice, ListWindow } from "../shared/Pagination.ts"
import type { MessageConfigRecord } from "../messaging/numbers/MessageConfig.ts"
import { phoneDigits } from "../messaging/numbers/MessageConfig.ts"
import { ExecutionEngine } from "./Engine.ts"
import {
  type ExecutionDetail,
  type ExecutionFilter,
  type FlowExecution,
  type ExecutionRecord,
  type ExecutionStatus,
  type ExecutionSummary,
  isTerminal,
  type StepEventFilter,
  type StepEventRecord,
  toDetail,
  toFlowExecution,
  toSummary
} from "./Execution.ts"
import { discover, DISCOVERY_EXECUTIONS, type WorkflowVariables } from "./Variables.ts"
import { toFlow, type WorkflowRecord } from "../workflows/Workflow.ts"
import { Workflows } from "../workflows/Workflows.ts"
import { Launcher } from "./Launcher.ts"
import * as T from "./Transitions.ts"

export interface StartInput {
  readonly phone_number?: string | null | undefined
  readonly recipient?: string | null | undefined
  readonly phone_number_id?: string | null | undefined
  readonly msg_config_id?: string | number | null | undefined
  readonly variables?: Readonly<Record<string, unknown>> | null | undefined
  readonly context?: Readonly<Record<string, unknown>> | null | undefined
  readonly initial_data?: unknown
}

export interface RequestFacts {
  readonly ip: string | null
  readonly user_agent: string | null
}

export interface StartAnswer {
  readonly message: string
  readonly workflow_id: string
  readonly id: string
  readonly tracking_id: string
}

export interface ResumeInput {
  readonly message?: { readonly kind?: string | undefined; readonly data?: unknown } | undefined
  readonly variables?: Readonly<Record<string, unknown>> | null | undefined
}

export class Executions extends Context.Service<Executions, {
  readonly start: (
    principal: Principal,
    workflowId: string,
    input: StartInput,
    request: RequestFacts
  ) => Effect.Effect<StartAnswer, NotFound | Unprocessable>
  readonly get: (principal: Principal, idOrTrackingId: string) => Effect.Effect<ExecutionDetail, NotFound>
  /** The older surface's read (`/api/v1/flow_executions/<id>`). */
  readonly getFlowExecution: (principal: Principal, id: string) => Effect.Effect<FlowExecution, NotFound>
  /** A workflow's executions (`filter.workflow_id` set: 404 when the workflow is unknown). */
  readonly list: (
    principal: Principal,
    filter: ExecutionFilter,
    window: ListWindow
  ) => Effect.Effect<ListSlice<ExecutionSummary>, NotFound>
  /** Every workflow's executions in one conversation; 404 `Conversation not found`. */
  readonly listByConversation: (
    principal: Principal,
    conversationId: string,
    filter: Pick<ExecutionFilter, "status">,
    window: ListWindow
  ) => Effect.Effect<ListSlice<ExecutionSummary>, NotFound>
  /** Variables discovery (decisions 2.4.6). */
  readonly variables: (principal: Principal, workflowId: string) => Effect.Effect<WorkflowVariables, NotFound>
  readonly move: (principal: Principal, id: string, status: ExecutionStatus) => Effect.Effect<ExecutionSummary, NotFound | Unprocessable>
  /**
   * `DELETE /workflows/<id>` (decisions 3.1): the workflow's live runs end (`workflow_deleted`; a `call` parent in
   * another workflow follows its ended child, a child of theirs ends too), then the workflow and its runs go.
   */
  readonly deleteWorkflow: (principal: Principal, workflowId: string) => Effect.Effect<void, NotFound | Unprocessable>
  readonly resume: (
    principal: Principal,
    id: string,
    input: ResumeInput
  ) => Effect.Effect<ExecutionSummary & { readonly requested_execution_id: string; readonly parent_flow_execution_id: string | null }, NotFound | Unprocessable | Conflict>
  readonly events: (
    principal: Principal,
    id: string,
    filter: StepEventFilter,
    window: ListWindow
  ) => Effect.Effect<ListSlice<StepEventRecord>, NotFound>
  readonly event: (principal: Principal, id: string) => Effect.Effect<StepEventRecord, NotFound>
}>()("@parley/core/executions/Executions") {
  static readonly layer = Layer.effect(
    Executions,
    Effect.gen(function*() {
      const repo = yield* ExecutionsRepo
      const steps = yield* StepEventsRepo
      const workflows = yield* StoredWorkflows
      const workflowService = yield* Workflows
      const messaging = yield* Messaging
      const engine = yield* ExecutionEngine
      const tx = yield* Transactor
      const launcher = yield* Launcher

      const findExecution = (projectId: string, id: string) =>
        repo.find(projectId, id).pipe(
          Effect.flatMap(Option.match({ onNone: () => Effect.fail(notFound("Workflow execution", id)), onSome: Effect.succeed }))
        )

      const statusOf = (projectId: string, workflowId: string) =>
        workflows.findById(projectId, workflowId).pipe(Effect.map(Option.match({ onNone: () => "deleted", onSome: (w) => w.status })))

      const summary = Effect.fnUntraced(function*(e: ExecutionRecord) {
        const g = yield* engine.graph(e.revision_id)
        return toSummary(e, g.definition, yield* statusOf(e.project_id, e.workflow_id))
      })

      /** Sender of an API start (decisions 2.5.1). */
      const sender = Effect.fnUntraced(function*(projectId: string, workflowId: string, input: StartInput) {
        if (input.phone_number_id !== undefined && input.phone_number_id !== null) {
          const found = yield* messaging.findNumberOf(projectId, input.phone_number_id)
          if (Option.isNone(found)) return yield* invalid("phone_number_id", "is not a number of this project")
          return found.value
        }
        if (input.msg_config_id !== undefined && input.msg_config_id !== null) {
          const found = yield* messaging.findNumber(projectId, String(input.msg_config_id))
          if (Option.isNone(found)) return yield* invalid("msg_config_id", "is not a config of this project")
          return found.value
        }
        const inbound = (yield* workflows.triggersOf(projectId, workflowId))
          .find((t) => t.trigger_type === "inbound_message" && t.active)
        const byTrigger = inbound === undefined
          ? Option.none<MessageConfigRecord>()
          : yield* messaging.findNumberOf(projectId, String(inbound.triggerable.phone_number_id))
        if (Option.isSome(byTrigger)) return byTrigger.value
        const numbers = yield* messaging.listNumbers(projectId, {}, { mode: "page", page: 1, perPage: 2 })
        if (numbers.total === 1) return numbers.items[0]!
        return yield* invalid("phone_number_id", "is required")
      })

      const start = Effect.fn("Executions.start")(function*(principal: Principal, workflowId: string, input: StartInput, request: RequestFacts) {
        const projectId = principal.project.id
        // Attached from the start (decisions 2.5.1): the contact and its active conversation on the sender, found or
        // opened, so routing finds the run by its pair, an agent reads the history and payloads name the conversation.
        // One transaction with the launch (the Launcher settles the pair's current owner under its route lock:
        // superseded; handoff blocks the start); the run starts once it committed. The workflow and the sender are
        // read in it too, side by side: one round trip with its BEGIN (their refusals keep their order).
        const { created, workflow } = yield* tx.withTransaction(Effect.gen(function*() {
          const [found, senderResult] = yield* Effect.all([
            workflows.findById(projectId, workflowId),
            Effect.result(sender(projectId, workflowId, input))
          ], { concurrency: 2 })
          if (Option.isNone(found)) return yield* notFound("Workflow", workflowId)
          const workflow = found.value
          if (workflow.status !== "active") return yield* unprocessable("Workflow is not active")
          const phone = input.phone_number === undefined || input.phone_number === null ? null : phoneDigits(input.phone_number)
          if (phone !== null && (phone.length < 6 || phone.length > 15)) {
            return yield* unprocessable("phone_number is not a valid phone number", [{ path: "workflow_execution.phone_number", message: "is invalid" }])
          }
          const recipient = input.recipient ?? null
          if (phone === null && recipient === null) {
            return yield* unprocessable("phone_number is required", [{ path: "workflow_execution.phone_number", message: "is required" }])
          }
          if (senderResult._tag === "Failure") return yield* Effect.fail(senderResult.failure)
          const config = senderResult.success
          const now = new Date(yield* Clock.currentTimeMillis).toISOString()
          const { contact, contactMade, conversation } = yield* messaging.openConversation(config, phone !== null ? { waId: phone } : { userId: recipient! })
          const created = yield* launcher.launch({
            workflow,
            triggerType: "api_call",
            observer: false,
            config,
            contact,
            contactMade,
            conversationId: conversation.id,
            phone,
            recipient,
            vars: input.variables ?? {},
            context: input.context ?? {},
            initialData: input.initial_data,
            metadata: { request: { ip: request.ip, user_agent: request.user_agent, timestamp: now } },
            system: { trigger_msg_config_id: config.id },
            dedupeKey: null
          }, { kick: false })
          return { created, workflow }
        }))
        if (Option.isSome(created) && created.value.status === "running") {
          yield* engine.kick(created.value.id, { leased: true, committed: true })
        }
        // Ids are new and start requests carry no dedupe key: the insert always lands.
        const record = Option.getOrThrow(created)
        return { message: "Workflow execution started", workflow_id: workflow.id, id: record.id, tracking_id: record.tracking_id }
      })

      const get = Effect.fn("Executions.get")(function*(principal: Principal, id: string) {
        const e = yield* findExecution(principal.project.id, id)
        const g = yield* engine.graph(e.revision_id)
        const latest = yield* steps.latest(e.id, 100)
        return toDetail(e, g.definition, yield* statusOf(e.project_id, e.workflow_id), latest)
      })

      const list = Effect.fn("Executions.list")(function*(principal: Principal, filter: ExecutionFilter, window: ListWindow) {
        if (filter.workflow_id !== undefined && Option.isNone(yield* workflows.findById(principal.project.id, filter.workflow_id))) {
          return yield* notFound("Workflow", filter.workflow_id)
        }
        const slice = yield* repo.list(principal.project.id, filter, window)
        const items = yield* Effect.forEach(slice.items, summary)
        return { ...slice, items }
      })

      const getFlowExecution = Effect.fn("Executions.getFlowExecution")(function*(principal: Principal, id: string) {
        const e = yield* findExecution(principal.project.id, id)
        const workflow = yield* workflows.findById(e.project_id, e.workflow_id).pipe(
          Effect.flatMap(Option.match({ onNone: () => Effect.fail(notFound("Workflow execution", id)), onSome: Effect.succeed }))
        )
        const g = yield* engine.graph(e.revision_id)
        return toFlowExecution(e, g.definition, toFlow(workflow))
      })

      const listByConversation = Effect.fn("Executions.listByConversation")(function*(
        principal: Principal,
        conversationId: string,
        filter: Pick<ExecutionFilter, "status">,
        window: ListWindow
      ) {
        if (Option.isNone(yield* messaging.findConversation(principal.project.id, conversationId))) return yield* notFound("Conversation", conversationId)
        return yield* list(principal, { status: filter.status, msg_conversation_id: conversationId }, window)
      })

      const variables = Effect.fn("Executions.variables")(function*(principal: Principal, workflowId: string) {
        if (Option.isNone(yield* workflows.findById(principal.project.id, workflowId))) return yield* notFound("Workflow", workflowId)
        const latest = yield* repo.list(principal.project.id, { workflow_id: workflowId }, { mode: "page", page: 1, perPage: DISCOVERY_EXECUTIONS })
        return discover(latest.items)
      })

      const move = Effect.fn("Executions.move")(function*(principal: Principal, id: string, to: ExecutionStatus) {
        // A concurrent step may move the record between the read and the write: read again and retry.
        for (let attempt = 0; attempt < 5; attempt++) {
          const moved = yield* moveOnce(principal, id, to)
          if (Option.isSome(moved)) return yield* summary(moved.value)
        }
        return yield* summary(yield* findExecution(principal.project.id, id))
      })

      const moveOnce = Effect.fnUntraced(function*(principal: Principal, id: string, to: ExecutionStatus) {
        const e = yield* findExecution(principal.project.id, id)
        if (e.status === to) return Option.some(e)
        const allowed = (to === "ended" && ["running", "waiting", "handoff"].includes(e.status)) ||
          (to === "handoff" && ["running", "waiting"].includes(e.status)) ||
          (to === "waiting" && e.status === "running")
        if (!allowed) return yield* unprocessable(`Cannot move execution from ${e.status} to ${to}`)
        const g = yield* engine.graph(e.revision_id)
        const now = new Date(yield* Clock.currentTimeMillis).toISOString()
        const transition = to === "ended"
          ? T.end(e, g, "manual", now)
          : to === "handoff"
          ? T.handoff(e, { node_id: null, reason: null, source: "api" }, now)
          // A running step finishes first; the run then waits (decisions 3.2).
          : { record: { ...e, requested_status: "waiting" as const, state_version: e.state_version + 1 }, events: [] }
        return (yield* engine.write(e, transition)) ? Option.some(transition.record) : Option.none<ExecutionRecord>()
      })

      const resume = Effect.fn("Executions.resume")(function*(principal: Principal, id: string, input: ResumeInput) {
        const requested = yield* findExecution(principal.project.id, id)
        const e = requested.resumable_execution_id !== null && requested.resumable_execution_id !== requested.id
          ? yield* findExecution(principal.project.id, requested.resumable_execution_id)
          : requested
        if (e.status !== "waiting" && e.status !== "handoff") return yield* unprocessable("Execution is not waiting")
        const kind = input.message?.kind ?? "payload"
        const data = input.message?.data
        if (e.status === "waiting" && data === undefined) return yield* invalid("message.data", "is required")
        if (kind === "text" && data !== undefined && typeof data !== "string") return yield* invalid("message.data", "must be a string for kind text")
        const g = yield* engine.graph(e.revision_id)
        const nodeId = e.status === "handoff" ? e.handoff?.node_id ?? null : e.wait?.node_id ?? e.current_node
        if (nodeId !== null && g.node(nodeId) === undefined) return yield* unprocessable("Waiting step can no longer be resumed")
        const now = new Date(yield* Clock.currentTimeMillis).toISOString()
        const resumed = e.status === "handoff" && nodeId === null
          ? T.end(e, g, "completed", now)
          : T.resume(e, g, { value: data, reason: "api", source: "api", kind, messageIds: [], variables: input.variables ?? undefined }, now)
        if (!(yield* engine.write(e, resumed))) {
          // Another resume (or the reply it stands for) won the race: the run is already on its way.
          const now = yield* repo.get(e.id)
          return yield* Option.isSome(now) && now.value.status === "running"
            ? Effect.fail(new Conflict({ error: "Resume already pending", code: "resume_pending" }))
            : Effect.fail(unprocessable("Execution is not waiting"))
        }
        if (resumed.record.status === "running") yield* engine.kick(e.id, { leased: resumed.record.wait === null, committed: true })
        return {
          ...(yield* summary(resumed.record)),
          requested_execution_id: requested.id,
          parent_flow_execution_id: e.parent_execution_id
        }
      })

      const events = Effect.fn("Executions.events")(function*(principal: Principal, id: string, filter: StepEventFilter, window: ListWindow) {
        const e = yield* findExecution(principal.project.id, id)
        return yield* steps.list(principal.project.id, e.id, filter, window)
      })

      const event = Effect.fn("Executions.event")(function*(principal: Principal, id: string) {
        return yield* steps.find(principal.project.id, id).pipe(
          Effect.flatMap(Option.match({ onNone: () => Effect.fail(notFound("Workflow event", id)), onSome: Effect.succeed }))
        )
      })

      /** Ends one live run as deleted; a run that moved meanwhile is read again (its slice is fenced by the write). */
      const endDeleted = (e: ExecutionRecord, attempt = 0): Effect.Effect<void> =>
        Effect.gen(function*() {
          if (isTerminal(e.status)) return
          const g = yield* engine.graph(e.revision_id)
          const now = new Date(yield* Clock.currentTimeMillis).toISOString()
          if (yield* engine.write(e, T.end(e, g, "workflow_deleted", now))) return
          const again = yield* repo.get(e.id)
          if (Option.isSome(again) && attempt < 5) yield* endDeleted(again.value, attempt + 1)
        })

      const deleteWorkflow = Effect.fn("Executions.deleteWorkflow")(function*(principal: Principal, workflowId: string) {
        yield* workflowService.delete(principal, workflowId, {
          beforeRemove: (w: WorkflowRecord) => Effect.flatMap(repo.listLive(w.project_id, w.id), (live) => Effect.forEach(live, (e) => endDeleted(e), { discard: true }))
        })
      })

      return Executions.of({ start, get, getFlowExecution, list, listByConversation, variables, move, deleteWorkflow, resume, events, event })
    })
  )
}

