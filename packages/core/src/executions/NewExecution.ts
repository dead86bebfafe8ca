/**
 * A new execution (decisions 2.4.1, 2.4.2, 2.5.1): its `execution_context`,
 * its record standing on the start node, and the events that open its log.
 * Pure: the `Launcher` (API starts, triggers, observers) and the engine
 * (a `call` node's child, written with its parent's checkpoint) both build
 * executions here.
 */
import type { ContactRecord } from "../messaging/Message.ts"
import type { MessageConfigRecord } from "../messaging/numbers/MessageConfig.ts"
import type { TriggerType } from "../workflows/Trigger.ts"
import type { WorkflowRecord } from "../workflows/Workflow.ts"
import type { ExecutionContext, ExecutionRecord } from "./Execution.ts"
import type { Graph } from "./Graph.ts"
import type * as T from "./Transitions.ts"

export interface Launch {
  readonly workflow: WorkflowRecord
  readonly triggerType: TriggerType
  readonly observer: boolean
  readonly config: MessageConfigRecord | null
  readonly contact: ContactRecord | null
  /**
   * The contact was made in the launch's own transaction (an API start for a new contact): no run can own its pair
   * and none can take it before this commits, so the launch does not look for an owner.
   */
  readonly contactMade?: boolean | undefined
  readonly conversationId: string | null
  /** Contact number digits, when known. */
  readonly phone: string | null
  readonly recipient: string | null
  readonly vars: Readonly<Record<string, unknown>>
  readonly context: Readonly<Record<string, unknown>>
  readonly initialData: unknown
  readonly metadata: Readonly<Record<string, unknown>>
  readonly system: Readonly<Record<string, unknown>>
  readonly dedupeKey: string | null
  readonly parent?: ExecutionRecord | undefined
  /** The inbound batch an inbound trigger starts with. */
  readonly firstInput?: { readonly value: unknown; readonly messageIds: ReadonlyArray<string> } | undefined
  /** Set: the run fails at once with this error (`Conversation is in handoff`). */
  readonly failWith?: string | undefined
  /**
   * The caller settled the pair's owner already, in the launch's transaction (`Launcher.claim`): the launch does not
   * again. A handoff that blocks the run is then in `failWith`.
   */
  readonly claimed?: boolean | undefined
}

/** Keys of `context` the service owns: a start request's `context` cannot overwrite them (decisions 2.4.2). */
export const SERVICE_CONTEXT_KEYS = ["channel", "phone_number", "recipient", "conversation_id", "contact", "initial_data"]

/** The record of a new execution of `l` on revision `revision` (graph `g`), and its first events. */
export const newExecution = (
  l: Launch,
  ids: { readonly id: string; readonly trackingId: string },
  now: string,
  revision: string,
  g: Graph
): { readonly record: ExecutionRecord; readonly events: ReadonlyArray<T.PlacedEvent> } => {
  const { id, trackingId } = ids
  const w = l.workflow
  const c = l.config
  const extra = Object.fromEntries(Object.entries(l.context).filter(([k]) => !SERVICE_CONTEXT_KEYS.includes(k)))
  const execution_context: ExecutionContext = {
    vars: { ...(l.parent?.execution_context.vars ?? {}), ...l.vars, ...(l.firstInput !== undefined ? { last_user_input: l.firstInput.value } : {}) },
    system: {
      trigger_type: l.triggerType,
      workflow_id: w.id,
      flow_id: w.id,
      workflow_name: w.name,
      flow_name: w.name,
      execution_id: id,
      tracking_id: trackingId,
      started_at: now,
      ...(c !== null
        ? {
          msg_config: {
            id: c.id,
            phone_number_id: c.phone_number_id,
            display_phone_number: c.display_phone_number,
            display_phone_number_normalized: c.display_phone_number_normalized,
            business_account_id: c.business_account_id,
            name: c.name,
            kind: c.kind
          }
        }
        : {}),
      ...(l.observer ? { observer: true } : {}),
      ...(l.parent !== undefined ? { parent_execution_id: l.parent.id } : {}),
      event_chain_depth: 0,
      ...l.system
    },
    context: {
      ...(l.parent?.execution_context.context ?? {}),
      ...extra,
      channel: c !== null ? "msg" : "api",
      phone_number: l.phone === null ? null : `+${l.phone}`,
      ...(l.recipient !== null ? { recipient: l.recipient } : {}),
      conversation_id: l.conversationId,
      contact: l.contact === null ? null : {
        id: l.contact.id,
        wa_id: l.contact.wa_id,
        name: l.contact.profile_name,
        profile_name: l.contact.profile_name,
        business_scoped_user_id: l.contact.business_scoped_user_id,
        username: l.contact.username
      },
      ...(l.initialData !== undefined ? { initial_data: l.initialData } : {})
    },
    metadata: { ...l.metadata }
  }
  const start = g.start
  const record: ExecutionRecord = {
    id,
    project_id: w.project_id,
    workflow_id: w.id,
    workflow_name: w.name,
    revision_id: revision,
    tracking_id: trackingId,
    status: "running",
    waiting_reason: null,
    trigger_type: l.triggerType,
    observer: l.observer,
    parent_execution_id: l.parent?.id ?? null,
    call_depth: l.parent === undefined ? 0 : l.parent.call_depth + 1,
    msg_conversation_id: l.conversationId,
    msg_config_id: c?.id ?? null,
    contact_id: l.contact?.id ?? null,
    started_at: now,
    last_event_at: now,
    ended_at: null,
    current_node: start?.id ?? null,
    execution_context,
    error_details: null,
    resumable_execution_id: null,
    wait: null,
    pending: null,
    agent: null,
    handoff: null,
    requested_status: null,
    step_seq: 1,
    state_version: 1,
    lease_owner: null,
    lease_until: null,
    dedupe_key: l.dedupeKey
  }
  const started: T.PlacedEvent = {
    draft: {
      event_type: "execution_started",
      payload: { trigger_type: l.triggerType, tracking_id: trackingId, variables: execution_context.vars, observer: l.observer }
    },
    node: null
  }
  const entered: ReadonlyArray<T.PlacedEvent> = start === undefined
    ? []
    : [{ draft: { event_type: "step_entered", payload: { node_type: "start" } }, node: start }]
  const input: ReadonlyArray<T.PlacedEvent> = l.firstInput === undefined ? [] : [{
    draft: {
      event_type: "user_input_received",
      payload: { message_ids: l.firstInput.messageIds, value: l.firstInput.value },
      direction: "inbound"
    },
    node: null
  }]
  return { record, events: [started, ...input, ...entered] }
}
