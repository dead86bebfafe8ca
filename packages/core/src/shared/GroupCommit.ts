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
 *
 * On a quiet group (the last batch was a lone item, nothing is waiting or being
 * settled) an item is settled at once by its caller's fiber, in the writers'
 * context and uninterruptibly, as a writer would settle it: a lone item (a proxied
 * send one at a time) pays no hand-off to a writer and back (two wake-ups). It
 * holds a writer's place meanwhile, so no more batches run at once than there are
 * writers. Where items come together the hand-off stays: its wait is what gathers
 * them into one batch (settling the first of a burst at once split bursts in two
 * and raised a proxied send's writes to PostgreSQL at 16 connections by half).
 */
import { type Context, Deferred, Effect, Exit, Queue, type Scope } from "effect"

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
    // What the writers run in (not a caller's: its transaction, if any, is not the batch's).
    const context = yield* Effect.context<never>()
    const urgent: Array<Entry<I, A, E>> = []
    const bulk: Array<Entry<I, A, E>> = []
    // Wake-ups: every writer waits on `anyReady`, the urgent writers on `urgentReady`. A writer that leaves items
    // behind wakes another; a wake-up that finds nothing left is dropped.
    const anyReady = yield* Queue.unbounded<void>()
    const urgentReady = yield* Queue.unbounded<void>()
    const settleOne = ([item, done]: Entry<I, A, E>) =>
      Effect.flatMap(Effect.exit(options.one(item)), (exit) => Deferred.done(done, exit))
    // The last batch was a lone item and nothing came meanwhile: items come one at a time, a caller may settle its own.
    let quiet = true
    const settle = (batch: ReadonlyArray<Entry<I, A, E>>) =>
      Effect.ensuring(settleBatch(batch), Effect.sync(() => quiet = batch.length === 1 && urgent.length === 0 && bulk.length === 0))
    const settleBatch = (batch: ReadonlyArray<Entry<I, A, E>>) =>
      Effect.gen(function*() {
        if (batch.length === 1) return yield* settleOne(batch[0]!)
        const exits = yield* Effect.exit(options.many(batch.map(([item]) => item)))
        if (Exit.isSuccess(exits)) {
          for (let i = 0; i < batch.length; i++) yield* Deferred.done(batch[i]![1], exits.value[i]!)
        } else {
          yield* Effect.forEach(batch, settleOne, { discard: true })
        }
      })
    const writers = options.writers ?? 1
    const bulkWriters = options.bulkWriters ?? writers
    let bulkBusy = 0
    // Batches the (not urgent-only) writers and callers settling their own item are settling: at most `writers`.
    let busy = 0
    const writer = (urgentOnly: boolean) => {
      const ready = urgentOnly ? urgentReady : anyReady
      // A writer finding only bulk items while `bulkWriters` settle some waits: the one that finishes takes them next.
      const takesBulk = () => !urgentOnly && bulk.length > 0 && bulkBusy < bulkWriters
      const waiting = () => urgent.length > 0 || takesBulk()
      // Callers settling their own items may hold every place: then a writer waits for one to finish.
      const full = () => !urgentOnly && busy >= writers
      const taking = <X>(effect: Effect.Effect<X>) =>
        urgentOnly ? effect : Effect.ensuring(Effect.andThen(Effect.sync(() => busy++), effect), Effect.sync(() => busy--))
      return Effect.forever(Effect.gen(function*() {
        if (!waiting() || full()) {
          yield* Queue.take(ready)
          yield* Queue.clear(ready)
        }
        if (full()) return
        if (urgent.length > 0) {
          const batch = urgent.splice(0, options.max)
          if (waiting()) yield* Queue.offer(ready, undefined)
          return yield* taking(settle(batch))
        }
        if (!takesBulk()) return
        const batch = bulk.splice(0, options.max)
        bulkBusy++
        if (waiting()) yield* Queue.offer(ready, undefined)
        yield* taking(Effect.ensuring(settle(batch), Effect.sync(() => bulkBusy--)))
      }))
    }
    /** The caller settles its item itself (nothing waits, a place is free); then wakes a writer if items came meanwhile. */
    const settleHere = (item: I, isBulk: boolean) =>
      Effect.uninterruptible(Effect.gen(function*() {
        busy++
        if (isBulk) bulkBusy++
        const exit = yield* Effect.exit(Effect.updateContext(options.one(item), (_: Context.Context<never>) => context))
        busy--
        if (isBulk) bulkBusy--
        quiet = urgent.length === 0 && bulk.length === 0
        if (!quiet) yield* Queue.offer(anyReady, undefined)
        return yield* exit
      }))
    for (let i = 0; i < writers; i++) yield* Effect.forkScoped(writer(false))
    for (let i = 0; i < (options.urgentWriters ?? 0); i++) yield* Effect.forkScoped(writer(true))
    return (item: I, priority?: "urgent") =>
      Effect.gen(function*() {
        const isBulk = priority !== "urgent"
        // Only on a quiet group with no batch being settled: where items come together, the hand-off's wait is what
        // gathers them into one batch (one transaction instead of one per item).
        if (quiet && busy === 0 && urgent.length === 0 && bulk.length === 0) {
          return yield* settleHere(item, isBulk)
        }
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
