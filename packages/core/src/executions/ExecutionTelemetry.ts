/**
 * What executions tell an operator: counters of runs started and ended (by trigger and status), a histogram of step
 * durations by node type, and the span attributes that find a run in a trace. Labels are bounded: triggers, statuses
 * and node types are fixed lists; ids go on spans only.
 */
import { Metric, type Tracer } from "effect"
import { annotate, LATENCY_BUCKETS, labelled } from "../shared/Telemetry.ts"
import type { ExecutionRecord } from "./Execution.ts"

export const started = labelled(
  Metric.counter("parley_executions_started_total", { description: "Executions started, by trigger type", incremental: true }),
  ["trigger"]
)

export const ended = labelled(
  Metric.counter("parley_executions_ended_total", {
    description: "Executions that reached an end (ended, failed), by status and trigger type",
    incremental: true
  }),
  ["status", "trigger"]
)

export const stepDuration = labelled(
  Metric.histogram("parley_execution_step_duration_seconds", {
    description: "Duration of one execution step, by node type",
    boundaries: LATENCY_BUCKETS
  }),
  ["node_type"]
)

/** The attributes of a span about `record`. */
export const attributes = (record: ExecutionRecord) => ({
  "parley.project.id": record.project_id,
  "parley.workflow.id": record.workflow_id,
  "parley.execution.id": record.id,
  "parley.execution.tracking_id": record.tracking_id,
  "parley.execution.trigger": record.trigger_type,
  "parley.execution.status": record.status
})

export const annotateExecution = (record: ExecutionRecord) => annotate(attributes(record))

/** A link from a slice to the span that started it (an API request, the routing of an inbound message, a timer). */
export const triggerLink = (span: Tracer.AnySpan): Tracer.SpanLink => ({ span, attributes: { "parley.link": "trigger" } })

/** The attributes of a step's span: its run, its node, the status the run was left in. */
export const annotateStep = (record: ExecutionRecord, nodeType: string, status: string) =>
  annotate({
    ...attributes(record),
    "parley.node.id": record.current_node ?? undefined,
    "parley.node.type": nodeType,
    "parley.execution.status": status
  })

/** The attributes of a pending action's span (a send, a webhook request, an agent's tool call). */
export const annotatePending = (
  record: ExecutionRecord,
  pending: { readonly kind: string; readonly node_id: string; readonly message_id?: string | undefined; readonly call_id?: string | undefined }
) =>
  annotate({
    ...attributes(record),
    "parley.node.id": pending.node_id,
    "parley.pending.kind": pending.kind,
    "parley.message.id": pending.message_id,
    "parley.tool.call_id": pending.call_id
  })
