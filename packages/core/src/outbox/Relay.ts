/**
 * The domain-event relay: the one taker of the outbox, fanning each entry out
 * to every consumer of its type.
 *
 * The outbox's `take` hands an entry to one taker only, yet several
 * capabilities react to the same types (webhook deliveries; the execution
 * engine's triggers). So consumers do not take: they subscribe
 * (`DomainEventSubscribers.subscribe(name, types, handler)`), and the relay
 * takes the entries of every subscribed type inside a transaction, enqueues
 * one `JobQueue` job per (batch taken, subscriber) carrying that
 * subscriber's entries of the batch, on its own queue (`outbox.<name>`,
 * dedupe key `<name>:<hash of the entry ids>`), and commits. A failed
 * enqueue rolls the take back and the entries return; a commit that fails
 * after the enqueue returns them too, and the dedupe key drops the repeat
 * while the first job is queued or running (handlers are idempotent for the
 * rest). Each subscriber's jobs then run and retry on their own: a job runs
 * the handler for each of its entries, and a failed one retries them all.
 * Entries a subscriber does not want (its `DomainEventInterest`: no webhook
 * listens, say) are taken without a job for it; entries nobody wants are not
 * even written.
 *
 * The relay polls (`OutboxRelaySettings.pollIntervalMs`, 250 ms by default)
 * and, when this process appends an entry (`layerSignalingOutbox`), looks
 * `lingerMs` later (20 ms), so appends made meanwhile share its take. A job
 * holds at most `RELAY_JOB_MAX_BYTES` of entries. Hosts sharing a database each run a relay;
 * `SKIP LOCKED` keeps their takes apart.
 */
import { Cause, Context, Effect, Exit, Latch, Layer, Schema, type Scope, Semaphore } from "effect"
import { createHash } from "node:crypto"
import { decodingPayload, JobQueue } from "../ports/JobQueue.ts"
import { DomainEvent, Outbox } from "../ports/Outbox.ts"
import { Transactor } from "../ports/Transactor.ts"
import { DomainEventInterest } from "./Interest.ts"

export interface OutboxRelaySettings {
  /** How often the relay looks for entries when nothing woke it. */
  readonly pollIntervalMs: number
  /** Entries taken per transaction. */
  readonly batchSize: number
  /**
   * How long the relay lets appends gather after one woke it, so a busy host
   * relays them in one take (and one job per subscriber) rather than one by one.
   */
  readonly lingerMs: number
  /** Retries of a subscriber's job after its first attempt (a second per retry, doubling). */
  readonly handlerRetryLimit: number
  /** Jobs of a batch being enqueued at the same time; default all (a job queue may write them together). */
  readonly enqueueConcurrency?: number | undefined
}

export const OutboxRelaySettings = Context.Reference<OutboxRelaySettings>("@parley/core/outbox/OutboxRelaySettings", {
  defaultValue: () => ({ pollIntervalMs: 250, batchSize: 500, lingerMs: 20, handlerRetryLimit: 5 })
})

/** An append made in this process, so the relay need not wait for its next poll. */
export class OutboxSignal extends Context.Service<OutboxSignal, {
  readonly appended: Effect.Effect<void>
  /** Forgets earlier signals; `await` then waits for the next one. */
  readonly reset: Effect.Effect<void>
  readonly await: Effect.Effect<void>
}>()("@parley/core/outbox/OutboxSignal") {
  static readonly layer = Layer.effect(
    OutboxSignal,
    Effect.map(Latch.make(false), (latch) =>
      OutboxSignal.of({ appended: Effect.asVoid(latch.open), reset: Effect.asVoid(latch.close), await: latch.await }))
  )
}

/**
 * The `Outbox` in context, writing only entries somebody would act on
 * (`DomainEventInterest`, also provided) and signalling every append to the
 * relay of this process (with the `OutboxSignal`, also provided).
 * Capabilities get it through `Parley.layerServices`.
 */
export const layerSignalingOutbox = Layer.effect(
  Outbox,
  Effect.gen(function*() {
    const outbox = yield* Outbox
    const signal = yield* OutboxSignal
    const interest = yield* DomainEventInterest
    const appendMany = (events: ReadonlyArray<DomainEvent>) =>
      Effect.flatMap(Effect.filter(events, interest.worthWriting), (kept) =>
        kept.length === 0 ? Effect.void : Effect.tap(outbox.appendMany(kept), () => signal.appended))
    return Outbox.of({
      ...outbox,
      append: (event) => appendMany([event]),
      appendMany
    })
  })
).pipe(Layer.provideMerge(Layer.mergeAll(OutboxSignal.layer, DomainEventInterest.layer)))

