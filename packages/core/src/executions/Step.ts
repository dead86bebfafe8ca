/**
 * What running one node produces: the new `execution_context`, the step
 * events to append, and where the run goes next. The engine turns an
 * outcome into one checkpoint (`Engine.ts`); the nodes (`Nodes.ts`) only
 * compute outcomes.
 */
import { Data } from "effect"
import type { ExecutionContext, HandoffState, PendingAction, WaitingReason, WaitState } from "./Execution.ts"
import type { AgentState } from "./agent/AgentState.ts"
import type { Launch } from "./NewExecution.ts"
import type { MessageConfigRecord } from "../messaging/numbers/MessageConfig.ts"

/** A step event before it is numbered and stamped; `step` defaults to the node that ran. */
export interface EventDraft {
  readonly event_type: string
  readonly payload: Readonly<Record<string, unknown>>
  readonly direction?: "inbound" | "outbound" | null | undefined
  readonly edge_label?: string | null | undefined
  /** false: an execution-level event (no step). */
  readonly withStep?: boolean | undefined
}

export type EndReason = "completed" | "manual" | "superseded" | "workflow_deleted" | "observer_wait" | "no_edge" | "node_removed"

export type Next =
  /** Leave the node by the edge with this label; no such edge ends the run (`completed`, or `no_edge` for a decide). */
  | { readonly _tag: "Follow"; readonly label: string; readonly noEdge?: EndReason | undefined }
  | { readonly _tag: "Park"; readonly wait: WaitState; readonly reason: WaitingReason | null }
  /**
   * `sender`: a send's number as the node read it; the engine performs a send recorded by the same slice with it
   * instead of reading it again.
   */
  | { readonly _tag: "Perform"; readonly pending: PendingAction; readonly sender?: MessageConfigRecord | undefined }
  /** `contextData`: a handoff node's `context_data` (2.3.12), logged on its `execution_handoff` event. */
  | { readonly _tag: "Handoff"; readonly handoff: HandoffState; readonly contextData?: unknown }
  | { readonly _tag: "End"; readonly reason: EndReason }
  | { readonly _tag: "Fail"; readonly message: string; readonly code?: string | undefined }
  /** Checkpoint and run the same node again: an agent's next model call or tool call (decisions 10.6). */
  | { readonly _tag: "Stay" }

/** A child execution the checkpoint creates with it (a `call` node, decisions 2.3.11). */
export interface Spawn {
  readonly launch: Launch
  readonly id: string
  readonly trackingId: string
}

export interface StepOutcome {
  readonly context: ExecutionContext
  readonly events: ReadonlyArray<EventDraft>
  readonly next: Next
  /** Secret values the step's events may hold: masked in the log. */
  readonly secrets?: ReadonlyArray<string> | undefined
  /** Created in the same transaction as the outcome's checkpoint (with `Park` on a `call` wait). */
  readonly spawn?: Spawn | undefined
  /** The agent node's journal after the step; absent leaves it as it was. */
  readonly agent?: AgentState | null | undefined
  /** Queued inputs the step consumed (an agent's mid-activation messages): taken in the checkpoint's transaction. */
  readonly take?: ReadonlyArray<string> | undefined
}

/** A step that cannot go on: the execution fails with `message` (and `code`). */
export class StepFailed extends Data.TaggedError("StepFailed")<{
  readonly message: string
  readonly code?: string | undefined
  /** Events the step recorded before it failed (e.g. `action_failed`). */
  readonly events?: ReadonlyArray<EventDraft> | undefined
  /** Secret values those events may hold: masked in the log. */
  readonly secrets?: ReadonlyArray<string> | undefined
}> {}

export const follow = (context: ExecutionContext, events: ReadonlyArray<EventDraft>, label = "next"): StepOutcome => ({
  context,
  events,
  next: { _tag: "Follow", label }
})
