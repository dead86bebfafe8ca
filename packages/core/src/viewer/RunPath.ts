/**
 * Where a run went, read from its step events over its revision's graph: the nodes it entered (and how often), the
 * edges it followed (a `step_completed` names its node and the label it left by), and the node it failed on.
 */
import type { StepEventRecord } from "../executions/Execution.ts"
import type { Definition } from "../workflows/Workflow.ts"

export interface RunPath {
  readonly nodes: ReadonlyArray<{ readonly id: string; readonly visits: number }>
  readonly edges: ReadonlyArray<string>
  readonly failed_node: string | null
}

export const runPath = (definition: Definition, events: ReadonlyArray<StepEventRecord>): RunPath => {
  const visits = new Map<string, number>()
  const edges: Array<string> = []
  let failed: string | null = null
  for (const e of events) {
    const node = e.step?.identifier
    if (node === undefined) continue
    if (e.event_type === "step_entered") visits.set(node, (visits.get(node) ?? 0) + 1)
    else if (e.event_type === "step_completed" && e.edge_label !== null) {
      const edge = definition.edges.find((x) => x.source === node && x.label === e.edge_label)
      if (edge !== undefined) edges.push(edge.id)
    } else if (e.event_type === "step_failed") failed = node
  }
  return { nodes: [...visits].map(([id, count]) => ({ id, visits: count })), edges, failed_node: failed }
}