export interface DomainEventSubscription {
  readonly name: string
  readonly types: ReadonlyArray<string>
  /** The job queue its entries are enqueued on. */
  readonly queue: string
}

export interface SubscribeOptions {
  /** Entries this subscriber handles at most at a time in this process; default 8. */
  readonly concurrency?: number | undefined
}

/**
 * Handles one entry. `attempt` is 1 the first time the entry's job runs and
 * more when the job is retried: the entry may have been handled already.
 */
export type DomainEventHandler = (event: DomainEvent, attempt: number) => Effect.Effect<void, unknown>

/** Jobs (batches of entries) of one subscriber taken at once by a process: the next ones wait in the queue. */
const BATCHES_AT_ONCE = 8

/** The queue of a subscriber's jobs. */
export const subscriberQueue = (name: string) => `outbox.${name}`
/** A subscriber job's payload: a batch, or one entry (a job queued by a host from before batches). */
export const RelayJob = Schema.Union([Schema.Array(DomainEvent), DomainEvent])

const validName = /^[a-z0-9][a-z0-9_-]*$/

/** The consumers of domain events; the relay serves the types they subscribed to. */
export class DomainEventSubscribers extends Context.Service<DomainEventSubscribers, {
  /**
   * Registers `handler` for entries of `types` and works its queue until the
   * scope closes. A handler failure is retried by the job queue; handlers
   * must tolerate seeing an entry again. Subscribe before the relay starts
   * (see `Parley.layerWorkers`): entries taken earlier were not meant for you.
   */
  readonly subscribe: (
    name: string,
    types: ReadonlyArray<string>,
    handler: DomainEventHandler,
    options?: SubscribeOptions
  ) => Effect.Effect<void, never, Scope.Scope>
  readonly subscriptions: Effect.Effect<ReadonlyArray<DomainEventSubscription>>
}>()("@parley/core/outbox/DomainEventSubscribers") {
  static readonly layer = Layer.effect(
    DomainEventSubscribers,
    Effect.gen(function*() {
      const jobs = yield* JobQueue
      const interest = yield* DomainEventInterest
      const subscriptions = new Map<string, DomainEventSubscription>()

      const subscribe = Effect.fn("DomainEventSubscribers.subscribe")(function*(
        name: string,
        types: ReadonlyArray<string>,
        handler: DomainEventHandler,
        options?: SubscribeOptions
      ) {
        if (!validName.test(name)) return yield* Effect.die(new Error(`invalid subscriber name ${JSON.stringify(name)}`))
        if (subscriptions.has(name)) return yield* Effect.die(new Error(`subscriber ${name} is already registered`))
        // Entries of a declared type that no declaration wants are never written: this one must say what it wants.
        const undeclared = types.filter((type) => {
          const declarers = interest.declarers(type)
          return declarers.length > 0 && !declarers.includes(name)
        })
        if (undeclared.length > 0) {
          return yield* Effect.die(
            new Error(`subscriber ${name} must declare its DomainEventInterest in ${undeclared.join(", ")}, as others did`)
          )
        }
        const queue = subscriberQueue(name)
        const handling = yield* Semaphore.make(options?.concurrency ?? 8)
        const handle = handling.withPermits(1)
        yield* jobs.work(queue, { concurrency: BATCHES_AT_ONCE }, decodingPayload(RelayJob, (payload, job) =>
          // A batch, or one entry: a job queued by a host from before batches.
          Array.isArray(payload)
            ? Effect.gen(function*() {
              // Every entry gets its turn; one failure fails the job after the others ran, and the retry runs all.
              const exits = yield* Effect.forEach(
                payload as ReadonlyArray<DomainEvent>,
                (entry) => Effect.exit(handle(handler(entry, job.attempt))),
                { concurrency: "unbounded" }
              )
              const failed = exits.find(Exit.isFailure)
              if (failed !== undefined) return yield* Effect.failCause(failed.cause)
            })
            : handle(handler(payload as DomainEvent, job.attempt))))
        subscriptions.set(name, { name, types: [...new Set(types)], queue })
        yield* Effect.addFinalizer(() => Effect.sync(() => subscriptions.delete(name)))
      })

      return DomainEventSubscribers.of({
        subscribe,
        subscriptions: Effect.sync(() => [...subscriptions.values()])
      })
    })
  )
}

