/**
 * The workflow resource (spec "Workflow", decisions 2.1) in its stored form
 * and its wire forms: Workflow (no definition), WorkflowWithDefinition,
 * WorkflowSummary, WorkflowMinimal, and the older surface's Flow.
 */
import { Schema } from "effect"
import { described } from "../shared/Described.ts"

export const WorkflowStatus = Schema.Literals(["draft", "active", "archived"])
export type WorkflowStatus = typeof WorkflowStatus.Type

export const ReadMode = Schema.Literals(["disabled", "read_only", "read_with_typing"])
export type ReadMode = typeof ReadMode.Type

export const NodeTypes = [
  "start",
  "send_text",
  "send_template",
  "send_interactive",
  "wait_for_response",
  "decide",
  "function",
  "webhook",
  "agent",
  "call",
  "handoff",
  "set_variable",
  "emit_event",
  "split"
] as const
export const NodeType = Schema.Literals(NodeTypes)
export type NodeType = typeof NodeType.Type

export const Position = Schema.Struct({ x: Schema.Finite, y: Schema.Finite })

/** Node, read form. */
export const Node = Schema.Struct({
  id: Schema.String,
  type: Schema.String,
  position: Position,
  data: Schema.Struct({
    node_type: Schema.String,
    config: Schema.Record(Schema.String, Schema.Unknown),
    display_name: Schema.String
  })
})
export type Node = typeof Node.Type

/** Edge, read form. */
export const Edge = Schema.Struct({
  id: Schema.String,
  source: Schema.String,
  target: Schema.String,
  type: Schema.String,
  label: Schema.NullOr(Schema.String),
  flow_condition_id: Schema.NullOr(Schema.String)
})
export type Edge = typeof Edge.Type

export const Definition = Schema.Struct({ nodes: Schema.Array(Node), edges: Schema.Array(Edge) })
export type Definition = typeof Definition.Type

/**
 * Write form of a definition. Kept loose on purpose: the graph validator
 * (Definition.ts) checks every rule and reports all problems with paths, which
 * a schema decode failure could not do.
 */
export const DefinitionInput = Schema.Record(Schema.String, Schema.Unknown)

/** Who created a record: the API key (or operator) that made the call. */
export const Actor = Schema.Struct({ id: Schema.String, name: Schema.String })
export type Actor = typeof Actor.Type

/** The stored record. */
export interface WorkflowRecord {
  readonly id: string
  readonly project_id: string
  readonly name: string
  readonly slug: string
  readonly description: string | null
  readonly status: WorkflowStatus
  readonly lock_version: number
  readonly message_debounce_seconds: number | null
  readonly agent_default_tools_version: number | null
  readonly inbound_message_read_mode: ReadMode
  readonly created_at: string
  readonly updated_at: string
  readonly execution_count: number
  readonly last_executed_at: string | null
  readonly created_by: Actor
  readonly definition: Definition
}

/** The record without its graph: what a workflow's GET answers, read without the graph. */
export type WorkflowSummary = Omit<WorkflowRecord, "definition">

/** The spec's words for a workflow's fields ("Workflow (Platform API)"). */
const WORKFLOW_FIELDS = {
  id: "The workflow's id (uuid)",
  name: "Unique per project",
  slug: "`^[a-z0-9]+(?:-[a-z0-9]+)*$`, unique within the project; made from `name` on create when not given and " +
    "stable across renames (usable as an external sync key)",
  description: "Optional",
  status: "`draft` is under development and not executable; `active` is published and executable; `archived` is inactive",
  lock_version: "Optimistic locking version, incremented on each update: send it back when updating",
  message_debounce_seconds: "Seconds (0-60; null means 1, 0 disables batching): the window that batches rapid inbound " +
    "messages before processing",
  agent_default_tools_version: "Which built-in agent tools are required by default",
  inbound_message_read_mode: "`disabled` does nothing; `read_only` marks inbound messages read; `read_with_typing` marks " +
    "them read and shows a typing indicator before responding",
  created_at: "When it was created (ISO 8601)",
  updated_at: "When it last changed (ISO 8601)",
  project_id: "The owning project",
  execution_count: "Total executions",
  last_executed_at: "When it last ran; null if never"
} as const

