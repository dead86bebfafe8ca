/**
 * `BatchWriter`: batches written at once up to its concurrency, a flush that waits for every batch holding what was
 * queued before it whatever order they end in, and drops that are counted when they happen and reported while the
 * writer stays behind, not only once it caught up.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect } from "effect"
import { TestClock } from "effect/testing"
import * as BatchWriter from "../src/shared/BatchWriter.ts"

const settle = Effect.yieldNow.pipe(Effect.repeat({ times: 50 }))

/** A write per batch that waits until the test releases it (by the batch's first item). */
const gatedWrites = () => {
  const started: Array<ReadonlyArray<number>> = []
  const written: Array<number> = []
  const gates = new Map<number, Deferred.Deferred<void>>()
  const write = (batch: ReadonlyArray<number>) =>
    Effect.gen(function*() {
      const gate = Deferred.makeUnsafe<void>()
      gates.set(batch[0]!, gate)
      started.push(batch)
      yield* Deferred.await(gate)
      written.push(...batch)
    })
  const release = (first: number) => Deferred.succeed(gates.get(first)!, undefined)
  return { started, written, write, release }
}

describe("BatchWriter", () => {
  it.effect("writes up to `concurrency` batches at once, and a flush waits for all of them whatever order they end in", () =>
    Effect.gen(function*() {
      const w = gatedWrites()
      const writer = yield* BatchWriter.make<number>({ maxBatch: 2, concurrency: 2, write: w.write })
      yield* writer.add([1, 2, 3, 4, 5])
      yield* settle
      // Two batches in flight; the fifth item waits for a writer.
      assert.deepStrictEqual(w.started, [[1, 2], [3, 4]])
      const flushed = yield* Effect.forkChild(writer.flush)
      // The second batch ends first: the flush still waits for the first (and for the fifth item).
      yield* w.release(3)
      yield* settle
      assert.deepStrictEqual(w.started, [[1, 2], [3, 4], [5]])
      assert.isUndefined(flushed.pollUnsafe())
      yield* w.release(5)
      yield* settle
      assert.isUndefined(flushed.pollUnsafe())
      yield* w.release(1)
      yield* settle
      assert.isDefined(flushed.pollUnsafe())
      assert.sameMembers(w.written, [1, 2, 3, 4, 5])
      // Nothing queued, nothing in flight: a flush returns at once.
      yield* writer.flush
    }).pipe(Effect.scoped))

  it.effect("counts each drop as it happens and reports drops every REPORT_EVERY while the queue stays full", () =>
    Effect.gen(function*() {
      const w = gatedWrites()
      const counted: Array<number> = []
      const reported: Array<number> = []
      const writer = yield* BatchWriter.make<number>({
        maxBatch: 2,
        maxBuffered: 4,
        write: w.write,
        countDropped: (n) => Effect.sync(() => counted.push(n)),
        onDropped: (n) => Effect.sync(() => reported.push(n))
      })
      yield* writer.add([1, 2])
      yield* settle
      assert.deepStrictEqual(w.started, [[1, 2]])
      // Four wait; three more are dropped and counted at once.
      yield* writer.add([3, 4, 5, 6, 7, 8, 9])
      assert.deepStrictEqual(counted, [3])
      assert.deepStrictEqual(reported, [])
      // The first batch ends with the queue still full: the first drops are reported then.
      yield* w.release(1)
      yield* settle
      assert.deepStrictEqual(reported, [3])
      yield* writer.add([10, 11, 12])
      assert.deepStrictEqual(counted, [3, 1])
      // The next batch ends within REPORT_EVERY of that report, the queue not drained: not reported yet.
      yield* w.release(3)
      yield* settle
      assert.deepStrictEqual(reported, [3])
      yield* writer.add([13, 14, 15])
      assert.deepStrictEqual(counted, [3, 1, 1])
      // Past REPORT_EVERY, the next batch's end reports what was dropped since.
      yield* TestClock.adjust(BatchWriter.REPORT_EVERY)
      yield* w.release(5)
      yield* settle
      assert.deepStrictEqual(reported, [3, 2])
      // Once it drains, nothing new dropped: nothing more to report.
      yield* w.release(10)
      yield* settle
      yield* w.release(13)
      yield* settle
      assert.deepStrictEqual(reported, [3, 2])
      assert.deepStrictEqual(w.written, [1, 2, 3, 4, 5, 6, 10, 11, 13, 14])
    }).pipe(Effect.scoped))

  it.effect("writes what is queued when its scope closes, and lets a batch in flight end", () =>
    Effect.gen(function*() {
      const written: Array<number> = []
      yield* Effect.gen(function*() {
        const writer = yield* BatchWriter.make<number>({
          maxBatch: 2,
          linger: "1 hour",
          write: (batch) => Effect.sync(() => written.push(...batch))
        })
        yield* writer.add([1, 2, 3])
      }).pipe(Effect.scoped)
      assert.deepStrictEqual(written, [1, 2, 3])
    }))
})
