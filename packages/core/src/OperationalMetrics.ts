/**
 * The Prometheus exposition of a host (`GET /metrics`): the counters and histograms the capabilities update as they
 * work (`*Telemetry.ts` modules), plus the gauges read at scrape time from storage, so nothing on a hot path keeps
 * them: job queue depth and age per queue, live executions by status and waiting reason with their oldest last move,
 * the database's connections by client and state.
 * Gauges of a series that has gone (a drained queue) read 0, never their last value.
 */
import { Clock, Context, Effect, Layer, Metric } from "effect"
import { PrometheusMetrics } from "effect/observability"
import { ExecutionsRepo } from "./executions/ExecutionsRepo.ts"
import { DatabaseStats } from "./ports/DatabaseStats.ts"
import { JobQueue } from "./ports/JobQueue.ts"
import { labelled } from "./shared/Telemetry.ts"

export { type MetricFamily, metricFamilies } from "./shared/Telemetry.ts"

const queueJobs = labelled(
  Metric.gauge("parley_job_queue_jobs", { description: "Unfinished jobs per queue, by state (ready, scheduled, active)" }),
  ["queue", "state"]
)

const queueAge = labelled(
  Metric.gauge("parley_job_queue_oldest_ready_seconds", {
    description: "How long the oldest ready job of a queue has been due, in seconds (0 when none is ready)"
  }),
  ["queue"]
)

const liveRuns = labelled(
  Metric.gauge("parley_executions_live", {
    description: "Executions not ended, by status (running, waiting, handoff) and waiting reason"
  }),
  ["status", "waiting_reason"]
)

const liveOldest = labelled(
  Metric.gauge("parley_executions_live_oldest_seconds", {
    description: "Seconds since the least recent move of a live execution, by status and waiting reason"
  }),
  ["status", "waiting_reason"]
)

const connections = labelled(
  Metric.gauge("parley_database_connections", {
    description: "This database's client connections, by client (parley, parley-jobs, other) and state"
  }),
  ["application", "state"]
)

export class OperationalMetrics extends Context.Service<OperationalMetrics, {
  /** The exposition in Prometheus's text format (0.0.4), scrape-time gauges read first. */
  readonly scrape: Effect.Effect<string>
}>()("@parley/core/OperationalMetrics") {
  static readonly layer = Layer.effect(
    OperationalMetrics,
    Effect.gen(function*() {
      const jobs = yield* JobQueue
      const executions = yield* ExecutionsRepo
      const database = yield* DatabaseStats
      // Series set by an earlier scrape: those absent now are set to 0.
      let previous = new Map<string, Metric.Metric<number, unknown>>()

      const readGauges = Effect.gen(function*() {
        const [backlog, live, pool, now] = yield* Effect.all(
          [jobs.backlog, executions.liveCounts, database.connections, Clock.currentTimeMillis],
          { concurrency: "unbounded" }
        )
        const current = new Map<string, readonly [Metric.Metric<number, unknown>, number]>()
        const set = (key: string, metric: Metric.Metric<number, unknown>, value: number) => current.set(key, [metric, value])
        for (const b of backlog) {
          for (const state of ["ready", "scheduled", "active"] as const) {
            set(`q:${b.queue}:${state}`, queueJobs({ queue: b.queue, state }), b[state])
          }
          set(`a:${b.queue}`, queueAge({ queue: b.queue }), b.oldestReadyMs / 1000)
        }
        for (const l of live) {
          const labels = { status: l.status, waiting_reason: l.waiting_reason ?? "" }
          set(`l:${l.status}:${l.waiting_reason}`, liveRuns(labels), l.count)
          set(`o:${l.status}:${l.waiting_reason}`, liveOldest(labels), Math.max(0, now - Date.parse(l.oldest_event_at)) / 1000)
        }
        for (const c of pool) set(`c:${c.application}:${c.state}`, connections({ application: c.application, state: c.state }), c.count)
        for (const [key, metric] of previous) if (!current.has(key)) yield* Metric.update(metric, 0)
        for (const [metric, value] of current.values()) yield* Metric.update(metric, value)
        previous = new Map([...previous, ...[...current].map(([key, [metric]]) => [key, metric] as const)])
      })

      return OperationalMetrics.of({
        scrape: Effect.andThen(readGauges, PrometheusMetrics.format()).pipe(Effect.withSpan("OperationalMetrics.scrape"))
      })
    })
  )
}