export const Workflow = Schema.Struct(described({
  id: Schema.String,
  name: Schema.String,
  slug: Schema.String,
  description: Schema.NullOr(Schema.String),
  status: WorkflowStatus,
  lock_version: Schema.NullOr(Schema.Int),
  message_debounce_seconds: Schema.NullOr(Schema.Int),
  agent_default_tools_version: Schema.NullOr(Schema.Int),
  inbound_message_read_mode: ReadMode,
  created_at: Schema.String,
  updated_at: Schema.String,
  project_id: Schema.String,
  execution_count: Schema.Int,
  last_executed_at: Schema.NullOr(Schema.String)
}, WORKFLOW_FIELDS))
export type Workflow = typeof Workflow.Type

export const WorkflowWithDefinition = Schema.Struct({ ...Workflow.fields, definition: Definition })

export const WorkflowMinimal = Schema.Struct({ id: Schema.String, name: Schema.String, status: Schema.String })

export const toWorkflow = (w: WorkflowSummary): Workflow => ({
  id: w.id,
  name: w.name,
  slug: w.slug,
  description: w.description,
  status: w.status,
  lock_version: w.lock_version,
  message_debounce_seconds: w.message_debounce_seconds,
  agent_default_tools_version: w.agent_default_tools_version,
  inbound_message_read_mode: w.inbound_message_read_mode,
  created_at: w.created_at,
  updated_at: w.updated_at,
  project_id: w.project_id,
  execution_count: w.execution_count,
  last_executed_at: w.last_executed_at
})

/** Older surface: a flow is a workflow (decisions 1.5). */
export const Flow = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  description: Schema.NullOr(Schema.String),
  status: WorkflowStatus,
  project_id: Schema.String,
  created_at: Schema.String,
  updated_at: Schema.String,
  last_executed_at: Schema.NullOr(Schema.String),
  created_by: Actor,
  execution_count: Schema.Int
})
export type Flow = typeof Flow.Type

export const toFlow = (w: WorkflowSummary): Flow => ({
  id: w.id,
  name: w.name,
  description: w.description,
  status: w.status,
  project_id: w.project_id,
  created_at: w.created_at,
  updated_at: w.updated_at,
  last_executed_at: w.last_executed_at,
  created_by: w.created_by,
  execution_count: w.execution_count
})

/** Filters of `GET /workflows` and `GET /flows`. */
export interface WorkflowFilter {
  /** Exact status; when absent, archived workflows are hidden (decisions 3.1). */
  readonly status?: WorkflowStatus | undefined
  readonly name_contains?: string | undefined
  readonly created_after?: string | undefined
  readonly created_before?: string | undefined
}

const writableFields = {
  slug: Schema.optionalKey(Schema.String),
  description: Schema.optionalKey(Schema.NullOr(Schema.String)),
  status: Schema.optionalKey(WorkflowStatus),
  message_debounce_seconds: Schema.optionalKey(Schema.NullOr(Schema.Int)),
  inbound_message_read_mode: Schema.optionalKey(ReadMode),
  agent_default_tools_version: Schema.optionalKey(Schema.NullOr(Schema.Int)),
  lock_version: Schema.optionalKey(Schema.NullOr(Schema.Int)),
  definition: Schema.optionalKey(Schema.Unknown)
}

/** Body of `POST /workflows` inside the `workflow` envelope. */
export const WorkflowCreateInput = Schema.Struct({ name: Schema.String, ...writableFields })
export type WorkflowCreateInput = typeof WorkflowCreateInput.Type

/** Body of `PATCH /workflows/<id>` (and the older `PATCH /flows/<id>`): every field optional. */
export const WorkflowUpdateInput = Schema.Struct({ name: Schema.optionalKey(Schema.String), ...writableFields })
export type WorkflowUpdateInput = typeof WorkflowUpdateInput.Type

/** A workflow's position in lists ordered newest first. */
export const cursorKeyOf = (w: { readonly created_at: string; readonly id: string }) => ({ sortKey: w.created_at, id: w.id })