/** A job carries at most this much serialized entries (more than one entry only when they fit together). */
export const RELAY_JOB_MAX_BYTES = 1024 * 1024

/** Entries in order, cut into runs of at most `RELAY_JOB_MAX_BYTES` serialized (a larger entry goes alone). */
const bySize = (entries: ReadonlyArray<DomainEvent>): ReadonlyArray<ReadonlyArray<DomainEvent>> => {
  const runs: Array<Array<DomainEvent>> = []
  let bytes = 0
  for (const entry of entries) {
    const size = JSON.stringify(entry.payload)?.length ?? 0
    const run = runs[runs.length - 1]
    if (run === undefined || bytes + size > RELAY_JOB_MAX_BYTES) {
      runs.push([entry])
      bytes = size
    } else {
      run.push(entry)
      bytes += size
    }
  }
  return runs
}

/** The dedupe key of a batch's job for one subscriber: a relay that takes the same entries again adds no second job. */
export const relayDedupeKey = (subscriber: string, entries: ReadonlyArray<DomainEvent>) =>
  `${subscriber}:${createHash("sha256").update(entries.map((entry) => entry.id).join("\n")).digest("hex")}`

/**
 * Relays the outbox for as long as the layer lives. Provide the subscribers'
 * layers to it (`Layer.provide`), so they have subscribed before it takes.
 */
export const layerOutboxRelay = Layer.effectDiscard(Effect.gen(function*() {
  const outbox = yield* Outbox
  const tx = yield* Transactor
  const jobs = yield* JobQueue
  const subscribers = yield* DomainEventSubscribers
  const signal = yield* OutboxSignal
  const settings = yield* OutboxRelaySettings
  const interest = yield* DomainEventInterest

  /** One transaction: take a batch, enqueue its jobs, commit; answers how many entries it took. */
  const relayBatch = Effect.gen(function*() {
    const subscriptions = yield* subscribers.subscriptions
    const types = [...new Set(subscriptions.flatMap((s) => s.types))]
    if (types.length === 0) return 0
    return yield* tx.withTransaction(Effect.gen(function*() {
      const entries = yield* outbox.take(types, settings.batchSize)
      // One job per subscriber for the whole batch: a job per entry cost each entry a queue row to insert,
      // fetch and complete. Enqueued side by side.
      const wanted = yield* Effect.forEach(subscriptions, (subscription) =>
        Effect.filter(
          entries.filter((entry) => subscription.types.includes(entry.type)),
          (entry) => interest.wants(subscription.name, entry)
        ))
      const enqueues = subscriptions.flatMap((subscription, i) =>
        bySize(wanted[i]!).map((mine) =>
          jobs.enqueue(subscription.queue, mine, {
            dedupeKey: relayDedupeKey(subscription.name, mine),
            retryLimit: settings.handlerRetryLimit,
            retryDelayMs: 1000
          })
        )
      )
      yield* Effect.all(enqueues, { concurrency: settings.enqueueConcurrency ?? "unbounded", discard: true })
      return entries.length
    }))
  }).pipe(
    Effect.withSpan("OutboxRelay.batch"),
    Effect.catchCause((cause) =>
      Cause.hasInterruptsOnly(cause)
        ? Effect.failCause(cause)
        : Effect.as(Effect.logError("Outbox relay: a batch failed; its entries stay in the outbox", cause), 0)
    )
  )

  // An append signals before its transaction commits, so a take right after it may find nothing yet:
  // after a signal the relay looks again a few times shortly, then settles back into polling.
  const quickLooksMs = [5, 25, 100]
  const wait = (ms: number) =>
    Effect.raceFirst(Effect.as(signal.await, true), Effect.as(Effect.sleep(ms), false))

  yield* Effect.gen(function*() {
    let quickLooks = 0
    while (true) {
      // Reset before taking: an append made while we take opens it again, and the wait below returns at once.
      yield* signal.reset
      const taken = yield* relayBatch
      if (taken >= settings.batchSize) continue
      if (taken > 0) quickLooks = 0
      const delayMs = quickLooks > 0 ? quickLooksMs[quickLooksMs.length - quickLooks--]! : settings.pollIntervalMs
      if (yield* wait(delayMs)) {
        quickLooks = quickLooksMs.length
        if (settings.lingerMs > 0) yield* Effect.sleep(settings.lingerMs)
      }
    }
  }).pipe(Effect.forkScoped)
}))
