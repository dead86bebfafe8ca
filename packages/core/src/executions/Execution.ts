/**
 * The workflow execution (decisions 2.5.2, 3.2) and its step events (6.8):
 * the stored records the engine checkpoints, and their wire forms (summary,
 * detail, step event, the older surface's flow execution).
 *
 * The stored record is the whole state of a run: the node it stands on, its
 * `execution_context`, why it waits, the action in flight, and the fencing
 * fields (`state_version`, lease) that keep two hosts from advancing it at
 * once. It is never replayed: every transition replaces it.
 */
import { Schema } from "effect"
import type { AgentState } from "./agent/AgentState.ts"
import { nameUuid } from "../shared/Ids.ts"
import { TriggerType } from "../workflows/Trigger.ts"
import type { Definition, Node } from "../workflows/Workflow.ts"
import { Flow, WorkflowMinimal } from "../workflows/Workflow.ts"

/** `execution_context` (decisions 2.4.1). */
export interface ExecutionContext {
  readonly vars: Record<string, unknown>
  readonly system: Record<string, unknown>
  readonly context: Record<string, unknown>
  readonly metadata: Record<string, unknown>
}

export const ExecutionStatus = Schema.Literals(["running", "waiting", "ended", "failed", "handoff"])
export type ExecutionStatus = typeof ExecutionStatus.Type

export const WaitingReason = Schema.Literals(["wait_for_response", "agent", "call", "api"])
export type WaitingReason = typeof WaitingReason.Type

export const isTerminal = (status: ExecutionStatus) => status === "ended" || status === "failed"

/**
 * What a parked execution waits for. `delay` is a `send_text` with
 * `delay_seconds` (the execution stays `running`); `doubt` is a send whose
 * outcome a crash left unknown, looked at again at `due_at`; `quiet_hours` is
 * a send the guardrails hold until the recipient's quiet hours end (`due_at`).
 */
export interface WaitState {
  /** `agent`: an agent node waits for the contact's next input (decisions 10.6). */
  readonly kind: "wait_for_response" | "delay" | "call" | "api" | "doubt" | "agent" | "quiet_hours"
  /** Bumped on every new wait: a timer fires only while it still names this wait. */
  readonly seq: number
  readonly node_id: string
  /** When the timer fires (timeout, delay end); null without a timer. */
  readonly due_at: string | null
  readonly timeout_seconds: number | null
  /** `call`: the child execution. */
  readonly child_id?: string | undefined
}

/**
 * A side effect the engine recorded before performing it (decisions 10.4):
 * its key is fixed per step visit, so after a crash the engine can tell
 * whether it happened instead of doing it again.
 */
export type PendingAction = PendingSend | PendingWebhook | PendingAgentTool

/** The waits an inbound message resumes: routed input is what they wait for (decisions 10.1, 10.6). */
export const takesInput = (wait: WaitState | null): boolean => wait?.kind === "wait_for_response" || wait?.kind === "agent"

/**
 * A webhook node's request about to be made (decisions 2.3.8, 10.4). It holds
 * no request: the engine computes it again from the node and the unchanged
 * context, so resolved secrets never rest in the record. Only the slice that
 * wrote it makes the request; whoever else finds it (a host recovering the
 * run) cannot know whether the request left and fails the step as in doubt.
 */
export interface PendingWebhook {
  readonly kind: "webhook"
  /** `<execution id>:<step visit>`. */
  readonly key: string
  readonly node_id: string
  readonly started_at: string
  /** AI field values (decisions 2.3.14) generated when the request was recorded: the request made uses them. */
  readonly ai_values?: Readonly<Record<string, string>> | undefined
}

/**
 * An agent's tool call with an outside effect (a function, a webhook, an MCP
 * server, an event) about to be made: like `PendingWebhook`, made only by the
 * slice that recorded it; found by anyone else, the model is told its outcome
 * is unverified, and it is not made again (decisions 10.6).
 */
export interface PendingAgentTool {
  readonly kind: "agent_tool"
  readonly key: string
  readonly node_id: string
  readonly call_id: string
  readonly started_at: string
}

export interface PendingSend {
  readonly kind: "send"
  /** `<execution id>:<step visit>`, sent as the message's `biz_opaque_callback_data`. */
  readonly key: string
  readonly node_id: string
  /** Parley's id the outbound message is recorded under. */
  readonly message_id: string
  readonly msg_config_id: string
  readonly to: string
  readonly envelope: Readonly<Record<string, unknown>>
  readonly started_at: string
  /** An agent's send: its tool call (null for assistant text); the run stays on the agent node after it. */
  readonly agent?: { readonly call_id: string | null; readonly text: string } | undefined
}

export interface ErrorDetails {
  readonly message: string
  readonly step_identifier: string | null
  readonly node_type: string | null
  readonly code?: string | undefined
  readonly occurred_at: string
}

export interface HandoffState {
  readonly node_id: string | null
  readonly reason: string | null
  readonly source: "agent_tool" | "action_step" | "api"
}

