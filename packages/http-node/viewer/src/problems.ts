/**
 * Which node or edge a validation problem names: its path is `nodes.<id>...` once the node's id is usable,
 * `nodes[<i>]...` before, `edges[<i>]...` for an edge; anything else (`nodes` for the start count) is the graph's.
 */
import type { Definition, Problem } from "./types.ts"

export interface PlacedProblems {
  readonly nodes: ReadonlyMap<string, ReadonlyArray<string>>
  readonly edges: ReadonlyMap<number, ReadonlyArray<string>>
  readonly general: ReadonlyArray<string>
}

const push = <K,>(map: Map<K, Array<string>>, key: K, text: string) => map.set(key, [...(map.get(key) ?? []), text])

export const placeProblems = (definition: Definition, problems: ReadonlyArray<Problem>): PlacedProblems => {
  const nodes = new Map<string, Array<string>>()
  const edges = new Map<number, Array<string>>()
  const general: Array<string> = []
  const ids = new Set(definition.nodes.map((n) => n.id))
  for (const p of problems) {
    const text = `${p.path} ${p.message}`
    const byIndex = /^nodes\[(\d+)\]/.exec(p.path)
    const edge = /^edges\[(\d+)\]/.exec(p.path)
    const byId = /^nodes\.([A-Za-z][A-Za-z0-9_-]*)/.exec(p.path)
    if (byIndex !== null && definition.nodes[Number(byIndex[1])] !== undefined) push(nodes, definition.nodes[Number(byIndex[1])]!.id, text)
    else if (byId !== null && ids.has(byId[1]!)) push(nodes, byId[1]!, text)
    else if (edge !== null) push(edges, Number(edge[1]), text)
    else general.push(text)
  }
  return { nodes, edges, general }
}
