/**
 * Append-only history kept by time (log search entries, step events): a store may keep such a table in spans of
 * time (PostgreSQL: a partition a day, migration 0036), so retention drops a whole span at once instead of
 * deleting its rows one by one. Retention readies the coming spans and retires the expired ones here, then prunes
 * row by row what is left before the cut it was answered (rows stored outside any span, in a store that keeps none).
 * The memory adapter keeps no spans: it readies nothing and answers the retention's own time as the cut.
 */
import { Clock, Context, Effect, Layer } from "effect"

/** The tables kept by time, named as the stores name them. */
export const TIME_PARTITIONED = ["log_entries", "workflow_step_events"] as const
export type TimePartitionedTable = typeof TIME_PARTITIONED[number]

export class TimePartitions extends Context.Service<TimePartitions, {
  /**
   * Readies the table's spans from the one holding `from` through the one holding `until` (ISO instants), so rows
   * of those times are stored where retention can drop them whole; rows of those times already stored outside a
   * span are moved into it. Idempotent, safe to run from several hosts at once.
   */
  readonly prepare: (table: TimePartitionedTable, from: string, until: string) => Effect.Effect<void>
  /**
   * Drops the table's spans that end at or before `before`, with every row in them, and answers the cut: where
   * row-by-row pruning stops, the start of the span holding `before` (`before` itself in a store without spans).
   * The rows of that span stay until all of it is past the retention.
   */
  readonly retire: (table: TimePartitionedTable, before: string) => Effect.Effect<string>
}>()("@parley/core/ports/TimePartitions") {}

export const layerMemoryTimePartitions: Layer.Layer<TimePartitions> = Layer.succeed(
  TimePartitions,
  TimePartitions.of({ prepare: () => Effect.void, retire: (_table, before) => Effect.succeed(before) })
)

/** How far ahead retention readies spans: a day's maintenance missed still finds tomorrow's span ready. */
export const READY_AHEAD_MS = 2 * 24 * 60 * 60 * 1000

/**
 * A table's retention: readies the spans of the coming days, retires the spans wholly before `before` (epoch ms),
 * then prunes what is left before the cut, `batch` rows a statement, until a statement finds fewer; answers the
 * rows pruned one by one (the rows of dropped spans are not counted).
 */
export const retainByTime = Effect.fnUntraced(function*(
  table: TimePartitionedTable,
  before: number,
  prune: (cut: string, limit: number) => Effect.Effect<number>,
  batch: number
) {
  const partitions = yield* TimePartitions
  const now = yield* Clock.currentTimeMillis
  yield* partitions.prepare(table, new Date(now).toISOString(), new Date(now + READY_AHEAD_MS).toISOString())
  const cut = yield* partitions.retire(table, new Date(before).toISOString())
  let pruned = 0
  for (;;) {
    const n = yield* prune(cut, batch)
    pruned += n
    if (n < batch) return pruned
  }
})
