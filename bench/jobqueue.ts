/**
 * JobQueue (pg-boss) benchmark against an embedded PostgreSQL of its own, in
 * a temporary directory removed afterwards:
 *
 * - throughput: 2,000 jobs enqueued (through the port, 10 at a time), then a
 *   worker started and timed until every job ran;
 * - latency: 500 jobs enqueued one by one into an idle worker, from the
 *   `enqueue` call to the start of the handler.
 *
 *   node --max-semi-space-size=8 --conditions=@parley/source bench/jobqueue.ts
 */
import { JobQueue } from "@parley/core"
import { EmbeddedPostgres, layerJobQueueFromUrl } from "@parley/store-pg"
import { Deferred, Effect } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"

export interface JobQueueBenchOptions {
  readonly throughputJobs?: number | undefined
  readonly latencyJobs?: number | undefined
  /** Worker concurrency for the throughput run. */
  readonly concurrency?: number | undefined
}

export interface JobQueueBenchResult {
  readonly throughputJobs: number
  readonly concurrency: number
  readonly latencyJobs: number
  readonly enqueuePerSecond: number
  readonly jobsPerSecond: number
  readonly latencyP50Ms: number
  readonly latencyP99Ms: number
  readonly latencyMaxMs: number
}

const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!

const throughput = (jobs: number, concurrency: number) =>
  Effect.gen(function*() {
    const queue = yield* JobQueue
    const enqueueStart = performance.now()
    yield* Effect.forEach(Array.from({ length: jobs }, (_, i) => i), (i) => queue.enqueue("bench-throughput", { i }), {
      concurrency: 10,
      discard: true
    })
    const enqueueSeconds = (performance.now() - enqueueStart) / 1000

    let done = 0
    const all = yield* Deferred.make<void>()
    const start = performance.now()
    yield* queue.work("bench-throughput", { concurrency }, () =>
      Effect.suspend(() => ++done === jobs ? Deferred.succeed(all, undefined) : Effect.void))
    yield* Deferred.await(all)
    const seconds = (performance.now() - start) / 1000
    return { throughputJobs: jobs, concurrency, enqueuePerSecond: jobs / enqueueSeconds, jobsPerSecond: jobs / seconds }
  }).pipe(Effect.scoped)

const latency = (jobs: number) =>
  Effect.gen(function*() {
    const queue = yield* JobQueue
    let started: Deferred.Deferred<number> | undefined
    yield* queue.work("bench-latency", { concurrency: 4 }, () =>
      Effect.suspend(() => started === undefined ? Effect.void : Deferred.succeed(started, performance.now())))
    // Let the worker reach its idle wait first.
    yield* Effect.sleep(200)
    const samples: Array<number> = []
    for (let i = 0; i < jobs; i++) {
      const current = yield* Deferred.make<number>()
      started = current
      const sent = performance.now()
      yield* queue.enqueue("bench-latency", { i })
      samples.push((yield* Deferred.await(current)) - sent)
    }
    samples.sort((a, b) => a - b)
    return {
      latencyJobs: jobs,
      latencyP50Ms: percentile(samples, 50),
      latencyP99Ms: percentile(samples, 99),
      latencyMaxMs: samples.at(-1)!
    }
  }).pipe(Effect.scoped)

/** Starts an embedded PostgreSQL, runs both measurements, stops and removes it. */
export const benchJobQueue = (options: JobQueueBenchOptions = {}): Effect.Effect<JobQueueBenchResult, unknown> =>
  Effect.gen(function*() {
    const dataDir = yield* Effect.acquireRelease(
      Effect.sync(() => Fs.mkdtempSync(Path.join(Os.tmpdir(), "parley-bench-jobqueue-"))),
      (dir) => Effect.sync(() => Fs.rmSync(dir, { recursive: true, force: true }))
    )
    const server = yield* EmbeddedPostgres.start({ dataDir, throwaway: true })
    const jobs = layerJobQueueFromUrl(server.url)
    const a = yield* throughput(options.throughputJobs ?? 2_000, options.concurrency ?? 100).pipe(Effect.provide(jobs))
    const b = yield* latency(options.latencyJobs ?? 500).pipe(Effect.provide(jobs))
    return { ...a, ...b }
  }).pipe(Effect.scoped)

export const formatJobQueueBench = (result: JobQueueBenchResult): string => {
  const rows: Array<readonly [string, string, string]> = [
    ["enqueue, 10 sends at a time", `${Math.round(result.enqueuePerSecond)} jobs/s`, ""],
    [
      `throughput, ${result.throughputJobs} queued jobs, concurrency ${result.concurrency}`,
      `${Math.round(result.jobsPerSecond)} jobs/s`,
      "target >= 5000"
    ],
    [`enqueue-to-start p50 (${result.latencyJobs} jobs)`, `${result.latencyP50Ms.toFixed(1)} ms`, ""],
    [`enqueue-to-start p99 (${result.latencyJobs} jobs)`, `${result.latencyP99Ms.toFixed(1)} ms`, "target <= 20 ms"],
    [`enqueue-to-start max (${result.latencyJobs} jobs)`, `${result.latencyMaxMs.toFixed(1)} ms`, ""]
  ]
  const width = [0, 1].map((column) => Math.max(...rows.map((row) => row[column]!.length)))
  const lines = rows.map(([what, figure, target]) =>
    `${what.padEnd(width[0]!)}  ${figure.padStart(width[1]!)}  ${target}`.trimEnd()
  )
  return ["JobQueue (pg-boss, embedded PostgreSQL)", ...lines].join("\n")
}

if (process.argv[1] !== undefined && Path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  Effect.runPromise(benchJobQueue()).then(
    (result) => console.log(formatJobQueueBench(result)),
    (error) => {
      console.error(error)
      process.exitCode = 1
    }
  )
}
