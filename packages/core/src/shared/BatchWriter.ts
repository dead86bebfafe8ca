/**
 * Items handed over without waiting and written in batches by background fibers: the caller never waits on
 * storage, and under load many items share one statement. Up to `concurrency` batches are written at once (default
 * one; the next batch gathers meanwhile). `flush` waits for what was queued before it (reads of this process call it
 * first), whichever order concurrent batches end in. Items still queued when the scope closes are written before it
 * ends, and a batch being written is not interrupted; a crash loses what was queued. With `maxBuffered`, items past
 * it are dropped: `countDropped` hears of each drop when it happens (a metric), `onDropped` of the count since its
 * last report when the queue drains, or every `REPORT_EVERY` while it does not (a log line an operator sees while
 * the writer stays behind, not only once it caught up), so a stalled store costs bounded memory and the loss is
 * visible. With `linger`, a batch waits that long for more items before it is written (unless `maxBatch` items wait
 * or a `flush` asks for it): each statement has a fixed cost, and items that trickle in faster than a write takes
 * would otherwise go a few per statement.
 */
import { Clock, Deferred, Duration, Effect, Latch, type Scope } from "effect"

export interface BatchWriter<A> {
  /** Queues the items; never fails or waits for storage. */
  readonly add: (items: ReadonlyArray<A>) => Effect.Effect<void>
  /** Waits until every item queued before the call is written (or its write failed: `write` handles that). */
  readonly flush: Effect.Effect<void>
}

/** How often drops are reported while the queue stays full. */
export const REPORT_EVERY = Duration.seconds(10)

export const make = <A>(options: {
  /** Items one `write` takes at most. */
  readonly maxBatch: number
  readonly maxBuffered?: number | undefined
  /** Batches written at once at most (default 1). */
  readonly concurrency?: number | undefined
  /** How long a batch waits for more items before it is written (default: not at all). */
  readonly linger?: Duration.Input | undefined
  /** Writes one batch; reports its own failures (the writer goes on). */
  readonly write: (batch: ReadonlyArray<A>) => Effect.Effect<void>
  /** Items dropped by one `add`, as it drops them. */
  readonly countDropped?: ((count: number) => Effect.Effect<void>) | undefined
  /** Items dropped since the last report: once the queue drains, and every `REPORT_EVERY` until it does. */
  readonly onDropped?: ((count: number) => Effect.Effect<void>) | undefined
}): Effect.Effect<BatchWriter<A>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const wake = yield* Latch.make(false)
    /** Open when a batch should not linger: a full batch waits, or a `flush` waits for it. */
    const hurry = yield* Latch.make(false)
    const linger = options.linger
    const maxBuffered = options.maxBuffered ?? Infinity
    const reportEvery = Duration.toMillis(REPORT_EVERY)
    let buffer: Array<A> = []
    /** Items taken from the queue so far: the next item's number. Items are numbered in the order they were queued. */
    let taken = 0
    /** The first item's number of each batch being written. */
    const writing = new Set<number>()
    /** Flushes waiting until every item below their number is written. */
    let waiters: Array<{ readonly upTo: number; readonly done: Deferred.Deferred<void> }> = []
    let dropped = 0
    let reportedAt: number | undefined

    /** Every item numbered below this is written. */
    const writtenUpTo = () => {
      let low = taken
      for (const first of writing) if (first < low) low = first
      return low
    }

    const report = Effect.gen(function*() {
      if (dropped === 0 || options.onDropped === undefined) return
      const now = yield* Clock.currentTimeMillis
      if (buffer.length > 0 && reportedAt !== undefined && now - reportedAt < reportEvery) return
      const count = dropped
      dropped = 0
      reportedAt = buffer.length > 0 ? now : undefined
      yield* options.onDropped(count)
    })

    const writeBatch = Effect.suspend(() => {
      const first = taken
      const batch = buffer.splice(0, options.maxBatch)
      taken += batch.length
      writing.add(first)
      return options.write(batch).pipe(
        Effect.ensuring(Effect.suspend(() => {
          writing.delete(first)
          const upTo = writtenUpTo()
          const ready = waiters.filter((w) => w.upTo <= upTo)
          if (ready.length === 0) return Effect.void
          waiters = waiters.filter((w) => w.upTo > upTo)
          return Effect.forEach(ready, (w) => Deferred.succeed(w.done, undefined), { discard: true })
        })),
        Effect.uninterruptible,
        Effect.andThen(report)
      )
    })

    const worker = Effect.gen(function*() {
      while (true) {
        yield* wake.await
        yield* wake.close
        while (buffer.length > 0) {
          if (linger !== undefined) {
            if (buffer.length < options.maxBatch) yield* Effect.raceFirst(hurry.await, Effect.sleep(linger))
            yield* hurry.close
          }
          // Another worker may have taken what lingered.
          if (buffer.length === 0) break
          // The next worker starts on what is left while this one writes.
          if (buffer.length > options.maxBatch) yield* wake.open
          yield* writeBatch
        }
      }
    })
    for (let i = 0; i < Math.max(1, options.concurrency ?? 1); i++) yield* Effect.forkScoped(worker)
    // On close: whatever is still queued is written before the scope ends.
    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => (buffer.length > 0 ? writeBatch : Effect.void)).pipe(Effect.repeat({ while: () => buffer.length > 0 }))
    )

    return {
      add: (items) =>
        Effect.suspend(() => {
          const room = Math.max(maxBuffered - buffer.length, 0)
          for (let i = 0; i < Math.min(items.length, room); i++) buffer.push(items[i]!)
          const woken = buffer.length >= options.maxBatch ? Effect.andThen(wake.open, hurry.open) : wake.open
          if (items.length <= room) return woken
          dropped += items.length - room
          return options.countDropped === undefined ? woken : Effect.andThen(woken, options.countDropped(items.length - room))
        }),
      flush: Effect.suspend(() => {
        const upTo = taken + buffer.length
        if (writtenUpTo() >= upTo) return Effect.void
        const done = Deferred.makeUnsafe<void>()
        waiters.push({ upTo, done })
        return Effect.andThen(hurry.open, Deferred.await(done))
      })
    }
  })
