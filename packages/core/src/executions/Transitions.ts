/**
 * Pure transitions of an execution record (decisions 3.2, 6.8): given the
 * record and what happened, the next record and the step events to append.
 * The engine writes each result as one checkpoint; nothing here reads or
 * writes storage, so every rule of the state machine is in one place.
 */
import type { Node } from "../workflows/Workflow.ts"
import { activate } from "./agent/AgentState.ts"
import {
  type ErrorDetails,
  type ExecutionContext,
  type ExecutionRecord,
  type ExecutionStatus,
  type HandoffState
} from "./Execution.ts"
import type { Graph } from "./Graph.ts"
import { contextTooLarge } from "./Interpolation.ts"
import type { EndReason, EventDraft, Next, StepOutcome } from "./Step.ts"

/** An event with the node it belongs to (null: execution-level). */
export interface PlacedEvent {
  readonly draft: EventDraft
  readonly node: Node | null
}

export interface Transition {
  readonly record: ExecutionRecord
  readonly events: ReadonlyArray<PlacedEvent>
}

/** A domain event for webhooks (decisions 6.3 execution events), when the move sends one. */
export const webhookBody = (e: ExecutionRecord, now: string) => {
  const base = {
    occurred_at: now,
    project_id: e.project_id,
    workflow_id: e.workflow_id,
    workflow_execution_id: e.id,
    tracking_id: e.tracking_id,
    channel: e.msg_config_id === null ? "api" : "msg",
    msg_conversation_id: e.msg_conversation_id
  }
  if (e.status === "handoff" && e.handoff !== null) {
    return {
      type: "workflow.execution.handoff",
      body: { event: "workflow.execution.handoff", ...base, status: "handoff", handoff: { reason: e.handoff.reason, source: e.handoff.source } }
    }
  }
  if (e.status === "failed" && e.error_details !== null) {
    return {
      type: "workflow.execution.failed",
      body: {
        event: "workflow.execution.failed",
        ...base,
        status: "failed",
        error: { message: e.error_details.message, step_identifier: e.error_details.step_identifier }
      }
    }
  }
  return undefined
}

const released = { lease_owner: null, lease_until: null } as const

const at = (e: ExecutionRecord, now: string, patch: Partial<ExecutionRecord>): ExecutionRecord => ({
  ...e,
  ...patch,
  last_event_at: now,
  state_version: e.state_version + 1
})

const event = (event_type: string, payload: Record<string, unknown>, node: Node | null, extra: Partial<EventDraft> = {}): PlacedEvent => ({
  draft: { event_type, payload, ...extra },
  node
})

/** Ends the run (any non-terminal state). */
export const end = (e: ExecutionRecord, graph: Graph, reason: EndReason, now: string): Transition => ({
  record: at(e, now, {
    status: "ended",
    waiting_reason: null,
    ended_at: now,
    wait: null,
    pending: null,
    agent: null,
    requested_status: null,
    resumable_execution_id: null,
    ...released
  }),
  events: [event("execution_ended", { reason }, e.current_node === null ? null : graph.node(e.current_node) ?? null)]
})

/** Fails the run; the step's own events (e.g. `action_failed`) come first. */
export const fail = (
  e: ExecutionRecord,
  graph: Graph,
  error: { readonly message: string; readonly code?: string | undefined },
  now: string,
  stepEvents: ReadonlyArray<EventDraft> = []
): Transition => {
  const node = e.current_node === null ? null : graph.node(e.current_node) ?? null
  const details: ErrorDetails = {
    message: error.message,
    step_identifier: node?.id ?? null,
    node_type: node?.data.node_type ?? null,
    ...(error.code !== undefined ? { code: error.code } : {}),
    occurred_at: now
  }
  const errorPayload = { message: error.message, ...(error.code !== undefined ? { code: error.code } : {}) }
  return {
    record: at(e, now, {
      status: "failed",
      waiting_reason: null,
      ended_at: now,
      error_details: details,
      wait: null,
      pending: null,
      agent: null,
      requested_status: null,
      resumable_execution_id: null,
      ...released
    }),
    events: [
      ...stepEvents.map((draft) => ({ draft, node })),
      ...(node === null ? [] : [event("step_failed", { error: errorPayload }, node)]),
      event("execution_failed", { error: { ...errorPayload, step_identifier: node?.id ?? null } }, null)
    ]
  }
}

