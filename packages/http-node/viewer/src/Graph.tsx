/**
 * A workflow's graph in SVG: nodes with their type and display name, edges with their labels; over it, a run's
 * path (nodes entered, edges followed, where it waits, where it failed) and an edited definition's problems on
 * the node or edge they name. Every node is a keyboard stop (Tab, then Enter or Space chooses it).
 */
import type { Translate } from "./i18n.ts"
import { type Layout, NODE_HEIGHT, NODE_WIDTH } from "./layout.ts"
import type { PlacedProblems } from "./problems.ts"
import type { Definition } from "./types.ts"

export interface RunOverlay {
  readonly visits: ReadonlyMap<string, number>
  /** Edge id → times followed. */
  readonly taken: ReadonlyMap<string, number>
  readonly current: { readonly id: string; readonly reason: string } | undefined
  readonly failed: string | undefined
}

const kindOf = (type: string) =>
  type === "start"
    ? "start"
    : type.startsWith("send") || type === "agent_message"
    ? "send"
    : type === "wait_for_response" || type === "delay"
    ? "wait"
    : type === "decide" || type === "split"
    ? "decide"
    : type === "handoff"
    ? "handoff"
    : type === "agent"
    ? "agent"
    : "action"

const clip = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text)

interface EdgeGeometry {
  readonly d: string
  readonly labelX: number
  readonly labelY: number
}

const geometry = (s: { x: number; y: number }, t: { x: number; y: number }): EdgeGeometry => {
  const sx = s.x + NODE_WIDTH
  const sy = s.y + NODE_HEIGHT / 2
  const tx = t.x
  const ty = t.y + NODE_HEIGHT / 2
  if (tx >= sx + 20) {
    const bend = Math.max(40, (tx - sx) / 2)
    return { d: `M${sx},${sy} C${sx + bend},${sy} ${tx - bend},${ty} ${tx},${ty}`, labelX: (sx + tx) / 2, labelY: (sy + ty) / 2 }
  }
  // Backwards or stacked: leave from the bottom and come into the target's bottom, below both.
  const bx = s.x + NODE_WIDTH / 2
  const by = s.y + NODE_HEIGHT
  const ex = t.x + NODE_WIDTH / 2
  const ey = t.y + NODE_HEIGHT
  const low = Math.max(by, ey) + 50
  return { d: `M${bx},${by} C${bx},${low} ${ex},${low} ${ex},${ey}`, labelX: (bx + ex) / 2, labelY: low - 12 }
}

