/**
 * Durable jobs and timers. Webhook retries, function deploys, waits and
 * broadcasts all run on it: a job is enqueued (now, or at a time), survives a
 * restart of the host, and is handed to exactly one worker at a time across
 * every host sharing the store. A failed attempt is retried with backoff until
 * its retry limit is spent.
 */
import { Context, Data, Effect, Schema, type Scope } from "effect"

export interface EnqueueOptions {
  /** Epoch milliseconds before which the job does not start (a timer). */
  readonly runAt?: number | undefined
  /** While a job with this key is waiting or running in the queue, another enqueue with it is dropped. */
  readonly dedupeKey?: string | undefined
  /** Retries after the first attempt; default 2. */
  readonly retryLimit?: number | undefined
  /** Delay before the first retry in milliseconds, doubled for each further retry; default 1000. */
  readonly retryDelayMs?: number | undefined
  /**
   * The caller is in a transaction and does not need the answer: a store whose transactions can hold the job writes
   * it in the caller's (it exists once that commits, and no round trip is waited for; the answer is then null).
   * Elsewhere the job is enqueued at once, as without it.
   */
  readonly withinTransaction?: boolean | undefined
}

export interface Job {
  readonly id: string
  readonly queue: string
  readonly payload: unknown
  /** 1 for the first attempt. */
  readonly attempt: number
}

export interface WorkOptions {
  /** Jobs of this queue run at most this many at a time in this process. */
  readonly concurrency: number
}

/** One queue's backlog as `JobQueue.backlog` reads it. */
export interface QueueBacklog {
  readonly queue: string
  /** Jobs due now that no worker has started yet. */
  readonly ready: number
  /** Jobs due later (timers, retries waiting out their delay). */
  readonly scheduled: number
  /** Jobs being worked on. */
  readonly active: number
  /** How long the oldest ready job has been due, in milliseconds (0 when none is ready). */
  readonly oldestReadyMs: number
}

export class JobQueue extends Context.Service<JobQueue, {
  /** Stores the job; answers its id, or null when the dedupe key was already queued. */
  readonly enqueue: (queue: string, payload: unknown, options?: EnqueueOptions) => Effect.Effect<string | null>
  /**
   * Runs `handler` for the queue's jobs until the scope closes. A handler
   * failure (or defect) counts as a failed attempt. Closing the scope lets
   * running jobs finish.
   */
  readonly work: (
    queue: string,
    options: WorkOptions,
    handler: (job: Job) => Effect.Effect<void, unknown>
  ) => Effect.Effect<void, never, Scope.Scope>
  /** Removes a queued job that has not started; false when it already ran or is unknown. */
  readonly cancel: (queue: string, id: string) => Effect.Effect<boolean>
  /**
   * Removes up to `limit` jobs not running whose payload (as JSON text) holds
   * one of `terms`: queued ones never run, and the finished ones a store
   * keeps go too. Answers how many (contact erasure's step over job payloads).
   */
  readonly eraseMentions: (terms: ReadonlyArray<string>, limit: number) => Effect.Effect<number>
  /** Every queue with unfinished jobs, in any process of the store: what `/metrics` reads at scrape time. */
  readonly backlog: Effect.Effect<ReadonlyArray<QueueBacklog>>
}>()("@parley/core/ports/JobQueue") {}

/**
 * The payload of every chained periodic queue (`*.maintenance`, `*.sweep`): the slot (day, minute, ...) the job
 * was armed for.
 */
export const SlotJob = Schema.Struct({ slot: Schema.Finite })
export type SlotJob = typeof SlotJob.Type

/** A job whose payload is not what its queue's Schema says: the attempt fails with it. */
export class JobPayloadInvalid extends Data.TaggedError("JobPayloadInvalid")<{
  readonly queue: string
  readonly jobId: string
  readonly issue: string
}> {
  override get message() {
    return `job ${this.jobId} of ${this.queue}: payload does not decode: ${this.issue}`
  }
}

/**
 * A worker's handler over the decoded payload: the one place a queue's payload is read. A payload that does not
 * decode with `schema` is logged and fails the attempt with `JobPayloadInvalid` (the queue retries it, then
 * gives up), never reaching `handler`.
 */
export const decodingPayload = <S extends Schema.Decoder<unknown>, E, R>(
  schema: S,
  handler: (payload: S["Type"], job: Job) => Effect.Effect<void, E, R>
) => {
  const decode = Schema.decodeUnknownEffect(schema)
  return (job: Job): Effect.Effect<void, E | JobPayloadInvalid, R | S["DecodingServices"]> =>
    decode(job.payload).pipe(
      Effect.catchTag("SchemaError", (error) => {
        const invalid = new JobPayloadInvalid({ queue: job.queue, jobId: job.id, issue: error.message })
        return Effect.logWarning("A job's payload does not decode").pipe(
          Effect.annotateLogs({ queue: job.queue, jobId: job.id, attempt: job.attempt, issue: invalid.issue }),
          Effect.andThen(Effect.fail(invalid))
        )
      }),
      Effect.flatMap((payload) => handler(payload, job))
    )
}
