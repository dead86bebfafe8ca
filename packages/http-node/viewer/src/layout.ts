/**
 * Where each node is drawn: the definition's `position`s when they tell nodes apart, else a layered layout — each
 * node one column right of the furthest node that leads to it from the start (back edges ignored), stacked in its
 * column in the order it was reached — so a graph written by hand with every position at (0,0) reads left to right.
 */
import type { Definition } from "./types.ts"

export const NODE_WIDTH = 190
export const NODE_HEIGHT = 58
const COLUMN = 240
const ROW = 110
const MARGIN = 40

export interface Placed {
  readonly x: number
  readonly y: number
}

export interface Layout {
  readonly at: ReadonlyMap<string, Placed>
  readonly width: number
  readonly height: number
}

const layered = (definition: Definition): Map<string, Placed> => {
  const out = new Map<string, Array<string>>()
  for (const e of definition.edges) out.set(e.source, [...(out.get(e.source) ?? []), e.target])
  const start = definition.nodes.find((n) => n.data.node_type === "start")?.id ?? definition.nodes[0]?.id
  const depth = new Map<string, number>()
  const order: Array<string> = []
  // Longest path from the start over the graph without its back edges (an edge into a node on the current walk).
  const walk = (id: string, d: number, onPath: Set<string>) => {
    if (onPath.has(id)) return
    if (!depth.has(id)) order.push(id)
    if ((depth.get(id) ?? -1) >= d) return
    depth.set(id, d)
    onPath.add(id)
    for (const next of out.get(id) ?? []) walk(next, d + 1, onPath)
    onPath.delete(id)
  }
  if (start !== undefined) walk(start, 0, new Set())
  // Nodes the start does not reach go in a last column, in definition order.
  const last = Math.max(0, ...depth.values()) + 1
  for (const n of definition.nodes) {
    if (!depth.has(n.id)) {
      depth.set(n.id, last)
      order.push(n.id)
    }
  }
  const rows = new Map<number, number>()
  const placed = new Map<string, Placed>()
  for (const id of order) {
    const d = depth.get(id)!
    const row = rows.get(d) ?? 0
    rows.set(d, row + 1)
    placed.set(id, { x: d * COLUMN, y: row * ROW })
  }
  // Centre each column on the tallest.
  const tallest = Math.max(1, ...rows.values())
  for (const [id, p] of placed) {
    const inColumn = rows.get(depth.get(id)!) ?? 1
    placed.set(id, { x: p.x, y: p.y + ((tallest - inColumn) * ROW) / 2 })
  }
  return placed
}

export const layout = (definition: Definition): Layout => {
  const distinct = new Set(definition.nodes.map((n) => `${n.position.x},${n.position.y}`))
  const given = distinct.size === definition.nodes.length && definition.nodes.length > 1
  const raw = given ? new Map(definition.nodes.map((n) => [n.id, { x: n.position.x, y: n.position.y }])) : layered(definition)
  const xs = [...raw.values()].map((p) => p.x)
  const ys = [...raw.values()].map((p) => p.y)
  const minX = Math.min(0, ...xs)
  const minY = Math.min(0, ...ys)
  const at = new Map<string, Placed>()
  for (const [id, p] of raw) at.set(id, { x: p.x - minX + MARGIN, y: p.y - minY + MARGIN })
  const width = Math.max(...[...at.values()].map((p) => p.x), 0) + NODE_WIDTH + MARGIN
  const height = Math.max(...[...at.values()].map((p) => p.y), 0) + NODE_HEIGHT + MARGIN * 2
  return { at, width, height }
}