/** The stored execution. */
export interface ExecutionRecord {
  readonly id: string
  readonly project_id: string
  readonly workflow_id: string
  readonly workflow_name: string
  /** The immutable graph this run walks (`WorkflowRevision`). */
  readonly revision_id: string
  readonly tracking_id: string
  readonly status: ExecutionStatus
  readonly waiting_reason: WaitingReason | null
  readonly trigger_type: TriggerType
  readonly observer: boolean
  readonly parent_execution_id: string | null
  readonly call_depth: number
  readonly msg_conversation_id: string | null
  /** The sender number's message config (routing key N), when the run has one. */
  readonly msg_config_id: string | null
  /** The contact (routing key C), when the run has one. */
  readonly contact_id: string | null
  readonly started_at: string
  readonly last_event_at: string
  readonly ended_at: string | null
  /** The node the run stands on (the next to run while `running`); null once terminal. */
  readonly current_node: string | null
  readonly execution_context: ExecutionContext
  readonly error_details: ErrorDetails | null
  readonly resumable_execution_id: string | null
  readonly wait: WaitState | null
  readonly pending: PendingAction | null
  /** The agent node's journal while the run stands on one (decisions 10.6); null elsewhere. */
  readonly agent: AgentState | null
  readonly handoff: HandoffState | null
  /** A PATCH to `waiting` made while running: the run waits after its current step. */
  readonly requested_status: "waiting" | null
  /** Step visits so far: names each visit's idempotency key. */
  readonly step_seq: number
  /** Fencing: every write of the record is a compare-and-set on it. */
  readonly state_version: number
  readonly lease_owner: string | null
  readonly lease_until: string | null
  /** Natural key of what started it (trigger + message or event), so a repeated delivery starts nothing new. */
  readonly dedupe_key: string | null
}

/** One immutable snapshot of a workflow's graph, shared by the executions started on it. */
export interface WorkflowRevision {
  readonly id: string
  readonly workflow_id: string
  readonly project_id: string
  readonly definition: Definition
  readonly created_at: string
}

export interface StepRef {
  readonly id: string
  readonly identifier: string
  readonly node_type: string
  readonly display_name: string
}

/** A step event (decisions 6.8). */
export interface StepEventRecord {
  readonly id: string
  readonly project_id: string
  readonly execution_id: string
  /** Order within the execution. */
  readonly seq: number
  readonly event_type: string
  readonly direction: "inbound" | "outbound" | null
  readonly edge_label: string | null
  readonly created_at: string
  readonly payload: Readonly<Record<string, unknown>>
  readonly step: StepRef | null
}

/** Step ids already derived (a SHA-1 each: about 4% of the host's CPU per step of a chain when derived every time). */
const stepIds = new Map<string, string>()
const STEP_IDS_KEPT = 10_000

/** The uuid of a step: fixed per (workflow, node id), so every run names a node the same way. */
export const stepId = (workflowId: string, nodeId: string): string => {
  const name = `step:${workflowId}:${nodeId}`
  const known = stepIds.get(name)
  if (known !== undefined) return known
  if (stepIds.size >= STEP_IDS_KEPT) stepIds.clear()
  const id = nameUuid(name)
  stepIds.set(name, id)
  return id
}

export const stepRef = (workflowId: string, node: Node): StepRef => ({
  id: stepId(workflowId, node.id),
  identifier: node.id,
  node_type: node.data.node_type,
  display_name: node.data.display_name
})

export const StepRefSchema = Schema.Struct({
  id: Schema.String,
  identifier: Schema.String,
  node_type: Schema.String,
  display_name: Schema.String
})

export const CurrentStep = Schema.Struct({
  ...StepRefSchema.fields,
  position: Schema.Struct({ x: Schema.Finite, y: Schema.Finite })
})

export const ExecutionSummary = Schema.Struct({
  id: Schema.String,
  status: ExecutionStatus,
  waiting_reason: Schema.NullOr(WaitingReason),
  started_at: Schema.String,
  last_event_at: Schema.String,
  ended_at: Schema.NullOr(Schema.String),
  tracking_id: Schema.NullOr(Schema.String),
  msg_conversation_id: Schema.NullOr(Schema.String),
  trigger_type: TriggerType,
  observer: Schema.Boolean,
  parent_execution_id: Schema.NullOr(Schema.String),
  workflow: WorkflowMinimal,
  current_step: Schema.NullOr(CurrentStep)
})
export type ExecutionSummary = typeof ExecutionSummary.Type

export const StepEvent = Schema.Struct({
  id: Schema.String,
  event_type: Schema.String,
  direction: Schema.NullOr(Schema.Literals(["inbound", "outbound"])),
  edge_label: Schema.NullOr(Schema.String),
  created_at: Schema.String,
  payload: Schema.Record(Schema.String, Schema.Unknown),
  step: Schema.NullOr(StepRefSchema)
})
export type StepEvent = typeof StepEvent.Type

