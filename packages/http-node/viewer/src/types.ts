/** The shapes the viewer API answers (`ViewerApi` in @parley/core). */
import type { Language, Mode } from "../../embed-ui/i18n.ts"

export interface Session {
  readonly name: string
  readonly scope_type: "project" | "workflow"
  readonly scope_id: string | null
  readonly scope_name: string | null
  readonly access: "view" | "edit"
  readonly language: Language
  readonly default_mode: Mode
  readonly node_types: ReadonlyArray<string>
  readonly sandbox: { readonly phone_number_id: string; readonly display_phone_number: string } | null
}

export interface WorkflowItem {
  readonly id: string
  readonly name: string
  readonly status: string
  readonly updated_at: string
}

export interface GraphNode {
  readonly id: string
  readonly type?: string
  readonly position: { readonly x: number; readonly y: number }
  readonly data: { readonly node_type: string; readonly config: Record<string, unknown>; readonly display_name?: string }
}

export interface GraphEdge {
  readonly id?: string
  readonly source: string
  readonly target: string
  readonly label?: string
  readonly type?: string
  readonly flow_condition_id?: string | null
}

export interface Definition {
  readonly nodes: ReadonlyArray<GraphNode>
  readonly edges: ReadonlyArray<GraphEdge>
}

export interface Workflow extends WorkflowItem {
  readonly lock_version: number
  readonly definition: Definition
}

export interface Problem {
  readonly path: string
  readonly message: string
}

export type ExecutionStatus = "running" | "waiting" | "ended" | "failed" | "handoff"

export interface ExecutionSummary {
  readonly id: string
  readonly status: ExecutionStatus
  readonly waiting_reason: string | null
  readonly started_at: string
  readonly last_event_at: string
  readonly ended_at: string | null
  readonly tracking_id: string | null
  readonly trigger_type: string
  readonly current_step: { readonly identifier: string; readonly display_name: string; readonly node_type: string } | null
}

export interface StepEvent {
  readonly id: string
  readonly event_type: string
  readonly direction: "inbound" | "outbound" | null
  readonly edge_label: string | null
  readonly created_at: string
  readonly payload: Record<string, unknown>
  readonly step: { readonly identifier: string; readonly node_type: string; readonly display_name: string } | null
}

export interface ExecutionDetail extends ExecutionSummary {
  readonly error_details: { readonly message: string; readonly step_identifier: string | null; readonly code?: string } | null
  readonly execution_context: { readonly vars: Record<string, unknown> }
}

export interface Run {
  readonly execution: ExecutionDetail
  readonly definition: Definition
  readonly path: {
    readonly nodes: ReadonlyArray<{ readonly id: string; readonly visits: number }>
    readonly edges: ReadonlyArray<string>
    readonly failed_node: string | null
  }
  readonly events: ReadonlyArray<StepEvent>
  readonly events_truncated: boolean
}