export const handoff = (
  e: ExecutionRecord,
  state: HandoffState,
  now: string,
  events: ReadonlyArray<PlacedEvent> = [],
  contextData?: unknown
): Transition => ({
  record: at(e, now, {
    status: "handoff",
    waiting_reason: null,
    handoff: state,
    wait: null,
    pending: null,
    requested_status: null,
    resumable_execution_id: null,
    ...released
  }),
  // A handoff node's `context_data` rides on the handoff's own event (it is not a variable, decisions 2.3.12).
  events: [
    ...events,
    event("execution_handoff", { reason: state.reason, source: state.source, ...(contextData !== undefined ? { context_data: contextData } : {}) }, null)
  ]
})

/** PATCH `waiting`, or a run that reached its next step after one was asked for. */
export const waitForApi = (e: ExecutionRecord, now: string, events: ReadonlyArray<PlacedEvent> = []): Transition => ({
  record: at(e, now, {
    status: "waiting",
    waiting_reason: "api",
    wait: { kind: "api", seq: e.step_seq, node_id: e.current_node ?? "", due_at: null, timeout_seconds: null },
    requested_status: null,
    resumable_execution_id: e.id,
    ...released
  }),
  events
})

const tooLarge = contextTooLarge

/**
 * Leaves `node` by `label` into the next node (or ends), with `context`:
 * `step_completed` for the node, `step_entered` for the next one.
 */
export const leave = (
  e: ExecutionRecord,
  graph: Graph,
  node: Node,
  label: string,
  context: ExecutionContext,
  now: string,
  durationMs: number,
  before: ReadonlyArray<PlacedEvent>,
  noEdge: EndReason = "completed"
): Transition => {
  if (tooLarge(context)) return fail({ ...e, current_node: node.id }, graph, { message: "Execution context too large" }, now)
  const completed = event("step_completed", { duration_ms: durationMs }, node, { edge_label: label })
  const target = graph.follow(node.id, label)
  const moved = { ...e, execution_context: context }
  if (target === undefined) {
    const ended = end(moved, graph, noEdge, now)
    return { record: { ...ended.record, current_node: null }, events: [...before, completed, ...ended.events] }
  }
  const next = graph.node(target)!
  const stepped = at(moved, now, {
    current_node: target,
    step_seq: e.step_seq + 1,
    wait: null,
    pending: null,
    agent: null,
    waiting_reason: null,
    status: "running" as ExecutionStatus
  })
  const entered = event("step_entered", { node_type: next.data.node_type }, next)
  // A PATCH to `waiting` made while the step ran takes effect now, before the next step.
  if (e.requested_status === "waiting") return waitForApi(stepped, now, [...before, completed, entered])
  return { record: stepped, events: [...before, completed, entered] }
}

