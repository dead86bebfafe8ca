/**
 * The few helpers every capability's instruments share: metric series by bounded label values (made once per value
 * set, so an update is a map lookup, not a key built each time) and span attributes under one prefix.
 */
import { Config, Effect, Metric, Option } from "effect"

/** A metric family the host declares: what `/metrics` may show, the dashboard and the operations doc may name. */
export interface MetricFamily {
  readonly name: string
  readonly type: Metric.Metric.Type
  readonly description: string
  readonly labels: ReadonlyArray<string>
}

const families = new Map<string, MetricFamily>()

/** Every family declared through `labelled` (by the modules loaded so far: all of them once `@parley/core` is). */
export const metricFamilies = (): ReadonlyArray<MetricFamily> => [...families.values()]

/**
 * `metric` split by labels whose values come from a small fixed set (a status, a node type, a queue): the series of
 * each set of values is made on first use and kept. Never give it unbounded values (ids, phone numbers, free text).
 */
export const labelled = <In, State, const L extends string>(metric: Metric.Metric<In, State>, labels: ReadonlyArray<L>) => {
  families.set(metric.id, { name: metric.id, type: metric.type, description: metric.description ?? "", labels })
  const series = new Map<string, Metric.Metric<In, State>>()
  return (values: { readonly [K in L]: string }): Metric.Metric<In, State> => {
    const key = labels.map((l) => values[l]).join("\u0000")
    let found = series.get(key)
    if (found === undefined) {
      found = Metric.withAttributes(metric, values as Record<string, string>)
      series.set(key, found)
    }
    return found
  }
}

/** Seconds-scale latency buckets (5 ms .. 60 s). */
export const LATENCY_BUCKETS: ReadonlyArray<number> = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]

/** Lag buckets for things that may wait minutes (1 s .. 1 h). */
export const LAG_BUCKETS: ReadonlyArray<number> = [1, 5, 15, 30, 60, 300, 900, 1800, 3600]

/** Span attributes, only the defined ones: ids and statuses that let a person find a span, never content. */
export const annotate = (attributes: Record<string, string | number | boolean | null | undefined>) => {
  // A loop, not entries → filter → fromEntries: every step of a run annotates its span (three arrays per call).
  const defined: Record<string, unknown> = {}
  for (const key in attributes) {
    const value = attributes[key]
    if (value !== undefined && value !== null) defined[key] = value
  }
  return Effect.annotateCurrentSpan(defined)
}

/**
 * `PARLEY_TRACE_PROPAGATION`: whether the project's own functions and webhooks receive the W3C `traceparent` of the
 * span that calls them (default false). A customer's raw-payload destination never does, whatever this says.
 */
export const TracePropagation: Effect.Effect<boolean> = Effect.orDie(
  Effect.gen(function*() {
    return yield* Config.Boolean("PARLEY_TRACE_PROPAGATION").pipe(Config.withDefault(false))
  })
)

/** `{ traceparent }` of the current span when `enabled` and a span is there, else nothing. */
export const traceHeaders = (enabled: boolean): Effect.Effect<Record<string, string>> =>
  enabled
    ? Effect.map(Effect.option(Effect.currentSpan), (span) =>
      Option.isSome(span)
        ? { traceparent: `00-${span.value.traceId}-${span.value.spanId}-${span.value.sampled ? "01" : "00"}` }
        : {})
    : Effect.succeed({})
