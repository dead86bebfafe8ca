/**
 * `JobQueue` on pg-boss 12: jobs are rows in Parley's PostgreSQL database, so
 * they outlive the host that enqueued them, and every host sharing the
 * database claims from the same queues (`SKIP LOCKED`: one claim per job).
 *
 * How the port maps onto pg-boss:
 *
 * - Every queue is created with policy `exclusive` (a unique index on the
 *   singleton key over jobs that are `created`, `retry` or `active`) and
 *   `notify: true`. A dedupe key becomes the singleton key `key:<dedupeKey>`,
 *   so a second enqueue is dropped while the first job is queued, waiting
 *   for a retry, or running, and accepted again once it completed, failed or
 *   was cancelled. A job without a dedupe key gets the singleton key
 *   `job:<its id>`: under `exclusive` a missing key counts as one shared key.
 *   (The `standard` policy ignores a bare singleton key; `singleton` and
 *   `stately` allow one queued and one active job per key.)
 * - Enqueues are `insert`s (the statement `send` runs, for many jobs): those
 *   made on a queue while its previous insert runs go together in the next
 *   one, each answered with its id, or null when its key was taken.
 * - `runAt` is `startAfter`. `retryLimit` is pg-boss's; `retryDelayMs`
 *   becomes whole seconds (rounded up) with `retryBackoff`: pg-boss waits
 *   `delay·2^(n-1)` to `delay·2^n` before retry n (it adds jitter), so the
 *   port's "not before delay·2^(n-1)" holds. A delay of 0 retries at the next
 *   poll. `attempt` is pg-boss's `retryCount + 1`.
 *
 * Workers are a loop of our own over pg-boss's `fetch`/`complete`/`fail`/
 * `touch` rather than `boss.work`: a `boss.work` poller holds its whole batch
 * until the slowest job of it finishes, so one slow job idles the slots of
 * its batch-mates while they stay claimed. Here a worker claims exactly as
 * many jobs as it has free slots (up to 50 a fetch), claims again the moment
 * a slot frees, and settles each job on its own. New jobs wake idle workers
 * through pg-boss's LISTEN/NOTIFY channel; jobs due later (timers, retries)
 * are found by polling every `pollingIntervalSeconds`.
 */
import { type EnqueueOptions, type Job, JobQueue, type WorkOptions } from "@parley/core"
import { Cache, Cause, Deferred, Duration, Effect, Exit, FiberSet, Latch, Layer, Queue, Redacted, Schedule, Schema } from "effect"
import * as Crypto from "node:crypto"
import { type Job as BossJob, PgBoss, type SendOptions } from "pg-boss"
import { DatabaseUrl } from "./Database.ts"
import { decodeRows } from "./Rows.ts"
import { CurrentPgTransaction } from "./Transactor.ts"

export class JobQueueStartError extends Schema.TaggedError<JobQueueStartError>()("JobQueueStartError", {
  message: Schema.String,
  cause: Schema.Defect()
}) {}

export interface PgJobQueueOptions {
  /** PostgreSQL schema of pg-boss's tables; default `pgboss`. */
  readonly schema?: string | undefined
  /**
   * Seconds one attempt may run before it is failed (and retried): by the
   * worker itself, or by any host's supervisor when the worker's host died.
   * Default 900. Applies to queues this creates.
   */
  readonly expireInSeconds?: number | undefined
  /**
   * Workers refresh their running jobs every half of this; a job whose
   * refreshes stop (its host died) is retried after about this many seconds
   * (plus up to `superviseIntervalSeconds`), long before `expireInSeconds`.
   * At least 10 (pg-boss's floor); default 10, so a dead host's jobs run again
   * within about 15 s; `null` turns heartbeats off. Applies to queues this
   * creates (an existing queue keeps the heartbeat it was made with).
   */
  readonly heartbeatSeconds?: number | null | undefined
  /** How often the supervisor looks for jobs of dead workers, in seconds; default 5 (one indexed query). */
  readonly superviseIntervalSeconds?: number | undefined
  /**
   * How often an idle worker polls, in seconds; default 1. New jobs wake
   * workers at once through NOTIFY; timers and retries wait for a poll.
   */
  readonly pollingIntervalSeconds?: number | undefined
  /** Connections in pg-boss's pool; default 16 (the relay enqueues a batch's jobs side by side). */
  readonly maxConnections?: number | undefined
}

interface Envelope {
  readonly payload?: unknown
}

