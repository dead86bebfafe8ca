/**
 * The write side of the invocation log: records are handed over after each
 * invocation and written in batches by one background fiber, so an invoke
 * answers without waiting for its record's commit, and under load many
 * records share one statement. Reads in this process call `flush` first, so
 * they always see what this process ran; other hosts see a record a few
 * milliseconds later. Records still buffered when the layer closes are
 * written before it finishes; a crash loses at most the last batch.
 */
import { Context, Deferred, Effect, Latch, Layer } from "effect"
import type { FunctionInvocationRecord } from "./Function.ts"
import { FunctionInvocationsRepo } from "./FunctionsRepo.ts"

/** Records written by one statement at most. */
const MAX_BATCH = 500

export class FunctionInvocationLog extends Context.Service<FunctionInvocationLog, {
  /** Queues the record; never fails or waits for storage. */
  readonly record: (invocation: FunctionInvocationRecord) => Effect.Effect<void>
  /** Waits until every record queued before the call is written (or its write failed and was logged). */
  readonly flush: Effect.Effect<void>
}>()("@parley/core/functions/FunctionInvocationLog") {
  static readonly layer = Layer.effect(
    FunctionInvocationLog,
    Effect.gen(function*() {
      const repo = yield* FunctionInvocationsRepo
      const wake = yield* Latch.make(false)
      let buffer: Array<FunctionInvocationRecord> = []
      /** Completes once the records now in `buffer` are written. */
      let next = Deferred.makeUnsafe<void>()
      /** The batch being written, if any. */
      let writing: Deferred.Deferred<void> | undefined

      const writeBatch = Effect.gen(function*() {
        const batch = buffer.splice(0, MAX_BATCH)
        const done = buffer.length === 0 ? next : Deferred.makeUnsafe<void>()
        if (buffer.length === 0) next = Deferred.makeUnsafe<void>()
        writing = done
        yield* repo.insertMany(batch).pipe(
          Effect.catchCause((cause) =>
            Effect.logError("Could not write function invocation records", cause).pipe(
              Effect.annotateLogs({ records: batch.length })
            )
          )
        )
        writing = undefined
        yield* Deferred.succeed(done, undefined)
      })

      const writer = Effect.gen(function*() {
        while (true) {
          yield* wake.await
          yield* wake.close
          while (buffer.length > 0) yield* writeBatch
        }
      })
      yield* writer.pipe(Effect.forkScoped)
      // On close: whatever is still buffered is written before the layer's scope ends.
      yield* Effect.addFinalizer(() => Effect.suspend(() => (buffer.length > 0 ? writeBatch : Effect.void)).pipe(Effect.repeat({ while: () => buffer.length > 0 })))

      const flush = Effect.suspend(() => {
        if (buffer.length > 0) return Deferred.await(next)
        return writing === undefined ? Effect.void : Deferred.await(writing)
      })

      return FunctionInvocationLog.of({
        record: (invocation) =>
          Effect.suspend(() => {
            buffer.push(invocation)
            return wake.open
          }),
        flush
      })
    })
  )
}
