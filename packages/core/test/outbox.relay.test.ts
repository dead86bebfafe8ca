/**
 * The domain-event relay on memory ports and the TestClock: fan-out to every
 * subscriber of a type, the wake-up on append and the polling, and what a
 * failed enqueue or a failed commit leaves behind.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Deferred, Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { DomainEventInterest } from "../src/outbox/Interest.ts"
import {
  DomainEventSubscribers,
  layerOutboxRelay,
  layerSignalingOutbox,
  OutboxSignal,
  subscriberQueue
} from "../src/outbox/Relay.ts"
import { JobQueue } from "../src/ports/JobQueue.ts"
import { type DomainEvent, Outbox } from "../src/ports/Outbox.ts"
import { Transactor } from "../src/ports/Transactor.ts"
import { Ids } from "../src/shared/Ids.ts"
import { layerMemoryJobQueue, layerMemoryStorage } from "../src/testing/index.ts"

const Ports = Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layerSequential)

const until = (what: string, check: () => boolean) =>
  Effect.gen(function*() {
    for (let i = 0; i < 5_000; i++) {
      if (check()) return
      yield* Effect.yieldNow
    }
    return yield* Effect.die(new Error(`still waiting for: ${what}`))
  })

const settle = Effect.yieldNow.pipe(Effect.repeat({ times: 500 }))

let n = 0
const entry = (type: string): DomainEvent => ({
  id: `dom-${++n}`,
  project_id: null,
  type,
  payload: { n },
  created_at: new Date(Date.UTC(2026, 2, 4) + n).toISOString()
})

/**
 * The ports, and the relay over them with two subscribers recording what they
 * get; `ports` may be decorated (a failing job queue, a failing commit).
 */
const start = (
  decorate: (ports: Context.Context<any>) => Context.Context<any> = (c) => c,
  options: { readonly held?: boolean; readonly failOnce?: string; readonly aWants?: (e: DomainEvent) => boolean } = {}
) =>
  Effect.gen(function*() {
    const ports = yield* Layer.build(Ports)
    const signaling = yield* Layer.build(layerSignalingOutbox.pipe(Layer.provide(Layer.succeedContext(ports))))
    const seen = { a: [] as Array<string>, b: [] as Array<string> }
    /** The job attempt each handler call was told, in `seen`'s order. */
    const attempts = { a: [] as Array<number>, b: [] as Array<number> }
    // Handlers wait here while `held`: their jobs stay running.
    const gate = yield* Deferred.make<void>()
    if (options.held !== true) yield* Deferred.succeed(gate, undefined)
    let failOnce = options.failOnce
    const record = (into: Array<string>, tries: Array<number>) => (e: DomainEvent, attempt: number) =>
      Deferred.await(gate).pipe(Effect.andThen(Effect.suspend(() => {
        into.push(e.id)
        tries.push(attempt)
        if (e.id !== failOnce) return Effect.void
        failOnce = undefined
        return Effect.fail("handler failed")
      })))
    const aWants = options.aWants
    if (aWants !== undefined) {
      const interest = Context.get(signaling, DomainEventInterest)
      yield* interest.declare("a", ["t.one", "t.two"], (e) => Effect.succeed(aWants(e)))
      yield* interest.declare("b", ["t.two"], () => Effect.succeed(true))
    }
    const subscribers = Layer.effectDiscard(Effect.gen(function*() {
      const registry = yield* DomainEventSubscribers
      yield* registry.subscribe("a", ["t.one", "t.two"], record(seen.a, attempts.a))
      yield* registry.subscribe("b", ["t.two"], record(seen.b, attempts.b))
    }))
    const env = Context.merge(decorate(ports), signaling)
    yield* Layer.build(
      layerOutboxRelay.pipe(
        Layer.provide(subscribers),
        Layer.provide(DomainEventSubscribers.layer),
        Layer.provide(Layer.succeedContext(env))
      )
    )
    return {
      seen,
      attempts,
      release: Deferred.succeed(gate, undefined),
      /** Appends without telling the relay: only its polling finds the entry. */
      raw: Context.get(ports, Outbox),
      signaled: Context.get(signaling, Outbox),
      tx: Context.get(ports, Transactor),
      jobs: Context.get(ports, JobQueue)
    }
  })

