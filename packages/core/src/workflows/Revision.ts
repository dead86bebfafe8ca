/**
 * Workflow revisions (issue 32 §3): a revision is one graph of a workflow, named by the hash of its content, so a
 * save and the runs started on the same graph share it. Every saved definition is recorded (who, when, how) beside
 * the revision it produced; a staged rollout names a revision new runs take for a share of contacts.
 */
import { Schema } from "effect"
import { createHash } from "node:crypto"
import { canonicalJson } from "../shared/CanonicalJson.ts"
import { Actor, type Definition, Edge, Node } from "./Workflow.ts"

/**
 * The revision id of a definition: the hash of its canonical JSON, so equal graphs share one revision whichever key
 * order they were read back in (a save hashes the written object, a start the one jsonb gave back).
 */
export const revisionId = (workflowId: string, definition: Definition) =>
  `${workflowId}:${createHash("sha256").update(canonicalJson(definition)).digest("hex").slice(0, 32)}`

/** How a definition came to be saved. */
export const SaveAction = Schema.Literals(["create", "update", "draft", "restore", "promote"])
export type SaveAction = typeof SaveAction.Type

/** One save of a definition (stored). */
export interface SaveRecord {
  readonly id: string
  readonly project_id: string
  readonly workflow_id: string
  readonly revision_id: string
  readonly action: SaveAction
  readonly saved_by: Actor
  readonly saved_at: string
}

/** A revision of a workflow as the storage reads it: its saves (newest first, at most `SAVES_SHOWN`) and its runs. */
export interface RevisionSummaryRecord {
  readonly id: string
  readonly workflow_id: string
  readonly created_at: string
  readonly saves: ReadonlyArray<SaveRecord>
  readonly save_count: number
  readonly execution_count: number
  readonly waiting_count: number
}

/** How many saves a revision lists (a workflow re-saved by a script would otherwise grow the answer without end). */
export const SAVES_SHOWN = 20

/** A staged rollout (stored): new runs take `revision_id` for `percent` % of contacts. */
export interface RolloutRecord {
  readonly project_id: string
  readonly workflow_id: string
  readonly revision_id: string
  readonly percent: number
  readonly started_by: Actor
  readonly started_at: string
}

// ---------------------------------------------------------------------------
// Wire forms
// ---------------------------------------------------------------------------

export const RevisionSave = Schema.Struct({
  action: SaveAction.annotate({ description: "`create`, `update`, `restore`, `promote` made it current; `draft` only stored it" }),
  saved_by: Actor,
  saved_at: Schema.String
})

export const RevisionSummary = Schema.Struct({
  id: Schema.String.annotate({ description: "The revision's id: the workflow id and the hash of its graph" }),
  current: Schema.Boolean.annotate({ description: "Whether it is the workflow's current definition" }),
  created_at: Schema.String.annotate({ description: "When the graph was first stored (a save or the first run on it)" }),
  saves: Schema.Array(RevisionSave).annotate({ description: "Its saves, newest first (at most 20)" }),
  save_count: Schema.Int,
  execution_count: Schema.Int.annotate({ description: "Runs started on it" }),
  waiting_count: Schema.Int.annotate({ description: "Of those, runs waiting now" })
})
export type RevisionSummary = typeof RevisionSummary.Type

export const RevisionDetail = Schema.Struct({
  ...RevisionSummary.fields,
  definition: Schema.Struct({ nodes: Schema.Array(Node), edges: Schema.Array(Edge) })
})
export type RevisionDetail = typeof RevisionDetail.Type

export const NodeChange = Schema.Struct({
  id: Schema.String,
  node_type: Schema.String,
  /** The top-level fields that differ (`node_type`, `display_name`, `position`, `config`). */
  fields: Schema.Array(Schema.String)
})

export const EdgeKey = Schema.Struct({ source: Schema.String, target: Schema.String, label: Schema.String })

export const RevisionComparison = Schema.Struct({
  from: Schema.String,
  to: Schema.String,
  nodes: Schema.Struct({
    added: Schema.Array(Node),
    removed: Schema.Array(Node),
    changed: Schema.Array(NodeChange)
  }),
  edges: Schema.Struct({ added: Schema.Array(EdgeKey), removed: Schema.Array(EdgeKey) })
})
export type RevisionComparison = typeof RevisionComparison.Type

export const Rollout = Schema.Struct({
  revision_id: Schema.String.annotate({ description: "The revision new runs take for `percent` % of contacts" }),
  percent: Schema.Int.annotate({ description: "0-100: the share of contacts (sticky per contact)" }),
  started_by: Actor,
  started_at: Schema.String
})

export const toRollout = (r: RolloutRecord): typeof Rollout.Type => ({
  revision_id: r.revision_id,
  percent: r.percent,
  started_by: r.started_by,
  started_at: r.started_at
})

// ---------------------------------------------------------------------------
// Comparing two graphs
// ---------------------------------------------------------------------------

const edgeKey = (e: Edge) => ({ source: e.source, target: e.target, label: e.label ?? "next" })
const edgeText = (e: Edge) => JSON.stringify(edgeKey(e))
const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b)

/**
 * Nodes added, removed and changed (by id), edges added and removed (by source, target and label: an edge's own id is
 * not part of the graph's meaning).
 */
export const compareDefinitions = (fromId: string, from: Definition, toId: string, to: Definition): RevisionComparison => {
  const before = new Map(from.nodes.map((n) => [n.id, n] as const))
  const after = new Map(to.nodes.map((n) => [n.id, n] as const))
  const changed = to.nodes.flatMap((n) => {
    const old = before.get(n.id)
    if (old === undefined) return []
    const fields = [
      ...(old.data.node_type !== n.data.node_type ? ["node_type"] : []),
      ...(old.data.display_name !== n.data.display_name ? ["display_name"] : []),
      ...(!same(old.position, n.position) ? ["position"] : []),
      ...(!same(old.data.config, n.data.config) ? ["config"] : [])
    ]
    return fields.length === 0 ? [] : [{ id: n.id, node_type: n.data.node_type, fields }]
  })
  const edgesBefore = new Set(from.edges.map(edgeText))
  const edgesAfter = new Set(to.edges.map(edgeText))
  return {
    from: fromId,
    to: toId,
    nodes: {
      added: to.nodes.filter((n) => !before.has(n.id)),
      removed: from.nodes.filter((n) => !after.has(n.id)),
      changed
    },
    edges: {
      added: to.edges.filter((e) => !edgesBefore.has(edgeText(e))).map(edgeKey),
      removed: from.edges.filter((e) => !edgesAfter.has(edgeText(e))).map(edgeKey)
    }
  }
}

// ---------------------------------------------------------------------------
// Sticky assignment
// ---------------------------------------------------------------------------

/**
 * A deterministic point in [0, 1) for a key: the first 48 bits of its SHA-256. The same contact lands at the same
 * point on every host and every run, which makes rollouts and splits sticky without storing an assignment.
 */
export const stickyPoint = (key: string): number =>
  Number.parseInt(createHash("sha256").update(key).digest("hex").slice(0, 12), 16) / 2 ** 48

/** Whether a contact takes the rollout's revision: its point on the workflow's rollout line falls below the share. */
export const inRollout = (rollout: RolloutRecord, contactId: string): boolean =>
  stickyPoint(`rollout:${rollout.workflow_id}:${contactId}`) < rollout.percent / 100
