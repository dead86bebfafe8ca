/**
 * Group commit: callers hand in one item each and wait; a writer takes
 * whatever is waiting when it is free (up to `max`) and settles it in one go,
 * so a busy host pays one transaction per batch instead of one per item,
 * while a quiet host settles each item at once. Several writers overlap
 * their round trips; batches then run side by side.
 */
import { Deferred, Effect, Exit, Queue, type Scope } from "effect"

export interface GroupCommitOptions<I, A, E> {
  /** The most items settled together. */
  readonly max: number
  /** Batches settled at once; default 1. */
  readonly writers?: number | undefined
  /**
   * Settles a batch (two or more items): one exit per item, in order. When it
   * fails as a whole, each item is settled alone with `one`.
   */
  readonly many: (items: ReadonlyArray<I>) => Effect.Effect<ReadonlyArray<Exit.Exit<A, E>>, unknown>
  /** Settles one item alone. */
  readonly one: (item: I) => Effect.Effect<A, E>
}

/** The writers run while the scope lasts; the answer submits an item and waits for its outcome. */
export const make = <I, A, E>(
  options: GroupCommitOptions<I, A, E>
): Effect.Effect<(item: I) => Effect.Effect<A, E>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const waiting = yield* Queue.unbounded<readonly [I, Deferred.Deferred<A, E>]>()
    const settleOne = ([item, done]: readonly [I, Deferred.Deferred<A, E>]) =>
      Effect.flatMap(Effect.exit(options.one(item)), (exit) => Deferred.done(done, exit))
    const writer = Effect.forever(Effect.gen(function*() {
      const batch = yield* Queue.takeBetween(waiting, 1, options.max)
      if (batch.length === 1) return yield* settleOne(batch[0]!)
      const exits = yield* Effect.exit(options.many(batch.map(([item]) => item)))
      if (Exit.isSuccess(exits)) {
        for (let i = 0; i < batch.length; i++) yield* Deferred.done(batch[i]![1], exits.value[i]!)
      } else {
        yield* Effect.forEach(batch, settleOne, { discard: true })
      }
    }))
    for (let i = 0; i < (options.writers ?? 1); i++) yield* Effect.forkScoped(writer)
    return (item: I) =>
      Effect.gen(function*() {
        const done = yield* Deferred.make<A, E>()
        yield* Queue.offer(waiting, [item, done] as const)
        return yield* Deferred.await(done)
      })
  })