/** The record after a node answered `outcome` (every `Next` but `Perform`, which the engine handles). */
export const apply = (
  given: ExecutionRecord,
  graph: Graph,
  node: Node,
  outcome: StepOutcome,
  now: string,
  durationMs: number
): Transition => {
  const placed = outcome.events.map((draft) => ({ draft, node: draft.withStep === false ? null : node }))
  const next: Next = outcome.next
  // The agent's journal the step wrote goes with every kind of move.
  const e = outcome.agent === undefined ? given : { ...given, agent: outcome.agent }
  switch (next._tag) {
    case "Follow":
      return leave(e, graph, node, next.label, outcome.context, now, durationMs, placed, next.noEdge)
    case "Park": {
      if (tooLarge(outcome.context)) return fail(e, graph, { message: "Execution context too large" }, now)
      const waiting = next.reason !== null
      return {
        record: at(e, now, {
          execution_context: outcome.context,
          status: waiting ? "waiting" : "running",
          waiting_reason: next.reason,
          wait: next.wait,
          resumable_execution_id: waiting ? e.id : null,
          ...released
        }),
        events: placed
      }
    }
    case "Handoff":
      return handoff({ ...e, execution_context: outcome.context }, next.handoff, now, placed, next.contextData)
    case "End": {
      const ended = end({ ...e, execution_context: outcome.context }, graph, next.reason, now)
      return { record: ended.record, events: [...placed, ...ended.events] }
    }
    case "Fail":
      return fail(e, graph, next, now, outcome.events)
    case "Stay":
      if (tooLarge(outcome.context)) return fail(e, graph, { message: "Execution context too large" }, now)
      return {
        record: at(e, now, { execution_context: outcome.context, step_seq: e.step_seq + 1, pending: null, wait: null }),
        events: placed
      }
    case "Perform":
      return {
        record: at(e, now, { execution_context: outcome.context, pending: next.pending }),
        // A send logs its envelope here; a webhook logged its request itself (with its secrets masked).
        events: next.pending.kind === "send"
          ? [...placed, event("action_executing", { action: node.data.node_type, request: next.pending.envelope }, node)]
          : placed
      }
  }
}

/** A waiting execution takes routed input or a resume (decisions 2.3.5, 4.2): it leaves its wait node by `next`. */
export const resume = (
  e: ExecutionRecord,
  graph: Graph,
  input: {
    readonly value: unknown
    readonly reason: "user_input" | "timeout" | "api"
    readonly source: "inbound" | "api" | "timeout"
    readonly kind: string
    readonly messageIds: ReadonlyArray<string>
    readonly variables?: Readonly<Record<string, unknown>> | undefined
  },
  now: string
): Transition => {
  const nodeId = e.wait?.node_id ?? e.current_node
  const node = nodeId === null ? undefined : graph.node(nodeId)
  const { pending_timeout: _, ...system } = e.execution_context.system
  const lastResume = { reason: input.reason, at: now }
  let vars = { ...e.execution_context.vars, ...input.variables }
  const events: Array<PlacedEvent> = [
    event("execution_resumed", { from_status: e.status, kind: input.kind, source: input.source }, null)
  ]
  if (input.variables !== undefined && Object.keys(input.variables).length > 0) {
    events.push(event("variables_merged", { keys: Object.keys(input.variables), source: "resume" }, node ?? null))
  }
  if (input.reason === "timeout") {
    events.push(event("wait_timeout", { timeout_seconds: e.wait?.timeout_seconds ?? null }, node ?? null))
  } else if (input.value !== undefined) {
    const saveTo = node?.data.config.save_response_to
    vars = { ...vars, last_user_input: input.value, ...(typeof saveTo === "string" && saveTo.length > 0 ? { [saveTo]: input.value } : {}) }
    events.push(event("user_input_received", { message_ids: input.messageIds, value: input.value }, node ?? null, {
      direction: "inbound"
    }))
  }
  const context: ExecutionContext = { ...e.execution_context, vars, system: { ...system, last_resume: lastResume } }
  const running: ExecutionRecord = { ...e, status: "running", waiting_reason: null, wait: null, resumable_execution_id: null }
  if (node !== undefined && node.data.node_type === "agent" && e.agent !== null && e.agent.node_id === node.id) {
    // The agent takes the input as its next user turn: a new activation on the same node (decisions 10.6).
    return {
      record: at({ ...running, handoff: null }, now, {
        execution_context: context,
        agent: activate(e.agent, input.reason === "timeout" ? undefined : input.value),
        step_seq: e.step_seq + 1,
        pending: null
      }),
      events
    }
  }
  if (node === undefined) {
    const ended = end({ ...running, execution_context: context }, graph, "completed", now)
    return { record: ended.record, events: [...events, ...ended.events] }
  }
  // A handoff node follows its `next` edge when resumed (decisions 3.2); so do waits.
  return leave({ ...running, handoff: null }, graph, node, "next", context, now, 0, events)
}

