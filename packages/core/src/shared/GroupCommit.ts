/**
 * Group commit: callers hand in one item each and wait; a writer takes
 * whatever is waiting when it is free (up to `max`) and settles it in one go,
 * so a busy host pays one transaction per batch instead of one per item,
 * while a quiet host settles each item at once. Several writers overlap
 * their round trips; batches then run side by side.
 *
 * Urgent items (a reply inside a conversation, beside a broadcast's bulk) are
 * taken before any other, and `urgentWriters` more writers take only them: an
 * urgent item never waits behind a queue of bulk items, nor for a writer busy
 * with a bulk batch. At most `bulkWriters` writers settle bulk batches at once:
 * fewer, larger batches where items come steadily (a paced broadcast), since a
 * free writer would otherwise take each item nearly alone.
 */
import { Deferred, Effect, Exit, Queue, type Scope } from "effect"

export interface GroupCommitOptions<I, A, E> {
  /** The most items settled together. */
  readonly max: number
  /** Batches settled at once; default 1. */
  readonly writers?: number | undefined
  /** Writers kept for urgent items, beside `writers` (which take urgent items first too); default 0. */
  readonly urgentWriters?: number | undefined
  /** Of `writers`, how many may settle a bulk batch at once; default all. */
  readonly bulkWriters?: number | undefined
  /**
   * Settles a batch (two or more items): one exit per item, in order. When it
   * fails as a whole, each item is settled alone with `one`.
   */
  readonly many: (items: ReadonlyArray<I>) => Effect.Effect<ReadonlyArray<Exit.Exit<A, E>>, unknown>
  /** Settles one item alone. */
  readonly one: (item: I) => Effect.Effect<A, E>
}

type Entry<I, A, E> = readonly [I, Deferred.Deferred<A, E>]

/** The writers run while the scope lasts; the answer submits an item (`"urgent"` or not) and waits for its outcome. */
export const make = <I, A, E>(
  options: GroupCommitOptions<I, A, E>
): Effect.Effect<(item: I, priority?: "urgent") => Effect.Effect<A, E>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const urgent: Array<Entry<I, A, E>> = []
    const bulk: Array<Entry<I, A, E>> = []
    // Wake-ups: every writer waits on `anyReady`, the urgent writers on `urgentReady`. A writer that leaves items
    // behind wakes another; a wake-up that finds nothing left is dropped.
    const anyReady = yield* Queue.unbounded<void>()
    const urgentReady = yield* Queue.unbounded<void>()
    const settleOne = ([item, done]: Entry<I, A, E>) =>
      Effect.flatMap(Effect.exit(options.one(item)), (exit) => Deferred.done(done, exit))
    const settle = (batch: ReadonlyArray<Entry<I, A, E>>) =>
      Effect.gen(function*() {
        if (batch.length === 1) return yield* settleOne(batch[0]!)
        const exits = yield* Effect.exit(options.many(batch.map(([item]) => item)))
        if (Exit.isSuccess(exits)) {
          for (let i = 0; i < batch.length; i++) yield* Deferred.done(batch[i]![1], exits.value[i]!)
        } else {
          yield* Effect.forEach(batch, settleOne, { discard: true })
        }
      })
    const bulkWriters = options.bulkWriters ?? options.writers ?? 1
    let bulkBusy = 0
    const writer = (urgentOnly: boolean) => {
      const ready = urgentOnly ? urgentReady : anyReady
      // A writer finding only bulk items while `bulkWriters` settle some waits: the one that finishes takes them next.
      const takesBulk = () => !urgentOnly && bulk.length > 0 && bulkBusy < bulkWriters
      const waiting = () => urgent.length > 0 || takesBulk()
      return Effect.forever(Effect.gen(function*() {
        if (!waiting()) {
          yield* Queue.take(ready)
          yield* Queue.clear(ready)
        }
        if (urgent.length > 0) {
          const batch = urgent.splice(0, options.max)
          if (waiting()) yield* Queue.offer(ready, undefined)
          return yield* settle(batch)
        }
        if (!takesBulk()) return
        const batch = bulk.splice(0, options.max)
        bulkBusy++
        if (waiting()) yield* Queue.offer(ready, undefined)
        yield* Effect.ensuring(settle(batch), Effect.sync(() => bulkBusy--))
      }))
    }
    for (let i = 0; i < (options.writers ?? 1); i++) yield* Effect.forkScoped(writer(false))
    for (let i = 0; i < (options.urgentWriters ?? 0); i++) yield* Effect.forkScoped(writer(true))
    return (item: I, priority?: "urgent") =>
      Effect.gen(function*() {
        const done = yield* Deferred.make<A, E>()
        if (priority === "urgent") {
          urgent.push([item, done])
          yield* Queue.offer(urgentReady, undefined)
        } else {
          bulk.push([item, done])
        }
        yield* Queue.offer(anyReady, undefined)
        return yield* Deferred.await(done)
      })
  })
