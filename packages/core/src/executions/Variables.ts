/**
 * Variables discovery (decisions 2.4.6): what a workflow's placeholders can
 * name. The fixed part is the service's own variables (2.4.2); the
 * discovered part is read from the workflow's latest executions, so an
 * editor can offer `{{vars.user_name}}` once a run has set it.
 */
import { Schema } from "effect"
import type { ExecutionRecord } from "./Execution.ts"

/** Executions discovery reads, newest first. */
export const DISCOVERY_EXECUTIONS = 100
const SAMPLES = 5

const FixedVariable = Schema.Struct({ type: Schema.String, description: Schema.String, always_available: Schema.Boolean })

const DiscoveredVariable = Schema.Struct({
  path: Schema.String,
  name: Schema.String,
  type: Schema.String,
  sample_values: Schema.Array(Schema.Unknown),
  usage_count: Schema.Int,
  last_seen_at: Schema.String,
  reference: Schema.String
})
export type DiscoveredVariable = typeof DiscoveredVariable.Type

export const WorkflowVariables = Schema.Struct({
  fixed: Schema.Struct({
    system: Schema.Record(Schema.String, FixedVariable),
    context: Schema.Record(Schema.String, FixedVariable)
  }),
  discovered: Schema.Struct({
    system: Schema.Array(DiscoveredVariable),
    context: Schema.Array(DiscoveredVariable),
    vars: Schema.Array(DiscoveredVariable)
  })
})
export type WorkflowVariables = typeof WorkflowVariables.Type

const fixed = (type: string, description: string, always_available: boolean) => ({ type, description, always_available })

/** The service's variables (decisions 2.4.2): always there, or there in some runs. */
export const FIXED_VARIABLES: WorkflowVariables["fixed"] = {
  system: {
    "system.trigger_type": fixed("string", "What started the run: inbound_message, api_call, msg_event or project_event", true),
    "system.workflow_id": fixed("string", "The workflow's id", true),
    "system.flow_id": fixed("string", "The workflow's id (kept for older templates)", true),
    "system.workflow_name": fixed("string", "The workflow's name", true),
    "system.flow_name": fixed("string", "The workflow's name (kept for older templates)", true),
    "system.execution_id": fixed("string", "This execution's id", true),
    "system.tracking_id": fixed("string", "This execution's tracking id", true),
    "system.started_at": fixed("string", "When the run started (date-time)", true),
    "system.event_chain_depth": fixed("number", "Event-triggered hops that led to this run", true),
    "system.msg_config": fixed("object", "The sender number: id, phone_number_id, display_phone_number, name, kind, ...", false),
    "system.customer": fixed("object", "The customer owning the number: id, external_customer_id, name", false),
    "system.trigger_msg_config_id": fixed("string", "The message config an API start used", false),
    "system.last_resume": fixed("object", "After a wait: { reason: user_input | timeout | api, at }", false),
    "system.pending_timeout": fixed("object", "While a wait timeout is scheduled: { at, seconds }", false),
    "system.event": fixed("object", "In project_event runs: { id, name, occurred_at, properties }", false),
    "system.trigger_payload": fixed("object", "In msg_event runs: the triggering event's webhook payload", false),
    "system.observer": fixed("boolean", "True in observer executions", false),
    "system.parent_execution_id": fixed("string", "The calling execution, in call children", false)
  },
  context: {
    "context.channel": fixed("string", "msg or api", true),
    "context.phone_number": fixed("string", "The contact's number (+ and digits), or null", false),
    "context.recipient": fixed("string", "The contact's business-scoped id, when given", false),
    "context.conversation_id": fixed("string", "The conversation the run belongs to", false),
    "context.contact": fixed("object", "{ id, wa_id, name, profile_name, business_scoped_user_id, username }", false),
    "context.initial_data": fixed("object", "The start request's initial_data", false)
  }
}

const typeOf = (value: unknown) =>
  value === null ? "null" : Array.isArray(value) ? "array" : typeof value === "object" ? "object" : typeof value

interface Seen {
  path: string
  name: string
  type: string
  samples: Map<string, unknown>
  count: number
  last: string
}

/** Discovered variables of `executions` (newest first): top-level keys not in the fixed map, with samples. */
export const discover = (executions: ReadonlyArray<ExecutionRecord>): WorkflowVariables => {
  const seen = { system: new Map<string, Seen>(), context: new Map<string, Seen>(), vars: new Map<string, Seen>() }
  for (const e of executions) {
    for (const namespace of ["system", "context", "vars"] as const) {
      for (const [name, value] of Object.entries(e.execution_context[namespace])) {
        const path = `${namespace}.${name}`
        if (namespace !== "vars" && path in FIXED_VARIABLES[namespace]) continue
        const entry = seen[namespace].get(path) ?? { path, name, type: typeOf(value), samples: new Map(), count: 0, last: e.last_event_at }
        entry.count++
        if (e.last_event_at > entry.last) entry.last = e.last_event_at
        const key = JSON.stringify(value) ?? "null"
        if (entry.samples.size < SAMPLES && !entry.samples.has(key)) entry.samples.set(key, value)
        seen[namespace].set(path, entry)
      }
    }
  }
  const items = (m: Map<string, Seen>): Array<DiscoveredVariable> =>
    [...m.values()]
      .sort((a, b) => b.count - a.count || a.path.localeCompare(b.path))
      .map((s) => ({
        path: s.path,
        name: s.name,
        type: s.type,
        sample_values: [...s.samples.values()],
        usage_count: s.count,
        last_seen_at: s.last,
        reference: `{{${s.path}}}`
      }))
  return {
    fixed: FIXED_VARIABLES,
    discovered: { system: items(seen.system), context: items(seen.context), vars: items(seen.vars) }
  }
}
