/**
 * The behaviour every `JobQueue` adapter owes its callers, written once. The
 * memory adapter runs it on the `TestClock`; the Postgres adapter runs it on
 * real time. The assertions are the same for both, so they only ask what
 * holds on either clock: "not before" is checked a safe margin early, "soon
 * after" is awaited with `eventually`, which moves time in small steps.
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Deferred, Effect, Exit, Fiber, type Layer, Scope } from "effect"
import { type Job, JobQueue } from "../../ports/JobQueue.ts"

export interface JobQueueConformanceOptions<E> {
  /** Builds a fresh `JobQueue`; each test gets its own instance. */
  readonly layer: Layer.Layer<JobQueue, E>
  /** Moves time forward by `ms`: `TestClock.adjust` on the memory adapter, a real sleep on a database. */
  readonly advance: (ms: number) => Effect.Effect<void>
  /** Run on live services (real clock) rather than the test services. */
  readonly live: boolean
  /** Per-test timeout in milliseconds (vitest's). */
  readonly timeout?: number | undefined
}

const step = 25

export const jobQueueConformance = <E>(name: string, options: JobQueueConformanceOptions<E>): void => {
  const { advance } = options
  let queues = 0
  // pg-boss accepts queue names of [\w.\-/]+ only; keep to that here.
  const freshQueue = (label: string) => `conf-${label}-${++queues}`

  // Gates hold handlers mid-job. A failed assertion opens them all, or closing the workers'
  // scopes would wait forever for the jobs they hold.
  const gates = new Set<Deferred.Deferred<void>>()
  const makeGate = Effect.tap(Deferred.make<void>(), (gate) => Effect.sync(() => void gates.add(gate)))
  const openGates = Effect.forEach(gates, (gate) => Deferred.succeed(gate, undefined), { discard: true }).pipe(
    Effect.ensuring(Effect.sync(() => gates.clear()))
  )

  const test = (title: string, body: Effect.Effect<void, unknown, JobQueue | Scope.Scope>) =>
    (options.live ? it.live : it.effect)(
      title,
      // Scoped inside the layer, so workers stop before the queue they work on.
      () => body.pipe(Effect.ensuring(openGates), Effect.scoped, Effect.provide(options.layer)),
      options.timeout ?? 30_000
    )

  /** Moves time in small steps until `check` holds; dies after `withinMs` of advanced time. */
  const eventually = <E2, R>(what: string, check: Effect.Effect<boolean, E2, R>, withinMs = 5_000) =>
    Effect.gen(function*() {
      let waited = 0
      while (!(yield* check)) {
        if (waited >= withinMs) return yield* Effect.die(new Error(`after ${withinMs} ms still waiting for: ${what}`))
        yield* advance(step)
        waited += step
      }
    })

  const holds = (predicate: () => boolean) => Effect.sync(predicate)

  describe(name, () => {
    test(
      "runs enqueued jobs once each, with their payload and first attempt",
      Effect.gen(function*() {
        const jobs = yield* JobQueue
        const queue = freshQueue("basic")
        const payloads: Array<unknown> = [{ n: 1, nested: { list: [1, "two", null] } }, "text", 42]
        const ids = yield* Effect.forEach(payloads, (payload) => jobs.enqueue(queue, payload))
        const seen: Array<Job> = []
        yield* jobs.work(queue, { concurrency: 2 }, (job) => Effect.sync(() => void seen.push(job)))

        yield* eventually("three jobs to run", holds(() => seen.length === 3))
        yield* advance(300)
        assert.strictEqual(seen.length, 3, "no job ran twice")
        assert.sameMembers(seen.map((job) => job.id), ids.map((id) => id ?? "null"))
        for (const job of seen) {
          assert.strictEqual(job.queue, queue)
          assert.strictEqual(job.attempt, 1)
          assert.deepStrictEqual(job.payload, payloads[ids.indexOf(job.id)])
        }
      })
    )

    test(
      "holds a job until its run-at time",
      Effect.gen(function*() {
        const jobs = yield* JobQueue
        const queue = freshQueue("timer")
        const ran: Array<{ payload: unknown; at: number }> = []
        yield* jobs.work(queue, { concurrency: 1 }, (job) =>
          Effect.map(Clock.currentTimeMillis, (at) => void ran.push({ payload: job.payload, at })))

        const start = yield* Clock.currentTimeMillis
        const runAt = start + 1_500
        yield* jobs.enqueue(queue, "later", { runAt })
        yield* jobs.enqueue(queue, "now")
        yield* eventually("the immediate job to run", holds(() => ran.some((r) => r.payload === "now")))

        const elapsed = (yield* Clock.currentTimeMillis) - start
        if (elapsed < 1_000) yield* advance(1_000 - elapsed)
        assert.isFalse(ran.some((r) => r.payload === "later"), "ran before its run-at time")

        yield* eventually("the timer job to run", holds(() => ran.some((r) => r.payload === "later")))
        const later = ran.find((r) => r.payload === "later")!
        assert.isAtLeast(later.at, runAt - 10)
      })
    )

    test(
      "drops an enqueue whose dedupe key is queued or running, accepts it again once done",
      Effect.gen(function*() {
        const jobs = yield* JobQueue
        const queue = freshQueue("dedupe")
        const first = yield* jobs.enqueue(queue, 1, { dedupeKey: "k" })
        assert.isNotNull(first)
        assert.isNull(yield* jobs.enqueue(queue, 2, { dedupeKey: "k" }), "duplicate of a queued job")
        assert.isNotNull(yield* jobs.enqueue(queue, 3, { dedupeKey: "other" }))
        assert.isNotNull(yield* jobs.enqueue(freshQueue("dedupe-elsewhere"), 4, { dedupeKey: "k" }), "keys are per queue")

        const gate = yield* makeGate
        const started: Array<unknown> = []
        yield* jobs.work(queue, { concurrency: 2 }, (job) =>
          Effect.sync(() => void started.push(job.payload)).pipe(
            Effect.andThen(job.payload === 1 ? Deferred.await(gate) : Effect.void)
          ))
        yield* eventually("the keyed job to start", holds(() => started.includes(1)))
        assert.isNull(yield* jobs.enqueue(queue, 5, { dedupeKey: "k" }), "duplicate of a running job")
        assert.isFalse(yield* jobs.cancel(queue, first!), "a running job cannot be cancelled")

        yield* Deferred.succeed(gate, undefined)
        yield* eventually(
          "the key to be free again",
          Effect.map(jobs.enqueue(queue, 6, { dedupeKey: "k" }), (id) => id !== null)
        )
        yield* eventually("the re-enqueued job to run", holds(() => started.includes(6)))
        assert.sameMembers(started, [1, 3, 6])
      })
    )

    test(
      "retries failures and defects with the attempt counter until the job succeeds",
      Effect.gen(function*() {
        const jobs = yield* JobQueue
        const queue = freshQueue("retry")
        const attempts: Array<{ id: string; attempt: number }> = []
        yield* jobs.work(queue, { concurrency: 1 }, (job) =>
          Effect.sync(() => void attempts.push({ id: job.id, attempt: job.attempt })).pipe(
            Effect.andThen(
              job.attempt === 1 ? Effect.fail("boom") : job.attempt === 2 ? Effect.die(new Error("kaput")) : Effect.void
            )
          ))
        const id = yield* jobs.enqueue(queue, "flaky", { retryLimit: 2, retryDelayMs: 0 })

        yield* eventually("three attempts", holds(() => attempts.length === 3))
        yield* advance(1_000)
        assert.deepStrictEqual(attempts, [1, 2, 3].map((attempt) => ({ id: id!, attempt })))
      })
    )

    test(
      "waits the retry delay before retrying",
      Effect.gen(function*() {
        const jobs = yield* JobQueue
        const queue = freshQueue("backoff")
        const times: Array<number> = []
        yield* jobs.work(queue, { concurrency: 1 }, () =>
          Clock.currentTimeMillis.pipe(
            Effect.flatMap((at) => {
              times.push(at)
              return Effect.fail("always")
            })
          ))
        yield* jobs.enqueue(queue, "slow", { retryLimit: 1, retryDelayMs: 1_000 })

        yield* eventually("the first attempt", holds(() => times.length === 1))
        yield* advance(800)
        assert.strictEqual(times.length, 1, "retried before the delay")
        yield* eventually("the retry", holds(() => times.length === 2))
        assert.isAtLeast(times[1]! - times[0]!, 1_000 - 10)
      })
    )

    test(
      "stops after the retry limit and frees the dedupe key",
      Effect.gen(function*() {
        const jobs = yield* JobQueue
        const queue = freshQueue("exhaust")
        const attempts: Array<{ payload: unknown; attempt: number }> = []
        yield* jobs.work(queue, { concurrency: 1 }, (job) =>
          Effect.sync(() => void attempts.push({ payload: job.payload, attempt: job.attempt })).pipe(
            Effect.andThen(job.payload === "doomed" ? Effect.fail("always") : Effect.void)
          ))
        yield* jobs.enqueue(queue, "doomed", { retryLimit: 1, retryDelayMs: 0, dedupeKey: "d" })

        yield* eventually("two attempts", holds(() => attempts.length === 2))
        yield* advance(1_500)
        assert.deepStrictEqual(attempts, [{ payload: "doomed", attempt: 1 }, { payload: "doomed", attempt: 2 }])

        yield* eventually(
          "the key of the failed job to be free",
          Effect.map(jobs.enqueue(queue, "after", { dedupeKey: "d" }), (id) => id !== null)
        )
        yield* eventually("the next job to run", holds(() => attempts.length === 3))
      })
    )

    test(
      "runs at most `concurrency` jobs at a time",
      Effect.gen(function*() {
        const jobs = yield* JobQueue
        const queue = freshQueue("concurrency")
        const gate = yield* makeGate
        let running = 0
        let most = 0
        let done = 0
        yield* jobs.work(queue, { concurrency: 2 }, () =>
          Effect.sync(() => {
            running++
            most = Math.max(most, running)
          }).pipe(
            Effect.andThen(Deferred.await(gate)),
            Effect.ensuring(Effect.sync(() => {
              running--
              done++
            }))
          ))
        yield* Effect.forEach([1, 2, 3, 4, 5, 6], (n) => jobs.enqueue(queue, n))

        yield* eventually("two jobs to be running", holds(() => running === 2))
        yield* advance(500)
        assert.strictEqual(running, 2)
        assert.strictEqual(most, 2)

        yield* Deferred.succeed(gate, undefined)
        yield* eventually("all six jobs to finish", holds(() => done === 6))
        assert.strictEqual(most, 2)
      })
    )

    test(
      "cancels a queued job; cancelling a ran, cancelled or unknown job answers false",
      Effect.gen(function*() {
        const jobs = yield* JobQueue
        const queue = freshQueue("cancel")
        const ran: Array<unknown> = []
        yield* jobs.work(queue, { concurrency: 1 }, (job) => Effect.sync(() => void ran.push(job.payload)))

        const runAt = (yield* Clock.currentTimeMillis) + 1_000
        const doomed = (yield* jobs.enqueue(queue, "cancelled", { runAt, dedupeKey: "c" }))!
        const kept = (yield* jobs.enqueue(queue, "kept", { runAt }))!
        assert.isTrue(yield* jobs.cancel(queue, doomed))
        assert.isFalse(yield* jobs.cancel(queue, doomed), "already cancelled")
        assert.isFalse(yield* jobs.cancel(queue, "00000000-0000-4000-8000-0000deadbeef"), "unknown id")
        assert.isFalse(yield* jobs.cancel(freshQueue("cancel-elsewhere"), kept), "another queue's job")
        assert.isNotNull(yield* jobs.enqueue(queue, "again", { runAt, dedupeKey: "c" }), "cancelling frees the key")

        yield* eventually("the kept jobs to run", holds(() => ran.length === 2), 4_000)
        yield* advance(300)
        assert.sameMembers(ran, ["kept", "again"])
        assert.isFalse(yield* jobs.cancel(queue, kept), "already ran")
      })
    )

    test(
      "erases the jobs not running whose payload mentions a term, limit at a time; they never run",
      Effect.gen(function*() {
        const jobs = yield* JobQueue
        const queue = freshQueue("erase")
        const term = crypto.randomUUID()
        const runAt = (yield* Clock.currentTimeMillis) + 1_000
        yield* jobs.enqueue(queue, { to: term, n: 1 }, { runAt })
        yield* jobs.enqueue(queue, { to: [`+${term}`], n: 2 }, { runAt, dedupeKey: "e" })
        yield* jobs.enqueue(queue, { to: "someone else" }, { runAt })
        assert.strictEqual(yield* jobs.eraseMentions([crypto.randomUUID(), term], 1), 1)
        assert.strictEqual(yield* jobs.eraseMentions([term], 10), 1)
        assert.strictEqual(yield* jobs.eraseMentions([term], 10), 0)
        assert.isNotNull(yield* jobs.enqueue(queue, { to: "again" }, { runAt, dedupeKey: "e" }), "erasing frees the key")

        const ran: Array<unknown> = []
        yield* jobs.work(queue, { concurrency: 1 }, (job) => Effect.sync(() => void ran.push(job.payload)))
        yield* eventually("the other jobs to run", holds(() => ran.length === 2), 4_000)
        yield* advance(300)
        assert.sameDeepMembers(ran, [{ to: "someone else" }, { to: "again" }])
      })
    )

    test(
      "backlog counts a queue's ready, scheduled and active jobs and how long its oldest ready one has been due",
      Effect.gen(function*() {
        const jobs = yield* JobQueue
        const queue = freshQueue("backlog")
        const of = Effect.map(jobs.backlog, (all) => all.find((b) => b.queue === queue))
        assert.isUndefined(yield* of, "a queue without jobs has no backlog")
        const now = yield* Clock.currentTimeMillis
        yield* jobs.enqueue(queue, "a")
        yield* jobs.enqueue(queue, "b")
        yield* jobs.enqueue(queue, "later", { runAt: now + 3_600_000 })
        yield* advance(100)
        const queued = (yield* of)!
        assert.deepStrictEqual([queued.ready, queued.scheduled, queued.active], [2, 1, 0])
        assert.isAtLeast(queued.oldestReadyMs, 50, "the ready jobs have been due since they were enqueued")
        assert.isBelow(queued.oldestReadyMs, 60_000)

        const gate = yield* makeGate
        yield* jobs.work(queue, { concurrency: 5 }, () => Deferred.await(gate))
        yield* eventually("both due jobs to be taken", Effect.map(of, (b) => b?.active === 2))
        const taken = (yield* of)!
        assert.deepStrictEqual([taken.ready, taken.scheduled, taken.oldestReadyMs], [0, 1, 0])
        yield* Deferred.succeed(gate, undefined)
        yield* eventually("the taken jobs to finish", Effect.map(of, (b) => b?.active === 0))
        assert.deepStrictEqual((yield* of)!.scheduled, 1, "the job due later still waits")
      })
    )

    test(
      "two workers on one queue never run the same job twice",
      Effect.gen(function*() {
        const jobs = yield* JobQueue
        const queue = freshQueue("two-hosts")
        const runs = new Map<string, number>()
        const handler = (job: Job) =>
          Effect.sync(() => void runs.set(job.id, (runs.get(job.id) ?? 0) + 1)).pipe(Effect.andThen(Effect.sleep(10)))
        yield* jobs.work(queue, { concurrency: 3 }, handler)
        yield* jobs.work(queue, { concurrency: 3 }, handler)

        const ids = yield* Effect.forEach(Array.from({ length: 40 }, (_, i) => i), (i) => jobs.enqueue(queue, i), {
          concurrency: 8
        })
        yield* eventually("forty jobs to run", holds(() => runs.size === 40), 10_000)
        yield* advance(500)
        assert.sameMembers([...runs.keys()], ids.map((id) => id ?? "null"))
        assert.isTrue([...runs.values()].every((count) => count === 1), "a job ran twice")
      })
    )

    test(
      "closing a worker's scope lets its running job finish and takes no more",
      Effect.gen(function*() {
        const jobs = yield* JobQueue
        const queue = freshQueue("close")
        const gate = yield* makeGate
        const started: Array<unknown> = []
        const finished: Array<unknown> = []
        const scope = yield* Scope.make()
        yield* jobs.work(queue, { concurrency: 1 }, (job) =>
          Effect.sync(() => void started.push(job.payload)).pipe(
            Effect.andThen(Deferred.await(gate)),
            Effect.andThen(Effect.sync(() => void finished.push(job.payload)))
          )).pipe(Scope.provide(scope))
        yield* jobs.enqueue(queue, "first")
        yield* eventually("the job to start", holds(() => started.length === 1))

        const closing = yield* Scope.close(scope, Exit.void).pipe(Effect.forkChild)
        yield* advance(200)
        assert.deepStrictEqual(finished, [], "the running job was not cut short")
        yield* Deferred.succeed(gate, undefined)
        yield* Fiber.join(closing)
        assert.deepStrictEqual(finished, ["first"])

        yield* jobs.enqueue(queue, "second")
        yield* advance(1_000)
        assert.deepStrictEqual(started, ["first"], "a closed worker took a job")
      })
    )
  })
}
