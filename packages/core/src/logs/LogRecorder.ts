/**
 * The write side of log search: every source hands its entries over and goes
 * on; background fibers write whatever waits, up to `MAX_BATCH` entries a
 * statement, so a request never waits on the insert and a busy host writes
 * many entries per round trip (`WRITERS` writes in flight: at an engine's peak one
 * writer fell behind, the host building the next batch and PostgreSQL writing the
 * last one in turn instead of at once; a batch gathers for `LINGER` at least: a
 * statement's fixed cost in PostgreSQL outweighed its rows' when a few entries went
 * per statement). Entries are completed (id, ingestion time, searchable words) in
 * the writer's fiber, not on the caller's. The buffer holds at most `MAX_BUFFERED`
 * entries: past that, entries are dropped, counted (`parley_log_entries_dropped_total`)
 * and logged (a warning with the count, every 10 s while it goes on and once the
 * buffer drains), so a stalled database costs bounded memory and an operator sees
 * what log search misses. Reads in this process call `flush` first; entries still
 * buffered when the layer closes are written before it finishes; a crash loses at
 * most what was buffered.
 */
import { Clock, Config, Context, Effect, Layer, Metric } from "effect"
import { LogSearch, type LogEntryRecord } from "./LogSearch.ts"
import * as BatchWriter from "../shared/BatchWriter.ts"
import { Ids } from "../shared/Ids.ts"
import { labelled } from "../shared/Telemetry.ts"
import { type LogEntryInput, logEntry } from "./LogEntry.ts"

/** Entries written by one statement at most. */
export const MAX_BATCH = 500
/** How long a batch gathers entries before it is written (a `flush` or a full batch cuts it short). */
export const LINGER = "100 millis"
/** Entries waiting at most; more are dropped (and counted) until the writer catches up. */
export const MAX_BUFFERED = 20_000
/** Batches written at once. */
export const WRITERS = 2

const droppedEntries = labelled(
  Metric.counter("parley_log_entries_dropped_total", {
    description: "Log search entries dropped because the recorder's buffer was full (the store fell behind)",
    incremental: true
  }),
  []
)({})

/** An entry as a source knows it: the recorder gives it its id and ingestion time. */
export type LogDraft = Omit<LogEntryInput, "id" | "ingested_at">

/** How log search is fed and kept (docs/decisions.md "Log search"). */
export class LogSettings extends Context.Service<LogSettings, {
  /** Whether every API request is recorded (`PARLEY_LOG_API_REQUESTS`, default true). */
  readonly recordApiRequests: boolean
  /** Days entries are kept (`PARLEY_LOG_RETENTION_DAYS`, default 14). */
  readonly retentionDays: number
}>()("@parley/core/logs/LogSettings") {
  static readonly layerConfig = Layer.effect(
    LogSettings,
    Effect.gen(function*() {
      const recordApiRequests = yield* Config.Boolean("PARLEY_LOG_API_REQUESTS").pipe(Config.withDefault(true))
      const retentionDays = yield* Config.Int("PARLEY_LOG_RETENTION_DAYS").pipe(Config.withDefault(14))
      if (retentionDays < 1) return yield* Effect.die(new Error(`PARLEY_LOG_RETENTION_DAYS must be at least 1, not ${retentionDays}`))
      return LogSettings.of({ recordApiRequests, retentionDays })
    })
  ).pipe(Layer.orDie)
}

export class LogRecorder extends Context.Service<LogRecorder, {
  /** Queues the entries; never fails or waits for storage. */
  readonly record: (drafts: ReadonlyArray<LogDraft>) => Effect.Effect<void>
  /** Waits until every entry queued before the call is written (or its write failed and was logged). */
  readonly flush: Effect.Effect<void>
}>()("@parley/core/logs/LogRecorder") {
  /** The recorder writing `writers` batches of `maxBatch` at once (`layer`: the defaults; a benchmark compares others). */
  static readonly layerWith = (options: { readonly writers: number; readonly maxBatch: number }) => Layer.effect(
    LogRecorder,
    Effect.gen(function*() {
      const logs = yield* LogSearch
      const ids = yield* Ids
      const writer = yield* BatchWriter.make<LogDraft>({
        maxBatch: options.maxBatch,
        maxBuffered: MAX_BUFFERED,
        concurrency: options.writers,
        linger: LINGER,
        // Entries are completed here, in the writer's fiber, with one ingestion time for the batch: when it was taken.
        write: (batch) =>
          Effect.gen(function*() {
            const ingestedAt = new Date(yield* Clock.currentTimeMillis).toISOString()
            const entries: Array<LogEntryRecord> = []
            for (const draft of batch) entries.push(logEntry({ ...draft, id: yield* ids.uuid, ingested_at: ingestedAt }))
            yield* logs.append(entries)
          }).pipe(
            Effect.catchCause((cause) =>
              Effect.logError("Could not write log search entries", cause).pipe(Effect.annotateLogs({ entries: batch.length }))
            )
          ),
        countDropped: (dropped) => Metric.update(droppedEntries, dropped),
        onDropped: (dropped) =>
          Effect.logWarning("Log search entries were dropped: the buffer was full").pipe(
            Effect.annotateLogs({ dropped, buffered: MAX_BUFFERED })
          )
      })
      return LogRecorder.of({ record: writer.add, flush: writer.flush })
    })
  )

  static readonly layer = LogRecorder.layerWith({ writers: WRITERS, maxBatch: MAX_BATCH })
}