export const ExecutionDetail = Schema.Struct({
  ...ExecutionSummary.fields,
  error_details: Schema.NullOr(Schema.Struct({
    message: Schema.String,
    step_identifier: Schema.NullOr(Schema.String),
    node_type: Schema.NullOr(Schema.String),
    code: Schema.optionalKey(Schema.String),
    occurred_at: Schema.String
  })),
  resumable_execution_id: Schema.NullOr(Schema.String),
  revision_id: Schema.String.annotate({ description: "The revision of the workflow's graph the run walks (`/workflows/<id>/revisions`)" }),
  execution_context: Schema.Struct({
    vars: Schema.Record(Schema.String, Schema.Unknown),
    system: Schema.Record(Schema.String, Schema.Unknown),
    context: Schema.Record(Schema.String, Schema.Unknown),
    metadata: Schema.Record(Schema.String, Schema.Unknown)
  }),
  events: Schema.Array(StepEvent)
})
export type ExecutionDetail = typeof ExecutionDetail.Type

export const toStepEvent = (e: StepEventRecord): StepEvent => ({
  id: e.id,
  event_type: e.event_type,
  direction: e.direction,
  edge_label: e.edge_label,
  created_at: e.created_at,
  payload: e.payload,
  step: e.step
})

/** `workflow.status` of the summary is the workflow's status now; a deleted workflow has no executions left. */
export const toSummary = (
  e: ExecutionRecord,
  definition: Definition,
  workflowStatus: string
): ExecutionSummary => {
  const node = e.current_node === null ? undefined : definition.nodes.find((n) => n.id === e.current_node)
  return {
    id: e.id,
    status: e.status,
    waiting_reason: e.waiting_reason,
    started_at: e.started_at,
    last_event_at: e.last_event_at,
    ended_at: e.ended_at,
    tracking_id: e.tracking_id,
    msg_conversation_id: e.msg_conversation_id,
    trigger_type: e.trigger_type,
    observer: e.observer,
    parent_execution_id: e.parent_execution_id,
    workflow: { id: e.workflow_id, name: e.workflow_name, status: workflowStatus },
    current_step: node === undefined || e.status === "ended" || e.status === "failed"
      ? null
      : { ...stepRef(e.workflow_id, node), position: node.position }
  }
}

export const toDetail = (
  e: ExecutionRecord,
  definition: Definition,
  workflowStatus: string,
  events: ReadonlyArray<StepEventRecord>
): ExecutionDetail => ({
  ...toSummary(e, definition, workflowStatus),
  error_details: e.error_details === null ? null : {
    message: e.error_details.message,
    step_identifier: e.error_details.step_identifier,
    node_type: e.error_details.node_type,
    ...(e.error_details.code !== undefined ? { code: e.error_details.code } : {}),
    occurred_at: e.error_details.occurred_at
  },
  resumable_execution_id: e.resumable_execution_id,
  revision_id: e.revision_id,
  execution_context: e.execution_context,
  events: events.map(toStepEvent)
})

/** The older surface's flow execution (`GET {legacy_url}/flow_executions/<id>`). */
export const FlowExecution = Schema.Struct({
  id: Schema.String,
  flow_id: Schema.String,
  status: ExecutionStatus,
  started_at: Schema.String,
  ended_at: Schema.NullOr(Schema.String),
  last_event_at: Schema.String,
  tracking_id: Schema.String,
  current_step: Schema.NullOr(Schema.Struct({ id: Schema.String, name: Schema.String, step_type: Schema.String })),
  execution_context: Schema.Record(Schema.String, Schema.Unknown),
  variables: Schema.Record(Schema.String, Schema.Unknown),
  flow: Flow
})
export type FlowExecution = typeof FlowExecution.Type

export const toFlowExecution = (e: ExecutionRecord, definition: Definition, flow: Flow): FlowExecution => {
  const summary = toSummary(e, definition, flow.status)
  return {
    id: e.id,
    flow_id: e.workflow_id,
    status: e.status,
    started_at: e.started_at,
    ended_at: e.ended_at,
    last_event_at: e.last_event_at,
    tracking_id: e.tracking_id,
    current_step: summary.current_step === null
      ? null
      : { id: summary.current_step.id, name: summary.current_step.display_name, step_type: summary.current_step.node_type },
    execution_context: e.execution_context as unknown as Record<string, unknown>,
    variables: e.execution_context.vars,
    flow
  }
}

/** Filters of `GET /workflows/<id>/executions` and `/msg/conversations/<id>/flow_executions` (decisions 4.2). */
export interface ExecutionFilter {
  readonly workflow_id?: string | undefined
  readonly msg_conversation_id?: string | undefined
  readonly status?: ExecutionStatus | undefined
  /** A reason, or `timeout` for waits with a scheduled timeout. */
  readonly waiting_reason?: WaitingReason | "timeout" | undefined
  readonly trigger_type?: TriggerType | undefined
  readonly created_after?: string | undefined
  readonly created_before?: string | undefined
}

export interface StepEventFilter {
  readonly event_types?: ReadonlyArray<string> | undefined
}
