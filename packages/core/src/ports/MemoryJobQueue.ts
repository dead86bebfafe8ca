/**
 * In-memory `JobQueue` for tests and single-process development. Every
 * timing decision (run-at times, retry backoff) reads Effect's `Clock`, so a
 * test moves a timer forward with `TestClock.adjust` instead of waiting. Jobs
 * live only as long as the layer: nothing survives a restart.
 *
 * One scheduler fiber per layer hands due jobs to the workers registered with
 * `work`, sleeping until the next run-at time or until something changes (an
 * enqueue, a finished attempt, a worker arriving).
 */
import { Cause, Clock, Effect, Exit, FiberSet, Latch, Layer } from "effect"
import { type EnqueueOptions, type Job, JobQueue, type QueueBacklog, type WorkOptions } from "./JobQueue.ts"

const defaultRetryLimit = 2
const defaultRetryDelayMs = 1000

interface StoredJob {
  readonly id: string
  readonly queue: string
  /** JSON text, so handlers see what a database round-trip would give them. */
  readonly payload: string | undefined
  readonly seq: number
  readonly dedupeKey: string | undefined
  readonly retryLimit: number
  readonly retryDelayMs: number
  state: "queued" | "running"
  runAt: number
  /** Attempts started so far. */
  attempt: number
}

interface Worker {
  readonly queue: string
  readonly concurrency: number
  running: number
  /** Forks one attempt into the worker's own fiber set (its `work` scope). */
  readonly start: (job: StoredJob) => void
}

const dedupeSlot = (queue: string, key: string) => `${queue}\u0000${key}`

const decodePayload = (json: string | undefined): unknown => json === undefined ? undefined : JSON.parse(json)