describe("outbox relay", () => {
  it.effect("fans each entry out to every subscriber of its type, once; other types stay in the outbox", () =>
    Effect.gen(function*() {
      const { raw, seen, signaled, tx } = yield* start()
      const one = entry("t.one")
      const two = entry("t.two")
      const other = entry("t.other")
      yield* tx.withTransaction(Effect.forEach([one, two, other], signaled.append))
      yield* until("both subscribers", () => seen.a.length === 2 && seen.b.length === 1)
      yield* TestClock.adjust(10_000)
      yield* settle
      assert.deepStrictEqual(seen, { a: [one.id, two.id], b: [two.id] })
      assert.deepStrictEqual(yield* raw.take(["t.one", "t.two", "t.other"], 10), [other])
    }).pipe(Effect.scoped))

  it.effect("hands a subscriber the batch in one job; a failed entry runs the job again for all of them", () =>
    Effect.gen(function*() {
      const batch = [entry("t.one"), entry("t.two"), entry("t.one")]
      const { attempts, seen, signaled, tx } = yield* start(undefined, { failOnce: batch[1]!.id })
      yield* tx.withTransaction(signaled.appendMany(batch))
      const ids = batch.map((e) => e.id)
      yield* until("the first run", () => seen.a.length === 3)
      assert.deepStrictEqual(seen.a, ids, "every entry had its turn despite the failure")
      yield* TestClock.adjust(1_000)
      yield* until("the retry", () => seen.a.length === 6)
      yield* TestClock.adjust(10_000)
      yield* settle
      assert.deepStrictEqual(seen, { a: [...ids, ...ids], b: [ids[1]!] })
      assert.deepStrictEqual(attempts, { a: [1, 1, 1, 2, 2, 2], b: [1] }, "the handler knows a retried job")
    }).pipe(Effect.scoped))

  it.effect("takes entries a subscriber does not want without a job for it", () =>
    Effect.gen(function*() {
      const wanted = entry("t.two")
      const unwanted = entry("t.two")
      const { raw, seen, signaled, tx } = yield* start(undefined, { aWants: (e) => e.id === wanted.id })
      yield* tx.withTransaction(signaled.appendMany([wanted, unwanted]))
      yield* until("both subscribers", () => seen.a.length === 1 && seen.b.length === 2)
      yield* TestClock.adjust(10_000)
      yield* settle
      assert.deepStrictEqual(seen, { a: [wanted.id], b: [wanted.id, unwanted.id] })
      assert.deepStrictEqual(yield* raw.take(["t.two"], 10), [], "taken all the same")
    }).pipe(Effect.scoped))

  it.effect("takes 20 ms after an append in this process (appends gather); otherwise at its next poll (250 ms)", () =>
    Effect.gen(function*() {
      const { raw, seen, signaled } = yield* start()
      yield* TestClock.adjust(1_000)
      yield* settle
      const polled = entry("t.one")
      yield* raw.append(polled)
      yield* settle
      assert.deepStrictEqual(seen.a, [], "nothing woke the relay")
      yield* TestClock.adjust(250)
      yield* until("the poll", () => seen.a.length === 1)
      const signaled1 = entry("t.one")
      yield* signaled.append(signaled1)
      yield* settle
      assert.strictEqual(seen.a.length, 1, "lingering")
      yield* TestClock.adjust(20)
      yield* until("the wake-up", () => seen.a.length === 2)
      assert.deepStrictEqual(seen.a, [polled.id, signaled1.id])
    }).pipe(Effect.scoped))

  it.effect("leaves the entries in the outbox when an enqueue fails, and relays them on the next look", () =>
    Effect.gen(function*() {
      let failures = 1
      const { release, seen, signaled } = yield* start((ports) => {
        const jobs = Context.get(ports, JobQueue)
        return Context.add(ports, JobQueue, JobQueue.of({
          ...jobs,
          enqueue: (queue, payload, options) =>
            queue === subscriberQueue("b") && failures-- > 0
              ? Effect.die(new Error("queue unavailable"))
              : jobs.enqueue(queue, payload, options)
        }))
      }, { held: true })
      const two = entry("t.two")
      yield* signaled.append(two)
      yield* settle
      // A's job was enqueued before B's failed: the rollback returns the entry, and while A's job
      // is queued or running the repeat adds no second one.
      yield* TestClock.adjust(250)
      yield* settle
      yield* release
      yield* until("B", () => seen.b.length === 1)
      yield* TestClock.adjust(10_000)
      yield* settle
      assert.deepStrictEqual(seen, { a: [two.id], b: [two.id] })
    }).pipe(Effect.scoped))

  it.effect("adds no second job when a commit fails after the enqueue", () =>
    Effect.gen(function*() {
      let failedCommits = 0
      const { release, seen, signaled } = yield* start((ports) => {
        const tx = Context.get(ports, Transactor)
        return Context.add(ports, Transactor, Transactor.of({
          withTransaction: (effect) =>
            tx.withTransaction(Effect.tap(effect, () =>
              failedCommits++ === 0 ? Effect.die(new Error("commit failed")) : Effect.void
            ))
        }))
      }, { held: true })
      // Held: the first jobs are still running when the entries come back.
      yield* signaled.append(entry("t.two"))
      yield* settle
      yield* TestClock.adjust(250)
      yield* until("the relay's second take", () => failedCommits >= 2)
      yield* settle
      yield* release
      yield* until("both subscribers", () => seen.a.length === 1 && seen.b.length === 1)
      yield* TestClock.adjust(10_000)
      yield* settle
      assert.strictEqual(seen.a.length, 1)
      assert.strictEqual(seen.b.length, 1)
    }).pipe(Effect.scoped))

  it.effect("refuses a second subscriber with the same name", () =>
    Effect.gen(function*() {
      const registry = yield* DomainEventSubscribers
      yield* registry.subscribe("twice", ["t.one"], () => Effect.void)
      const exit = yield* Effect.exit(registry.subscribe("twice", ["t.one"], () => Effect.void))
      assert.isTrue(exit._tag === "Failure")
      assert.deepStrictEqual((yield* registry.subscriptions).map((s) => [s.name, s.queue]), [["twice", "outbox.twice"]])
    }).pipe(
      Effect.scoped,
      Effect.provide(DomainEventSubscribers.layer.pipe(Layer.provide(Layer.merge(layerMemoryJobQueue, DomainEventInterest.layer))))
    ))

  it.effect("refuses a subscriber of a type others declared an interest in, unless it declares one too", () =>
    Effect.gen(function*() {
      const registry = yield* DomainEventSubscribers
      const interest = yield* DomainEventInterest
      yield* interest.declare("webhooks", ["t.one"], () => Effect.succeed(false))
      const exit = yield* Effect.exit(registry.subscribe("triggers", ["t.one", "t.two"], () => Effect.void))
      assert.isTrue(exit._tag === "Failure" && String(exit.cause).includes("must declare its DomainEventInterest in t.one"))
      yield* interest.declare("triggers", ["t.one"], () => Effect.succeed(true))
      yield* registry.subscribe("triggers", ["t.one", "t.two"], () => Effect.void)
      assert.deepStrictEqual((yield* registry.subscriptions).map((s) => s.name), ["triggers"])
    }).pipe(
      Effect.scoped,
      Effect.provide(DomainEventSubscribers.layer.pipe(
        Layer.provideMerge(Layer.merge(layerMemoryJobQueue, DomainEventInterest.layer))
      ))
    ))

  it.effect("writes no entry of a declared type that no declaration wants; undeclared types are always written", () =>
    Effect.gen(function*() {
      const ports = yield* Layer.build(Ports)
      const signaling = yield* Layer.build(layerSignalingOutbox.pipe(Layer.provide(Layer.succeedContext(ports))))
      const interest = Context.get(signaling, DomainEventInterest)
      yield* interest.declare("a", ["t.one", "t.two"], (e) => Effect.succeed((e.payload as { n: number }).n % 2 === 0))
      yield* interest.declare("b", ["t.two"], () => Effect.succeed(true))
      const entries = [entry("t.one"), entry("t.one"), entry("t.two"), entry("t.other")]
      const evenOne = entries.find((e) => e.type === "t.one" && (e.payload as { n: number }).n % 2 === 0)!
      yield* Context.get(signaling, Outbox).appendMany(entries)
      const written = yield* Context.get(ports, Outbox).take(["t.one", "t.two", "t.other"], 10)
      assert.deepStrictEqual(written.map((e) => e.id), [evenOne.id, entries[2]!.id, entries[3]!.id])
      assert.isTrue(yield* interest.wants("b", entries[0]!), "a subscriber answers only for its declared types")
      assert.isFalse(yield* interest.wants("a", entries.find((e) => e !== evenOne && e.type === "t.one")!))
    }).pipe(Effect.scoped))

  it.effect("may want an entry not built yet unless every declaration of its type rules its number out", () =>
    Effect.gen(function*() {
      const interest = yield* DomainEventInterest
      const scope = { projectId: "p1", phoneNumberId: "100" }
      assert.isTrue(yield* interest.mayWant("t.one", scope), "an undeclared type is always written")
      const asked: Array<string> = []
      yield* interest.declare("a", ["t.one", "t.two"], () => Effect.succeed(true), (type, at) =>
        Effect.sync(() => {
          asked.push(`${type}@${at.phoneNumberId}`)
          return at.phoneNumberId === "200"
        }))
      assert.isFalse(yield* interest.mayWant("t.one", scope))
      assert.isTrue(yield* interest.mayWant("t.one", { ...scope, phoneNumberId: "200" }))
      // A declaration without a scope answer may want anything of its types.
      yield* interest.declare("b", ["t.two"], () => Effect.succeed(false))
      assert.isTrue(yield* interest.mayWant("t.two", scope))
      assert.isFalse(yield* interest.mayWant("t.one", scope))
      assert.deepStrictEqual(asked, ["t.one@100", "t.one@200", "t.two@100", "t.one@100"])
    }).pipe(Effect.provide(DomainEventInterest.layer)))

  it.effect("hands every entry of a batch to its subscriber, and a job of one entry (queued before batches) too", () =>
    Effect.gen(function*() {
      const { seen, signaled, tx, jobs } = yield* start()
      const batch = [entry("t.one"), entry("t.two"), entry("t.one")]
      yield* tx.withTransaction(Effect.forEach(batch, signaled.append))
      yield* until("the batch", () => seen.a.length === 3 && seen.b.length === 1)
      const alone = entry("t.one")
      yield* jobs.enqueue(subscriberQueue("a"), alone)
      yield* until("the single entry", () => seen.a.length === 4)
      assert.deepStrictEqual([...seen.a].sort(), [...batch, alone].map((e) => e.id).sort())
      assert.deepStrictEqual(seen.b, [batch[1]!.id])
    }).pipe(Effect.scoped))

  it.effect("signals appends made through the signaling outbox", () =>
    Effect.gen(function*() {
      const signal = yield* OutboxSignal
      yield* signal.reset
      yield* (yield* Outbox).append(entry("t.one"))
      yield* signal.await
    }).pipe(Effect.provide(layerSignalingOutbox.pipe(Layer.provideMerge(Ports)))))
})
