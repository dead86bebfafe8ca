/**
 * Walking a revision's graph: nodes by id and the edge a node leaves by.
 * Built once per revision (revisions never change) and remembered.
 */
import type { Definition, Edge, Node } from "../workflows/Workflow.ts"

export interface Graph {
  readonly definition: Definition
  readonly start: Node | undefined
  readonly node: (id: string) => Node | undefined
  /** The target of the node's edge with this label (`next` for every non-decide node). */
  readonly follow: (nodeId: string, label: string) => string | undefined
  /** The labels of the node's outgoing edges. */
  readonly labels: (nodeId: string) => ReadonlyArray<string>
}

export const makeGraph = (definition: Definition): Graph => {
  const nodes = new Map(definition.nodes.map((n) => [n.id, n] as const))
  const edges = new Map<string, Array<Edge>>()
  for (const edge of definition.edges) edges.set(edge.source, [...(edges.get(edge.source) ?? []), edge])
  return {
    definition,
    start: definition.nodes.find((n) => n.data.node_type === "start"),
    node: (id) => nodes.get(id),
    follow: (nodeId, label) => edges.get(nodeId)?.find((e) => (e.label ?? "next") === label)?.target,
    labels: (nodeId) => (edges.get(nodeId) ?? []).map((e) => e.label ?? "next")
  }
}