const defaultRetryLimit = 2
const defaultRetryDelayMs = 1000
const maxFetch = 50
const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** The channel pg-boss notifies on when a job is ready at once (its `plans.notifyChannelSql`). */
const notifyChannel = (schema: string) =>
  `pgboss_${Crypto.createHash("sha224").update(schema).digest("hex").slice(0, 24)}`

const sendOptions = (id: string, options: EnqueueOptions | undefined): SendOptions => {
  const retryDelayMs = Math.max(0, options?.retryDelayMs ?? defaultRetryDelayMs)
  const send: SendOptions = {
    id,
    singletonKey: options?.dedupeKey !== undefined ? `key:${options.dedupeKey}` : `job:${id}`,
    retryLimit: Math.max(0, Math.floor(options?.retryLimit ?? defaultRetryLimit)),
    retryDelay: Math.ceil(retryDelayMs / 1000),
    retryBackoff: retryDelayMs > 0
  }
  if (options?.runAt !== undefined) send.startAfter = new Date(options.runAt)
  return send
}

/** A row of the backlog query: counts are bigints and the age numeric, both text from the driver. */
const BacklogRow = Schema.Struct({
  queue: Schema.String,
  ready: Schema.NumberFromString,
  scheduled: Schema.NumberFromString,
  active: Schema.NumberFromString,
  oldest_ready_ms: Schema.NumberFromString
})
const decodeBacklogRows = decodeRows(BacklogRow)
const decodeBacklog = (rows: ReadonlyArray<unknown>) =>
  Effect.map(decodeBacklogRows(rows), (decoded) =>
    decoded.map(({ oldest_ready_ms, ...row }) => ({ ...row, oldestReadyMs: Math.round(oldest_ready_ms) })))

/** A job as claimed: settling with it only lands while that claim holds (pg-boss's attempt fence). */
interface JobAttempt {
  readonly id: string
  readonly retryCount: number
}

interface Claim {
  readonly job: BossJob<Envelope>
  /** Interrupts the attempt once the claim is known to be lost (heartbeat found it taken). */
  readonly lost: Deferred.Deferred<void>
}

