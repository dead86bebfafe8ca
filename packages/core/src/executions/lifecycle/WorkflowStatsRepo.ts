/**
 * Counts over a workflow's step events (issue 32 §4): who entered each branch of a split node and reached its goal,
 * and how runs flow through each node. Answered by the storage (one aggregate query on PostgreSQL), never by loading
 * the events. Step events older than the retention period are pruned, and with them what they counted.
 */
import { Context, type Effect } from "effect"
import type { SplitGoal } from "../nodes/SplitNode.ts"

export interface BranchCounts {
  readonly branch: string
  /** Runs assigned to the branch (a run that passes the split again counts once, in its first branch). */
  readonly entries: number
  /** Of those, runs that reached the goal after their assignment. */
  readonly conversions: number
}

export interface NodeFlow {
  readonly node_id: string
  /** Runs that entered the node. */
  readonly entered: number
  /** Runs that completed it (left by an edge). */
  readonly left: number
  /** Runs waiting on it now. */
  readonly waiting: number
}

export class WorkflowStatsRepo extends Context.Service<WorkflowStatsRepo, {
  /** Per branch of the split node (by the branch recorded in `split_assigned`); a null goal counts no conversions. */
  readonly splitCounts: (
    projectId: string,
    workflowId: string,
    nodeId: string,
    goal: SplitGoal | null
  ) => Effect.Effect<ReadonlyArray<BranchCounts>>
  /** Per node id that has step events or waiting runs. */
  readonly nodeFlow: (projectId: string, workflowId: string) => Effect.Effect<ReadonlyArray<NodeFlow>>
}>()("@parley/core/ports/WorkflowStatsRepo") {}
