/**
 * Items handed over without waiting and written in batches by one background fiber: the caller never waits on
 * storage, and under load many items share one statement (one write in flight; the next batch gathers meanwhile).
 * `flush` waits for what was queued before it (reads of this process call it first). Items still queued when the
 * scope closes are written before it ends; a crash loses what was queued. With `maxBuffered`, items past it are
 * dropped and counted (`onDropped` once the queue drains), so a stalled store costs bounded memory.
 */
import { Deferred, Effect, Latch, type Scope } from "effect"

export interface BatchWriter<A> {
  /** Queues the items; never fails or waits for storage. */
  readonly add: (items: ReadonlyArray<A>) => Effect.Effect<void>
  /** Waits until every item queued before the call is written (or its write failed: `write` handles that). */
  readonly flush: Effect.Effect<void>
}

export const make = <A>(options: {
  /** Items one `write` takes at most. */
  readonly maxBatch: number
  readonly maxBuffered?: number | undefined
  /** Writes one batch; reports its own failures (the writer goes on). */
  readonly write: (batch: ReadonlyArray<A>) => Effect.Effect<void>
  readonly onDropped?: ((count: number) => Effect.Effect<void>) | undefined
}): Effect.Effect<BatchWriter<A>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const wake = yield* Latch.make(false)
    const maxBuffered = options.maxBuffered ?? Infinity
    let buffer: Array<A> = []
    let dropped = 0
    /** Completes once the items now in `buffer` are written. */
    let next = Deferred.makeUnsafe<void>()
    /** The batch being written, if any. */
    let writing: Deferred.Deferred<void> | undefined

    const writeBatch = Effect.gen(function*() {
      const batch = buffer.splice(0, options.maxBatch)
      const done = buffer.length === 0 ? next : Deferred.makeUnsafe<void>()
      if (buffer.length === 0) next = Deferred.makeUnsafe<void>()
      writing = done
      yield* options.write(batch)
      writing = undefined
      yield* Deferred.succeed(done, undefined)
      if (buffer.length === 0 && dropped > 0 && options.onDropped !== undefined) {
        const count = dropped
        dropped = 0
        yield* options.onDropped(count)
      }
    })

    yield* Effect.gen(function*() {
      while (true) {
        yield* wake.await
        yield* wake.close
        while (buffer.length > 0) yield* writeBatch
      }
    }).pipe(Effect.forkScoped)
    // On close: whatever is still queued is written before the scope ends.
    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => (buffer.length > 0 ? writeBatch : Effect.void)).pipe(Effect.repeat({ while: () => buffer.length > 0 }))
    )

    return {
      add: (items) =>
        Effect.suspend(() => {
          const room = maxBuffered - buffer.length
          if (items.length > room) dropped += items.length - Math.max(room, 0)
          for (let i = 0; i < Math.min(items.length, room); i++) buffer.push(items[i]!)
          return wake.open
        }),
      flush: Effect.suspend(() => {
        if (buffer.length > 0) return Deferred.await(next)
        return writing === undefined ? Effect.void : Deferred.await(writing)
      })
    }
  })