/** A `JobQueue` over pg-boss in the database at `url`; pg-boss stops with the scope. */
export const makePgJobQueue = Effect.fnUntraced(function*(
  url: Redacted.Redacted<string>,
  options: PgJobQueueOptions = {}
) {
  const schema = options.schema ?? "pgboss"
  const pollMs = Math.max(100, (options.pollingIntervalSeconds ?? 1) * 1000)
  const superviseIntervalSeconds = options.superviseIntervalSeconds ?? 5
  const heartbeatSeconds = options.heartbeatSeconds === undefined ? 10 : options.heartbeatSeconds
  const runFork = yield* FiberSet.makeRuntime<never>()
  const promise = <A>(evaluate: () => PromiseLike<A>) => Effect.tryPromise(evaluate).pipe(Effect.orDie)

  const boss = yield* Effect.acquireRelease(
    Effect.suspend(() => {
      const boss = new PgBoss({
        connectionString: Redacted.value(url),
        schema,
        max: options.maxConnections ?? 16,
        application_name: "parley-jobs",
        // pg-boss's own listener only wakes `boss.work` pollers, which we do not use; ours is below.
        useListenNotify: false,
        superviseIntervalSeconds,
        monitorIntervalSeconds: superviseIntervalSeconds,
        // Delayed jobs are timers (one per waiting execution with a timeout): a large backlog is normal, and the
        // monitor would warn about it every pass.
        warningQueueSize: 1_000_000
      })
      // Without an `error` listener pg-boss's EventEmitter would throw from its timers.
      // Only the message and code: the error object holds the client, whose connection parameters carry the password.
      boss.on("error", (error: Error & { readonly code?: unknown }) =>
        runFork(Effect.logError(`pg-boss error: ${error.message}`, { code: error.code ?? null })))
      boss.on("warning", (warning) => runFork(Effect.logWarning(`pg-boss: ${warning.message}`, warning.data)))
      return Effect.tryPromise({
        try: () => boss.start(),
        catch: (cause) => new JobQueueStartError({ message: "pg-boss did not start", cause })
      }).pipe(Effect.onError(() => Effect.promise(() => boss.stop({ graceful: false }).catch(() => undefined))))
    }),
    (boss) => Effect.promise(() => boss.stop({ graceful: true, timeout: 1000 }))
  )

  // Each worker's wake-up latch, by queue: a notification for the queue opens them (a reconnect of
  // the listener, which may have missed some, opens all). The pool pg-boss made has `listen`.
  const wakers = new Map<string, Set<Latch.Latch>>()
  const wakeQueue = (queue: string) => wakers.get(queue)?.forEach((latch) => latch.openUnsafe())
  yield* Effect.acquireRelease(
    promise(() =>
      boss.getDb().listen!(notifyChannel(schema), wakeQueue, () => wakers.forEach((_, queue) => wakeQueue(queue)))
    ),
    (handle) => Effect.promise(() => handle.close())
  ).pipe(
    // Behind a transaction-pooling proxy, say: still correct, only slower.
    Effect.catchCause((cause) => Effect.logWarning("JobQueue: LISTEN failed, workers will only poll", cause))
  )

  const queues = yield* Cache.make({
    capacity: Number.MAX_SAFE_INTEGER,
    lookup: (name: string) =>
      Effect.gen(function*() {
        yield* promise(() =>
          boss.createQueue(name, {
            policy: "exclusive",
            notify: true,
            expireInSeconds: options.expireInSeconds ?? 900,
            ...(heartbeatSeconds === null ? {} : { heartbeatSeconds })
          })
        )
        // createQueue leaves an existing queue as it is: one made elsewhere must still dedupe.
        const queue = yield* promise(() => boss.getQueue(name))
        if (queue?.policy !== "exclusive" || queue.notify !== true) {
          return yield* Effect.die(new Error(`pg-boss queue "${name}" exists without policy exclusive and notify`))
        }
      })
  })
  // The cache keeps failures too: forget one, so the next call tries again.
  const ensureQueue = (name: string) =>
    Cache.get(queues, name).pipe(Effect.onError(() => Cache.invalidate(queues, name)))

  // Enqueues of a queue made while its previous insert runs go together in the next one (one statement,
  // the same as `send`'s: ON CONFLICT DO NOTHING drops a taken singleton key, NOTIFY wakes the workers).
  interface PendingSend {
    readonly job: SendOptions & { readonly id: string; readonly data: Envelope; readonly startAfter?: string }
    readonly resolve: (id: string | null) => void
    readonly reject: (cause: unknown) => void
  }
  const pendingSends = new Map<string, Array<PendingSend>>()
  const insertPending = async (queue: string) => {
    for (let batch = pendingSends.get(queue); batch !== undefined; batch = pendingSends.get(queue)) {
      pendingSends.set(queue, [])
      if (batch.length === 0) break
      try {
        const ids = await boss.insert(queue, batch.map(({ job }) => job), { returnId: true })
        const inserted = new Set(ids ?? [])
        for (const { job, resolve } of batch) resolve(inserted.has(job.id) ? job.id : null)
      } catch (cause) {
        for (const { reject } of batch) reject(cause)
      }
    }
    pendingSends.delete(queue)
  }

  /**
   * The statement pg-boss's `insert` runs for a queue, by queue: taken once through an executor that only keeps it.
   * Its one parameter is the jobs as JSON (ours have no group, no dependencies and zoned times: pg-boss passes them
   * as they are).
   */
  const insertTexts = new Map<string, string>()
  const insertText = (queue: string) => {
    const known = insertTexts.get(queue)
    if (known !== undefined) return Effect.succeed(known)
    return promise(async () => {
      let text: string | undefined
      const db = {
        executeSql: (sql: string) => {
          text = sql
          return Promise.resolve({ rows: [] })
        }
      }
      await boss.insert(queue, [], { db })
      if (text === undefined) throw new Error("pg-boss wrote no insert")
      insertTexts.set(queue, text)
      return text
    })
  }

  /** `jobs` inserted by the caller's transaction, with its next statement (their ids are not read). */
  const insertWithin = (
    transaction: NonNullable<typeof CurrentPgTransaction.Service>,
    queue: string,
    jobs: ReadonlyArray<PendingSend["job"]>
  ) => Effect.flatMap(insertText(queue), (text) => transaction.defer(text, [JSON.stringify(jobs)]))

  const enqueue = Effect.fn("JobQueue.enqueue")(function*(queue: string, payload: unknown, options?: EnqueueOptions) {
    yield* ensureQueue(queue)
    const id = Crypto.randomUUID()
    const { startAfter, ...send } = sendOptions(id, options)
    const job = { ...send, id, data: { payload } satisfies Envelope, ...(startAfter === undefined ? {} : { startAfter: new Date(startAfter as Date).toISOString() }) }
    if (options?.withinTransaction === true) {
      const transaction = yield* CurrentPgTransaction
      // Only a transaction on pg-boss's own database can hold its job.
      if (transaction !== undefined && transaction.url === Redacted.value(url)) {
        yield* insertWithin(transaction, queue, [job])
        return null
      }
    }
    return yield* promise(() =>
      new Promise<string | null>((resolve, reject) => {
        const waiting = pendingSends.get(queue)
        if (waiting !== undefined) return waiting.push({ job, resolve, reject })
        pendingSends.set(queue, [{ job, resolve, reject }])
        void insertPending(queue)
      })
    )
  })

  const work = Effect.fn("JobQueue.work")(
    function*(queue: string, options: WorkOptions, handler: (job: Job) => Effect.Effect<void, unknown>) {
      yield* ensureQueue(queue)
      const concurrency = Math.max(1, Math.floor(options.concurrency))
      const claims = new Map<string, Claim>()
      // Opened by a notification for the queue and by every finished attempt.
      const wake = yield* Latch.make(false)
      const attempts = yield* FiberSet.make<void>()
      // Attempts run with the services of the caller of `work`.
      const runAttempt = yield* FiberSet.runtime(attempts)<never>()

      // Completions are written in batches: each finished attempt waits for the batch holding it, and
      // a batch is whatever finished while the previous one was being written.
      const completions = yield* Queue.unbounded<readonly [JobAttempt, Deferred.Deferred<void>]>()
      const writeCompletions = Effect.gen(function*() {
        const batch = yield* Queue.takeAll(completions)
        const written = yield* Effect.exit(
          Effect.asVoid(promise(() => boss.complete(queue, batch.map(([attempt]) => attempt))))
        )
        for (const [, done] of batch) yield* Deferred.done(done, written)
      })

      const settle = (claim: Claim, exit: Exit.Exit<void, unknown>) => {
        const attempt: JobAttempt = { id: claim.job.id, retryCount: claim.job.retryCount }
        if (Exit.isSuccess(exit)) {
          return Effect.flatMap(Deferred.make<void>(), (done) =>
            Queue.offer(completions, [attempt, done]).pipe(Effect.andThen(Deferred.await(done))))
        }
        const error = Cause.pretty(exit.cause)
        return Effect.logDebug("JobQueue: attempt failed").pipe(
          Effect.annotateLogs({ queue, jobId: claim.job.id, attempt: claim.job.retryCount + 1, error }),
          Effect.andThen(promise(() => boss.fail(queue, attempt, { error })))
        )
      }

      const start = (job: BossJob<Envelope>) => {
        const claim: Claim = { job, lost: Deferred.makeUnsafe<void>() }
        claims.set(job.id, claim)
        runAttempt(
          Effect.suspend(() =>
            handler({ id: job.id, queue, payload: job.data?.payload, attempt: job.retryCount + 1 })
          ).pipe(
            Effect.withSpan("JobQueue.attempt", { attributes: { queue, jobId: job.id, attempt: job.retryCount + 1 } }),
            // pg-boss's supervisor fails an attempt that outlives its expiry; stop it here too.
            Effect.timeout(Duration.seconds(job.expireInSeconds)),
            // Someone else settled or re-claimed the job: stop (the settle below is then a no-op).
            Effect.raceFirst(Deferred.await(claim.lost).pipe(Effect.andThen(Effect.fail("claim lost")))),
            Effect.exit,
            Effect.flatMap((exit) => settle(claim, exit)),
            Effect.catchCause((cause) => Effect.logError("JobQueue: could not settle a job", cause)),
            Effect.ensuring(Effect.sync(() => {
              claims.delete(job.id)
              wake.openUnsafe()
            }))
          )
        )
      }

      // Claims as many jobs as there are free slots; fetch and start are one step, so
      // stopping the loop never strands a claimed job.
      const claimBatch = Effect.uninterruptible(Effect.gen(function*() {
        const free = Math.min(maxFetch, concurrency - claims.size)
        if (free <= 0) return false
        const jobs = yield* Effect.tryPromise(() => boss.fetch<Envelope>(queue, { batchSize: free })).pipe(
          Effect.catchCause((cause) => Effect.as(Effect.logError("JobQueue: fetch failed", cause), []))
        )
        jobs.forEach(start)
        // A full fetch says more may be waiting.
        return jobs.length === free && claims.size < concurrency
      }))

      const loop = Effect.gen(function*() {
        while (true) {
          yield* wake.close
          if (!(yield* claimBatch)) yield* Effect.raceFirst(wake.await, Effect.sleep(pollMs))
        }
      })

      const refresh = Effect.gen(function*() {
        if (claims.size === 0) return
        const held = [...claims.values()]
        const touched = yield* promise(() =>
          boss.touch(queue, held.map(({ job }) => ({ id: job.id, retryCount: job.retryCount })))
        )
        const refreshed = new Set((touched as { readonly settled?: ReadonlyArray<string> }).settled ?? [])
        for (const claim of held) {
          if (!refreshed.has(claim.job.id) && claims.has(claim.job.id)) yield* Deferred.succeed(claim.lost, undefined)
        }
      }).pipe(Effect.catchCause((cause) => Effect.logWarning("JobQueue: heartbeat failed", cause)))

      // Finalizers run last-added first: stop claiming, let running attempts finish, then stop
      // their heartbeat and the completion writer.
      yield* Effect.forkScoped(Effect.forever(writeCompletions))
      if (heartbeatSeconds !== null) {
        yield* refresh.pipe(Effect.repeat(Schedule.spaced(Duration.seconds(heartbeatSeconds / 2))), Effect.forkScoped)
      }
      const registered = wakers.get(queue) ?? new Set<Latch.Latch>()
      wakers.set(queue, registered)
      registered.add(wake)
      yield* Effect.addFinalizer(() =>
        Effect.andThen(
          FiberSet.awaitEmpty(attempts),
          Effect.sync(() => {
            registered.delete(wake)
            if (registered.size === 0) wakers.delete(queue)
          })
        )
      )
      yield* Effect.forkScoped(loop)
    }
  )

  // pg-boss's own cancel also cancels active jobs; the port cancels only jobs not yet started.
  const cancelSql = `
    UPDATE ${schema}.job SET state = 'cancelled', completed_on = ${schema}.job_now()
    WHERE name = $1 AND id = $2::uuid AND state < 'active'
    RETURNING id`

  const cancel = Effect.fn("JobQueue.cancel")(function*(queue: string, id: string) {
    if (!uuid.test(id)) return false
    const { rows } = yield* promise(() => boss.getDb().executeSql(cancelSql, [queue, id]))
    return rows.length > 0
  })

  // Any state but active: a running job's worker still settles it. Rows of every state are in the one (partitioned) table.
  const eraseMentionsSql = `
    DELETE FROM ${schema}.job WHERE (name, id) IN (
      SELECT name, id FROM ${schema}.job
      WHERE state <> 'active' AND EXISTS (SELECT 1 FROM unnest($1::text[]) AS t WHERE strpos(data::text, t) > 0)
      LIMIT $2)
    RETURNING id`

  const eraseMentions = Effect.fn("JobQueue.eraseMentions")(function*(terms: ReadonlyArray<string>, limit: number) {
    if (terms.length === 0) return 0
    const { rows } = yield* promise(() => boss.getDb().executeSql(eraseMentionsSql, [terms, limit]))
    return rows.length
  })

  // Unfinished jobs by queue (states before `completed`); ages from the database's clock, as pg-boss schedules by it.
  const backlogSql = `
    SELECT name AS queue,
      count(*) FILTER (WHERE state < 'active' AND start_after <= now()) AS ready,
      count(*) FILTER (WHERE state < 'active' AND start_after > now()) AS scheduled,
      count(*) FILTER (WHERE state = 'active') AS active,
      COALESCE(EXTRACT(EPOCH FROM now() - min(start_after) FILTER (WHERE state < 'active' AND start_after <= now())) * 1000, 0)
        AS oldest_ready_ms
    FROM ${schema}.job WHERE state < 'completed' GROUP BY name`

  const backlog = Effect.flatMap(
    promise(() => boss.getDb().executeSql(backlogSql, [])),
    ({ rows }) => decodeBacklog(rows)
  ).pipe(Effect.withSpan("JobQueue.backlog"))

  return JobQueue.of({ enqueue, work, cancel, eraseMentions, backlog })
})

/** `JobQueue` over pg-boss in the database at `url`. */
export const layerJobQueueFromUrl = (
  url: string | Redacted.Redacted<string>,
  options?: PgJobQueueOptions
): Layer.Layer<JobQueue, JobQueueStartError> =>
  Layer.effect(JobQueue, makePgJobQueue(typeof url === "string" ? Redacted.make(url) : url, options))

/** `JobQueue` over pg-boss in Parley's database (`DatabaseUrl`). */
export const layerJobQueue = (options?: PgJobQueueOptions): Layer.Layer<JobQueue, JobQueueStartError, DatabaseUrl> =>
  Layer.effect(
    JobQueue,
    Effect.gen(function*() {
      return yield* makePgJobQueue(yield* DatabaseUrl, options)
    })
  )
