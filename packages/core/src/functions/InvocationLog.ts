/**
 * The write side of the invocation log: records are handed over after each
 * invocation and written in batches by one background fiber, so an invoke
 * answers without waiting for its record's commit, and under load many
 * records share one statement. Reads in this process call `flush` first, so
 * they always see what this process ran; other hosts see a record a few
 * milliseconds later. Records still buffered when the layer closes are
 * written before it finishes; a crash loses at most the last batch.
 */
import { Context, Effect, Layer } from "effect"
import * as BatchWriter from "../shared/BatchWriter.ts"
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
      const writer = yield* BatchWriter.make<FunctionInvocationRecord>({
        maxBatch: MAX_BATCH,
        write: (batch) =>
          repo.insertMany(batch).pipe(
            Effect.catchCause((cause) =>
              Effect.logError("Could not write function invocation records", cause).pipe(
                Effect.annotateLogs({ records: batch.length })
              )
            )
          )
      })
      return FunctionInvocationLog.of({ record: (invocation) => writer.add([invocation]), flush: writer.flush })
    })
  )
}