export function Graph(props: {
  definition: Definition
  layout: Layout
  title: string
  selected: string | undefined
  onSelect: (id: string) => void
  overlay?: RunOverlay | undefined
  problems?: PlacedProblems | undefined
  t: Translate
}) {
  const { definition, layout, overlay, problems, t } = props
  return (
    <div class="graph-scroll">
      <svg
        class={`graph${overlay !== undefined ? " with-run" : ""}`}
        // As wide as the pane at most: a long graph is scaled to fit rather than cut.
        width="100%"
        style={{ maxWidth: `${layout.width}px` }}
        viewBox={`0 0 ${layout.width} ${layout.height + 40}`}
        role="group"
        aria-label={props.title}
      >
        <defs>
          <marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
            <path d="M0,0 L10,5 L0,10 z" class="arrow" />
          </marker>
          <marker id="arrow-taken" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
            <path d="M0,0 L10,5 L0,10 z" class="arrow taken" />
          </marker>
        </defs>
        {definition.edges.map((edge, i) => {
          const s = layout.at.get(edge.source)
          const target = layout.at.get(edge.target)
          if (s === undefined || target === undefined) return null
          const g = geometry(s, target)
          const taken = edge.id !== undefined ? overlay?.taken.get(edge.id) ?? 0 : 0
          const edgeProblems = problems?.edges.get(i) ?? []
          const label = edge.label ?? "next"
          const classes = ["edge", taken > 0 ? "taken" : "", edgeProblems.length > 0 ? "problem" : ""].filter((c) => c !== "").join(" ")
          return (
            <g key={edge.id ?? `e${i}`} class={classes} data-edge={edge.id ?? `#${i}`} data-source={edge.source} data-target={edge.target}>
              <title>{[t("edgeLabel", { label, source: edge.source, target: edge.target }), ...(taken > 0 ? [t("taken")] : []), ...edgeProblems].join("\n")}</title>
              <path d={g.d} marker-end={taken > 0 ? "url(#arrow-taken)" : "url(#arrow)"} />
              {label !== "next" || edgeProblems.length > 0
                ? (
                  <g class="edge-label" transform={`translate(${g.labelX},${g.labelY})`}>
                    <rect x={-(Math.min(label.length, 18) * 3.6 + 10)} y={-10} width={Math.min(label.length, 18) * 7.2 + 20} height={20} rx={10} />
                    <text text-anchor="middle" dy="4">{clip(label, 18)}{edgeProblems.length > 0 ? " !" : ""}</text>
                  </g>
                )
                : null}
            </g>
          )
        })}
        {definition.nodes.map((node) => {
          const p = layout.at.get(node.id)
          if (p === undefined) return null
          const name = node.data.display_name ?? node.id
          const visits = overlay?.visits.get(node.id) ?? 0
          const nodeProblems = problems?.nodes.get(node.id) ?? []
          const current = overlay?.current?.id === node.id ? overlay.current : undefined
          const failed = overlay?.failed === node.id
          const classes = [
            "node",
            `kind-${kindOf(node.data.node_type)}`,
            visits > 0 ? "visited" : "",
            current !== undefined ? "current" : "",
            failed ? "failed" : "",
            nodeProblems.length > 0 ? "problem" : "",
            props.selected === node.id ? "selected" : ""
          ].filter((c) => c !== "").join(" ")
          const facts = [
            ...(visits > 0 ? [t("visited", { n: visits })] : []),
            ...(current !== undefined ? [t("waitingHere", { reason: current.reason })] : []),
            ...(failed ? [t("failedHere")] : []),
            ...(nodeProblems.length > 0 ? [t("problemsOn", { n: nodeProblems.length })] : [])
          ]
          const label = [t("nodeLabel", { name, type: node.data.node_type, id: node.id }), ...facts].join(", ")
          const choose = () => props.onSelect(node.id)
          return (
            <g
              key={node.id}
              class={classes}
              data-node={node.id}
              transform={`translate(${p.x},${p.y})`}
              // Lower case: on SVG elements Preact sets attributes by name, and only `tabindex` makes a keyboard stop.
              tabindex={0}
              role="button"
              aria-label={label}
              aria-pressed={props.selected === node.id}
              onClick={choose}
              onKeyDown={(e) => {
                if (e.key === "Enter" || e.key === " ") {
                  e.preventDefault()
                  choose()
                }
              }}
            >
              <title>{[label, ...nodeProblems].join("\n")}</title>
              <rect class="box" width={NODE_WIDTH} height={NODE_HEIGHT} rx={10} />
              <rect class="stripe" width={6} height={NODE_HEIGHT} rx={3} />
              <text class="type" x={16} y={21}>{node.data.node_type}</text>
              <text class="name" x={16} y={42}>{clip(name, 22)}</text>
              {visits > 0 ? <g class="badge visits" transform={`translate(${NODE_WIDTH - 14},0)`}><circle r={11} /><text text-anchor="middle" dy="4">{visits}</text></g> : null}
              {nodeProblems.length > 0 ? <g class="badge problems" transform={`translate(${NODE_WIDTH - 14},${NODE_HEIGHT})`}><circle r={11} /><text text-anchor="middle" dy="4">!</text></g> : null}
              {current !== undefined ? <text class="note" x={0} y={NODE_HEIGHT + 18}>⏸ {clip(current.reason, 28)}</text> : null}
            </g>
          )
        })}
      </svg>
    </div>
  )
}
