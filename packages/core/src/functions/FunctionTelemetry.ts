/**
 * What function invocations tell an operator: invocations by source and result, and their durations. Labels are
 * bounded (sources and results are fixed lists); the function's id goes on the span only.
 */
import { Effect, Metric } from "effect"
import { annotate, LATENCY_BUCKETS, labelled } from "../shared/Telemetry.ts"
import type { FunctionInvocationSource, FunctionRecord } from "./Function.ts"
import type { FunctionRunOutcome } from "./Invoker.ts"

const invocations = labelled(
  Metric.counter("parley_function_invocations_total", {
    description: "Function invocations, by source and result (answered, failed)",
    incremental: true
  }),
  ["source", "result"]
)

const duration = labelled(
  Metric.histogram("parley_function_duration_seconds", {
    description: "Function invocation duration as the host measured it, by result",
    boundaries: LATENCY_BUCKETS
  }),
  ["result"]
)

/** Counts and times an invocation and puts it on its span. */
export const observeInvocation = (fn: FunctionRecord, source: FunctionInvocationSource, outcome: FunctionRunOutcome) => {
  const result = outcome.result._tag === "Answered" ? "answered" : "failed"
  return Effect.all([
    Metric.update(invocations({ source, result }), 1),
    Metric.update(duration({ result }), outcome.invocation.duration_ms / 1000),
    annotate({
      "parley.project.id": fn.project_id,
      "parley.function.id": fn.id,
      "parley.function.invocation_id": outcome.invocation.id,
      "parley.function.source": source,
      "parley.function.status_code": outcome.invocation.status_code
    })
  ], { discard: true })
}