/**
 * A `call` node's parent follows its child (decisions 2.3.11, 3.2): running
 * while the child runs, `waiting` (`call`) pointing at the deepest waiting
 * child, `handoff` with a child in handoff; once the child ends its `vars`
 * merge back and the parent leaves by `next`; a failed child's error goes to
 * `save_error_to` (and the parent goes on) or fails the parent. A child
 * superseded by a new start supersedes its parent too: the conversation has
 * a new owner. Undefined when the parent already stands where it should.
 */
export const followChild = (
  p: ExecutionRecord,
  graph: Graph,
  child: ExecutionRecord,
  childEndReason: EndReason,
  now: string
): Transition | undefined => {
  const node = p.wait?.node_id === undefined ? undefined : graph.node(p.wait.node_id)
  if (node === undefined) return fail(p, graph, { message: "The call step can no longer be resumed" }, now)
  const resumable = child.resumable_execution_id ?? child.id
  const resumed = p.status === "running" ? [] : [event("execution_resumed", { from_status: p.status, kind: "call", source: "call" }, null)]
  const back = { ...p, status: "running" as const, waiting_reason: null, resumable_execution_id: null, handoff: null, wait: null }
  const durationMs = Math.max(0, Date.parse(now) - Date.parse(p.last_event_at))
  switch (child.status) {
    case "running":
      if (p.status === "running" && p.resumable_execution_id === null) return undefined
      return {
        record: at(p, now, { status: "running", waiting_reason: null, resumable_execution_id: null, handoff: null, ...released }),
        events: resumed
      }
    case "waiting":
      if (p.status === "waiting" && p.resumable_execution_id === resumable) return undefined
      return { record: at(p, now, { status: "waiting", waiting_reason: "call", resumable_execution_id: resumable, handoff: null, ...released }), events: [] }
    case "handoff": {
      if (p.status === "handoff" && p.resumable_execution_id === resumable) return undefined
      const state: HandoffState = { node_id: node.id, reason: child.handoff?.reason ?? null, source: child.handoff?.source ?? "action_step" }
      return {
        record: at(p, now, { status: "handoff", waiting_reason: null, handoff: state, resumable_execution_id: resumable, ...released }),
        events: [event("execution_handoff", { reason: state.reason, source: state.source }, null)]
      }
    }
    case "ended": {
      if (childEndReason === "superseded") return end(p, graph, "superseded", now)
      const vars = child.execution_context.vars
      const context: ExecutionContext = { ...p.execution_context, vars: { ...p.execution_context.vars, ...vars } }
      return leave(back, graph, node, "next", context, now, durationMs, [
        ...resumed,
        event("action_performed", { action: "call", execution_id: child.id, status: "ended" }, node),
        event("variables_merged", { keys: Object.keys(vars), source: "call" }, node)
      ])
    }
    case "failed": {
      const message = child.error_details?.message ?? "The called workflow failed"
      const error = { message, execution_id: child.id }
      const failed = event("action_failed", {
        action: "call",
        execution_id: child.id,
        error: { message, ...(child.error_details?.code !== undefined ? { code: child.error_details.code } : {}) }
      }, node)
      const saveTo = node.data.config.save_error_to
      if (typeof saveTo === "string" && saveTo.length > 0) {
        const context: ExecutionContext = { ...p.execution_context, vars: { ...p.execution_context.vars, [saveTo]: error } }
        return leave(back, graph, node, "next", context, now, durationMs, [
          ...resumed,
          failed,
          event("variables_set", { name: saveTo, value: error }, node)
        ])
      }
      return fail({ ...p, current_node: node.id }, graph, { message: `Called workflow failed: ${message}`, code: "call_failed" }, now, [failed.draft])
    }
  }
}