export const makeMemoryJobQueue = Effect.gen(function*() {
  const jobs = new Map<string, StoredJob>()
  const dedupe = new Map<string, string>()
  const workers = new Map<string, Set<Worker>>()
  const wake = yield* Latch.make(false)
  let seq = 0

  // uuid-shaped ids, like the Postgres adapter's, counted per layer so tests stay deterministic.
  const nextId = () => `00000000-0000-4000-8000-${(++seq).toString(16).padStart(12, "0")}`

  const release = (job: StoredJob) => {
    jobs.delete(job.id)
    if (job.dedupeKey !== undefined) dedupe.delete(dedupeSlot(job.queue, job.dedupeKey))
  }

  const settle = (worker: Worker, job: StoredJob, exit: Exit.Exit<void, unknown>) =>
    Effect.gen(function*() {
      worker.running--
      if (Exit.isSuccess(exit)) {
        release(job)
      } else if (job.attempt <= job.retryLimit) {
        const now = yield* Clock.currentTimeMillis
        job.state = "queued"
        job.runAt = now + job.retryDelayMs * 2 ** (job.attempt - 1)
        yield* Effect.logDebug("JobQueue: attempt failed, retrying").pipe(
          Effect.annotateLogs({ queue: job.queue, jobId: job.id, attempt: job.attempt, error: Cause.pretty(exit.cause) })
        )
      } else {
        release(job)
        yield* Effect.logWarning("JobQueue: job failed, retries exhausted").pipe(
          Effect.annotateLogs({ queue: job.queue, jobId: job.id, attempts: job.attempt, error: Cause.pretty(exit.cause) })
        )
      }
      yield* wake.open
    })

  /** Starts every due job that has a free worker; answers when the next queued job falls due. */
  const dispatch = (now: number): number | undefined => {
    let nextDue: number | undefined
    const due: Array<StoredJob> = []
    for (const job of jobs.values()) {
      if (job.state !== "queued") continue
      if (job.runAt <= now) due.push(job)
      else if (nextDue === undefined || job.runAt < nextDue) nextDue = job.runAt
    }
    due.sort((a, b) => a.runAt - b.runAt || a.seq - b.seq)
    for (const job of due) {
      let chosen: Worker | undefined
      for (const worker of workers.get(job.queue) ?? []) {
        if (worker.running < worker.concurrency && (chosen === undefined || worker.running < chosen.running)) {
          chosen = worker
        }
      }
      if (chosen === undefined) continue
      job.state = "running"
      job.attempt++
      chosen.running++
      chosen.start(job)
    }
    return nextDue
  }

  yield* Effect.gen(function*() {
    while (true) {
      // Closed before looking, so a change made while dispatching reopens it and the wait below returns at once.
      yield* wake.close
      const now = yield* Clock.currentTimeMillis
      const nextDue = dispatch(now)
      yield* nextDue === undefined ? wake.await : Effect.raceFirst(wake.await, Effect.sleep(nextDue - now))
    }
  }).pipe(Effect.forkScoped)

  const enqueue = Effect.fn("JobQueue.enqueue")(function*(queue: string, payload: unknown, options?: EnqueueOptions) {
    const now = yield* Clock.currentTimeMillis
    const key = options?.dedupeKey
    if (key !== undefined && dedupe.has(dedupeSlot(queue, key))) return null
    const id = nextId()
    jobs.set(id, {
      id,
      queue,
      payload: payload === undefined ? undefined : JSON.stringify(payload),
      seq,
      dedupeKey: key,
      retryLimit: Math.max(0, options?.retryLimit ?? defaultRetryLimit),
      retryDelayMs: Math.max(0, options?.retryDelayMs ?? defaultRetryDelayMs),
      state: "queued",
      runAt: options?.runAt ?? now,
      attempt: 0
    })
    if (key !== undefined) dedupe.set(dedupeSlot(queue, key), id)
    yield* wake.open
    return id
  })

  const work = Effect.fn("JobQueue.work")(
    function*(queue: string, options: WorkOptions, handler: (job: Job) => Effect.Effect<void, unknown>) {
      const fibers = yield* FiberSet.make<void>()
      // Captures the caller's services (its Clock among them) for the attempts this worker runs.
      const run = yield* FiberSet.runtime(fibers)<never>()
      const worker: Worker = {
        queue,
        concurrency: Math.max(1, Math.floor(options.concurrency)),
        running: 0,
        start: (job) => {
          const attempt: Job = { id: job.id, queue: job.queue, payload: decodePayload(job.payload), attempt: job.attempt }
          run(Effect.suspend(() => handler(attempt)).pipe(
            Effect.withSpan("JobQueue.attempt", { attributes: { queue, jobId: job.id, attempt: job.attempt } }),
            Effect.onExit((exit) => settle(worker, job, exit))
          ))
        }
      }
      const registered = workers.get(queue) ?? new Set<Worker>()
      workers.set(queue, registered)
      registered.add(worker)
      // Runs before the fiber set's own finalizer: stop taking jobs, then let the running ones finish.
      yield* Effect.addFinalizer(() =>
        Effect.gen(function*() {
          registered.delete(worker)
          if (registered.size === 0) workers.delete(queue)
          yield* FiberSet.awaitEmpty(fibers)
        })
      )
      yield* wake.open
    }
  )

  const cancel = Effect.fn("JobQueue.cancel")(function*(queue: string, id: string) {
    const job = jobs.get(id)
    if (job === undefined || job.queue !== queue || job.state !== "queued") return false
    release(job)
    yield* wake.open
    return true
  })

  // Finished jobs are not kept here: only queued ones can hold a mention.
  const eraseMentions = Effect.fn("JobQueue.eraseMentions")(function*(terms: ReadonlyArray<string>, limit: number) {
    const named = [...jobs.values()]
      .filter((job) => job.state === "queued" && job.payload !== undefined && terms.some((t) => job.payload!.includes(t)))
      .slice(0, limit)
    for (const job of named) release(job)
    if (named.length > 0) yield* wake.open
    return named.length
  })

  const backlog = Effect.map(Clock.currentTimeMillis, (now) => {
    const queues = new Map<string, QueueBacklog>()
    for (const job of jobs.values()) {
      const b = queues.get(job.queue) ?? { queue: job.queue, ready: 0, scheduled: 0, active: 0, oldestReadyMs: 0 }
      const due = job.state === "queued" && job.runAt <= now
      queues.set(job.queue, {
        ...b,
        ready: b.ready + (due ? 1 : 0),
        scheduled: b.scheduled + (job.state === "queued" && !due ? 1 : 0),
        active: b.active + (job.state === "running" ? 1 : 0),
        oldestReadyMs: due ? Math.max(b.oldestReadyMs, now - job.runAt) : b.oldestReadyMs
      })
    }
    return [...queues.values()]
  })

  return JobQueue.of({ enqueue, work, cancel, eraseMentions, backlog })
})

/** An in-memory `JobQueue` on Effect's `Clock`; its scheduler stops with the layer's scope. */
export const layerMemoryJobQueue: Layer.Layer<JobQueue> = Layer.effect(JobQueue, makeMemoryJobQueue)
