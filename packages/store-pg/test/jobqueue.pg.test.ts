import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { type Job, JobQueue } from "@parley/core"
// Not yet re-exported from @parley/core/testing (its index belongs to another change).
import { jobQueueConformance } from "@parley/core/testing/conformance"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import { layerFromUrl } from "../src/Database.ts"
import { layerJobQueueFromUrl, type PgJobQueueOptions } from "../src/JobQueue.ts"
import { PgTransactions } from "../src/Transactor.ts"
import { emptyDatabase } from "./pg.ts"

// One database for the file; every test starts pg-boss (a "host") of its own on it.
let databaseScope: Scope.Closeable
let url: string
beforeAll(async () => {
  databaseScope = Scope.makeUnsafe()
  url = await Effect.runPromise(Scope.provide(emptyDatabase, databaseScope))
})
afterAll(() => Effect.runPromise(Scope.close(databaseScope, Exit.void)))

// Timers and retries are found by polling: poll as often as pg-boss allows.
const options: PgJobQueueOptions = { pollingIntervalSeconds: 0.5 }
const host = Layer.unwrap(Effect.sync(() => layerJobQueueFromUrl(url, options)))

jobQueueConformance("JobQueue (pg-boss)", {
  layer: host,
  advance: (ms) => Effect.sleep(ms),
  live: true
})

describe("JobQueue (pg-boss) across hosts", () => {
  const eventually = (what: string, check: () => boolean, withinMs = 10_000) =>
    Effect.gen(function*() {
      const deadline = Date.now() + withinMs
      while (!check()) {
        if (Date.now() > deadline) return yield* Effect.die(new Error(`still waiting for: ${what}`))
        yield* Effect.sleep(20)
      }
    })
  const hostWith = (extra: PgJobQueueOptions) =>
    Layer.unwrap(Effect.sync(() => layerJobQueueFromUrl(url, { ...options, ...extra })))

  it.live("an idle worker is woken by NOTIFY, not by its poll", () =>
    Effect.gen(function*() {
      const jobs = yield* JobQueue
      const started: Array<number> = []
      yield* jobs.work("pg-notify", { concurrency: 1 }, () => Effect.sync(() => void started.push(Date.now())))
      yield* Effect.sleep(300)
      const sent = Date.now()
      yield* jobs.enqueue("pg-notify", "wake up")
      yield* eventually("the job to start", () => started.length === 1, 3_000)
      assert.isBelow(started[0]! - sent, 1_000, "waited for a poll")
    }).pipe(Effect.scoped, Effect.provide(hostWith({ pollingIntervalSeconds: 5 }))))

  it.live("two hosts (two pg-boss instances) share a queue, each job runs once", () =>
    Effect.gen(function*() {
      const runs = new Map<string, Array<string>>()
      const handler = (host: string) => (job: Job) =>
        Effect.sync(() => void runs.set(job.id, [...runs.get(job.id) ?? [], host])).pipe(Effect.andThen(Effect.sleep(5)))
      const scope = yield* Scope.make()
      const a = yield* Layer.buildWithScope(host, scope)
      const b = yield* Layer.buildWithScope(host, scope)
      const onA = Context.get(a, JobQueue)
      const onB = Context.get(b, JobQueue)
      yield* onA.work("pg-hosts", { concurrency: 4 }, handler("a")).pipe(Scope.provide(scope))
      yield* onB.work("pg-hosts", { concurrency: 4 }, handler("b")).pipe(Scope.provide(scope))
      const ids = yield* Effect.forEach(Array.from({ length: 200 }, (_, i) => i), (i) =>
        (i % 2 === 0 ? onA : onB).enqueue("pg-hosts", i), { concurrency: 10 })
      yield* eventually("200 jobs to run", () => runs.size === 200)
      yield* Effect.sleep(300)
      yield* Scope.close(scope, Exit.void)
      assert.sameMembers([...runs.keys()], ids.map(String))
      assert.isTrue([...runs.values()].every((hosts) => hosts.length === 1), "a job ran twice")
      const byA = [...runs.values()].filter(([host]) => host === "a").length
      assert.isAbove(byA, 0, "host a ran nothing")
      assert.isBelow(byA, 200, "host b ran nothing")
    }))

  it.live("a job enqueued by a host that stopped runs on another", () =>
    Effect.gen(function*() {
      const id = yield* Effect.scoped(JobQueue.use((jobs) => jobs.enqueue("pg-handover", { from: "first" }))).pipe(
        Effect.provide(host)
      )
      const seen: Array<Job> = []
      yield* Effect.gen(function*() {
        const jobs = yield* JobQueue
        yield* jobs.work("pg-handover", { concurrency: 1 }, (job) => Effect.sync(() => void seen.push(job)))
        yield* eventually("the job to run", () => seen.length === 1)
      }).pipe(Effect.scoped, Effect.provide(host))
      assert.strictEqual(seen[0]!.id, id)
      assert.deepStrictEqual(seen[0]!.payload, { from: "first" })
    }))

  it.live("an attempt that outlives expireInSeconds is failed and retried", () =>
    Effect.gen(function*() {
      const jobs = yield* JobQueue
      const attempts: Array<number> = []
      yield* jobs.work("pg-expire", { concurrency: 1 }, (job) =>
        Effect.sync(() => void attempts.push(job.attempt)).pipe(
          Effect.andThen(job.attempt === 1 ? Effect.never : Effect.void)
        ))
      yield* jobs.enqueue("pg-expire", "stuck", { retryLimit: 1, retryDelayMs: 0 })
      yield* eventually("the retry", () => attempts.length === 2, 5_000)
      assert.deepStrictEqual(attempts, [1, 2])
    }).pipe(Effect.scoped, Effect.provide(hostWith({ expireInSeconds: 1 }))))

  it.live("an enqueue within a transaction is written by it: the job runs once it commits, never when it rolls back", () =>
    Effect.gen(function*() {
      const jobs = yield* JobQueue
      const { transaction } = yield* PgTransactions
      const seen: Array<unknown> = []
      yield* jobs.work("pg-within", { concurrency: 2 }, (job) => Effect.sync(() => void seen.push(job.payload)))
      const within = (payload: string) => jobs.enqueue("pg-within", payload, { withinTransaction: true, dedupeKey: payload })
      // Not waited for: no id. Not visible before the commit.
      assert.isNull(yield* transaction(Effect.tap(within("committed"), () =>
        Effect.andThen(Effect.sleep(600), Effect.sync(() => assert.notInclude(seen, "committed"))))))
      yield* Effect.exit(transaction(Effect.andThen(within("undone"), Effect.fail("boom"))))
      // A savepoint undone undoes its job; its transaction's other job stays.
      yield* transaction(Effect.gen(function*() {
        yield* Effect.exit(transaction(Effect.andThen(within("nested undone"), Effect.fail("boom"))))
        yield* within("nested kept")
      }))
      // Outside a transaction it is an ordinary enqueue, answered with the job's id.
      assert.isString(yield* within("alone"))
      yield* eventually("the committed jobs to run", () => seen.length >= 3)
      yield* Effect.sleep(1_000)
      assert.sameMembers(seen, ["committed", "nested kept", "alone"])
    }).pipe(
      Effect.scoped,
      Effect.provide(Layer.mergeAll(
        Layer.unwrap(Effect.sync(() => layerJobQueueFromUrl(url, options))),
        Layer.unwrap(Effect.sync(() => PgTransactions.layer.pipe(Layer.provide(layerFromUrl(url)))))
      ))
    ))
})
