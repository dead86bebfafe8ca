/**
 * The group commit: items waiting while the writer is busy are settled as one
 * batch, each caller gets its own item's outcome, and a batch that fails as a
 * whole is settled item by item. Urgent items (replies beside a broadcast) never
 * wait behind bulk ones. A lone item is settled by its caller, as a writer would.
 */

/** Something a caller provides: a lone item settled by its caller must not see it (a writer would not). */
const CallerOnly = Context.Reference<string>("test/GroupCommit/CallerOnly", { defaultValue: () => "the writers' own" })
import { assert, describe, it } from "@effect/vitest"
import { Context, Deferred, Effect, Exit, Fiber } from "effect"
import * as GroupCommit from "../src/shared/GroupCommit.ts"

describe("GroupCommit", () => {
  it.effect("batches what waits while the writer is busy; each caller gets its own outcome", () =>
    Effect.gen(function*() {
      const batches: Array<ReadonlyArray<number>> = []
      const gate = yield* Deferred.make<void>()
      const submit = yield* GroupCommit.make<number, string, string>({
        max: 3,
        many: (items) =>
          Effect.sync(() => {
            batches.push(items)
            return items.map((n) => (n % 2 === 0 ? Exit.succeed(`even ${n}`) : Exit.fail(`odd ${n}`)))
          }),
        // The first item holds the writer until the others are queued behind it.
        one: (n) => Effect.as(Effect.andThen(Effect.sync(() => batches.push([n])), Deferred.await(gate)), `alone ${n}`)
      })
      const first = yield* Effect.forkChild(submit(0))
      yield* Effect.yieldNow
      const rest = yield* Effect.forkChild(
        Effect.forEach([1, 2, 3, 4], (n) => Effect.exit(submit(n)), { concurrency: "unbounded" })
      )
      yield* Effect.yieldNow
      yield* Deferred.succeed(gate, undefined)
      assert.strictEqual(yield* Fiber.join(first), "alone 0")
      const exits = yield* Fiber.join(rest)
      assert.deepStrictEqual(exits, [Exit.fail("odd 1"), Exit.succeed("even 2"), Exit.fail("odd 3"), Exit.succeed("alone 4")])
      assert.deepStrictEqual(batches, [[0], [1, 2, 3], [4]])
    }))

  it.effect("settles each item alone when the batch fails as a whole", () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      let alone = 0
      let failedBatches = 0
      const submit = yield* GroupCommit.make<number, number, never>({
        max: 10,
        many: () => Effect.andThen(Effect.sync(() => failedBatches++), Effect.fail("the transaction rolled back")),
        one: (n) => Effect.andThen(Deferred.await(gate), Effect.sync(() => (alone++, n * 10)))
      })
      const fibers = yield* Effect.forEach([1, 2, 3], (n) => Effect.forkChild(submit(n)))
      yield* Effect.yieldNow
      yield* Deferred.succeed(gate, undefined)
      assert.deepStrictEqual(yield* Effect.forEach(fibers, Fiber.join), [10, 20, 30])
      assert.strictEqual(alone, 3)
      assert.strictEqual(failedBatches, 1)
    }))

  it.effect("runs as many batches at once as it has writers", () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      let running = 0
      let most = 0
      const submit = yield* GroupCommit.make<number, number, never>({
        max: 2,
        writers: 2,
        many: (items) =>
          Effect.gen(function*() {
            most = Math.max(most, ++running)
            yield* Deferred.await(gate)
            running--
            return items.map((n) => Exit.succeed(n))
          }),
        one: (n) =>
          Effect.gen(function*() {
            most = Math.max(most, ++running)
            yield* Deferred.await(gate)
            running--
            return n
          })
      })
      const all = yield* Effect.forkChild(Effect.forEach([1, 2, 3, 4, 5], (n) => submit(n), { concurrency: "unbounded" }))
      for (let i = 0; i < 10; i++) yield* Effect.yieldNow
      assert.strictEqual(most, 2, "two writers busy, the rest waiting")
      yield* Deferred.succeed(gate, undefined)
      assert.deepStrictEqual(yield* Fiber.join(all), [1, 2, 3, 4, 5])
      assert.strictEqual(most, 2)
    }))

  it.effect("settles an urgent item while every writer is busy with bulk ones, on a writer kept for it", () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const settled: Array<string> = []
      const held = (items: ReadonlyArray<string>) =>
        Effect.gen(function*() {
          if (items.some((i) => i.startsWith("bulk"))) yield* Deferred.await(gate)
          settled.push(...items)
          return items.map((i) => Exit.succeed(i))
        })
      const submit = yield* GroupCommit.make<string, string, never>({
        max: 2,
        writers: 1,
        urgentWriters: 1,
        many: held,
        one: (i) => Effect.map(held([i]), () => i)
      })
      const bulk = yield* Effect.forkChild(Effect.forEach(["bulk 1", "bulk 2", "bulk 3"], (i) => submit(i), { concurrency: "unbounded" }))
      for (let i = 0; i < 5; i++) yield* Effect.yieldNow
      // The bulk writer holds a batch; the reply is settled before the gate opens.
      assert.strictEqual(yield* submit("reply", "urgent"), "reply")
      assert.deepStrictEqual(settled, ["reply"])
      yield* Deferred.succeed(gate, undefined)
      assert.deepStrictEqual(yield* Fiber.join(bulk), ["bulk 1", "bulk 2", "bulk 3"])
    }))

  it.effect("takes waiting urgent items before bulk ones that came first", () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const batches: Array<ReadonlyArray<string>> = []
      const submit = yield* GroupCommit.make<string, string, never>({
        max: 2,
        many: (items) => Effect.sync(() => (batches.push(items), items.map((i) => Exit.succeed(i)))),
        // The first item holds the only writer until the others wait behind it.
        one: (i) => Effect.as(Effect.andThen(Effect.sync(() => batches.push([i])), Deferred.await(gate)), i)
      })
      const first = yield* Effect.forkChild(submit("bulk 0"))
      yield* Effect.yieldNow
      const bulk = yield* Effect.forkChild(Effect.forEach(["bulk 1", "bulk 2"], (i) => submit(i), { concurrency: "unbounded" }))
      yield* Effect.yieldNow
      const reply = yield* Effect.forkChild(submit("reply", "urgent"))
      yield* Effect.yieldNow
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(first)
      yield* Fiber.join(bulk)
      yield* Fiber.join(reply)
      assert.deepStrictEqual(batches, [["bulk 0"], ["reply"], ["bulk 1", "bulk 2"]])
    }))
  it.effect("settles bulk batches on at most bulkWriters writers at once; the others stay free for urgent items", () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const batches: Array<ReadonlyArray<string>> = []
      let bulkRunning = 0
      let mostBulk = 0
      const held = (items: ReadonlyArray<string>) =>
        Effect.gen(function*() {
          const isBulk = items.some((i) => i.startsWith("bulk"))
          if (isBulk) mostBulk = Math.max(mostBulk, ++bulkRunning)
          if (isBulk) yield* Deferred.await(gate)
          if (isBulk) bulkRunning--
          batches.push(items)
          return items.map((i) => Exit.succeed(i))
        })
      const submit = yield* GroupCommit.make<string, string, never>({
        max: 10,
        writers: 3,
        bulkWriters: 1,
        many: held,
        one: (i) => Effect.map(held([i]), () => i)
      })
      const first = yield* Effect.forkChild(submit("bulk 0"))
      for (let i = 0; i < 5; i++) yield* Effect.yieldNow
      const rest = yield* Effect.forkChild(Effect.forEach(["bulk 1", "bulk 2", "bulk 3"], (i) => submit(i), { concurrency: "unbounded" }))
      for (let i = 0; i < 10; i++) yield* Effect.yieldNow
      // Two writers are free, yet the bulk items wait for the one bulk writer; an urgent item does not.
      assert.strictEqual(mostBulk, 1)
      assert.strictEqual(yield* submit("reply", "urgent"), "reply")
      yield* Deferred.succeed(gate, undefined)
      assert.strictEqual(yield* Fiber.join(first), "bulk 0")
      assert.deepStrictEqual(yield* Fiber.join(rest), ["bulk 1", "bulk 2", "bulk 3"])
      assert.deepStrictEqual(batches, [["reply"], ["bulk 0"], ["bulk 1", "bulk 2", "bulk 3"]])
      assert.strictEqual(mostBulk, 1)
    }))

  it.effect("settles a lone item in its caller's fiber, in the writers' context, holding a writer's place", () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const seen: Array<{ readonly item: number; readonly fiber: number; readonly reference: string }> = []
      let running = 0
      let most = 0
      const settleAs = (items: ReadonlyArray<number>) =>
        Effect.gen(function*() {
          most = Math.max(most, ++running)
          const fiber = yield* Effect.withFiber((f) => Effect.succeed(f.id))
          const reference = yield* CallerOnly
          for (const item of items) seen.push({ item, fiber, reference })
          if (items.includes(0)) yield* Deferred.await(gate)
          running--
          return items.map((n) => Exit.succeed(n))
        })
      const submit = yield* GroupCommit.make<number, number, never>({
        max: 10,
        writers: 1,
        many: settleAs,
        one: (n) => Effect.map(settleAs([n]), () => n)
      })
      const caller = yield* Effect.forkChild(
        Effect.withFiber((f) => Effect.map(submit(0), (n) => [n, f.id] as const)).pipe(Effect.provideService(CallerOnly, "the caller's"))
      )
      for (let i = 0; i < 5; i++) yield* Effect.yieldNow
      // The caller holds the only writer's place: these wait for it, then go as one batch.
      const rest = yield* Effect.forkChild(Effect.forEach([1, 2], (n) => submit(n), { concurrency: "unbounded" }))
      for (let i = 0; i < 10; i++) yield* Effect.yieldNow
      assert.strictEqual(most, 1)
      assert.deepStrictEqual(seen.map((s) => s.item), [0])
      yield* Deferred.succeed(gate, undefined)
      const [zero, callerFiber] = yield* Fiber.join(caller)
      assert.strictEqual(zero, 0)
      assert.deepStrictEqual(yield* Fiber.join(rest), [1, 2])
      assert.strictEqual(most, 1)
      assert.strictEqual(seen[0]!.fiber, callerFiber, "the lone item is settled by its caller")
      assert.notStrictEqual(seen[1]!.fiber, callerFiber)
      assert.deepStrictEqual(seen.map((s) => s.reference), ["the writers' own", "the writers' own", "the writers' own"])
    }))

  it.effect("finishes settling a lone item whose caller is interrupted meanwhile", () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const settled: Array<number> = []
      const submit = yield* GroupCommit.make<number, number, never>({
        max: 10,
        many: (items) => Effect.succeed(items.map((n) => Exit.succeed(n))),
        one: (n) => Effect.as(Effect.andThen(Deferred.await(gate), Effect.sync(() => settled.push(n))), n)
      })
      const caller = yield* Effect.forkChild(submit(7))
      for (let i = 0; i < 5; i++) yield* Effect.yieldNow
      const interrupted = yield* Effect.forkChild(Fiber.interrupt(caller))
      for (let i = 0; i < 5; i++) yield* Effect.yieldNow
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(interrupted)
      assert.deepStrictEqual(settled, [7])
    }))

  it.effect("once items come together, gathers a burst into one batch instead of settling its first alone", () =>
    Effect.gen(function*() {
      const batches: Array<ReadonlyArray<number>> = []
      const submit = yield* GroupCommit.make<number, number, never>({
        max: 10,
        writers: 2,
        // Settling takes a while (a transaction's round trips): the burst's others come meanwhile.
        many: (items) => Effect.andThen(Effect.yieldNow, Effect.sync(() => (batches.push(items), items.map((n) => Exit.succeed(n))))),
        one: (n) => Effect.andThen(Effect.yieldNow, Effect.sync(() => (batches.push([n]), n)))
      })
      const burst = (from: number) => Effect.forEach([from, from + 1, from + 2, from + 3], (n) => submit(n), { concurrency: "unbounded" })
      // Quiet so far: the first is settled by its caller, the rest wait for a writer together.
      assert.deepStrictEqual(yield* burst(0), [0, 1, 2, 3])
      assert.deepStrictEqual(batches, [[0], [1, 2, 3]])
      for (let i = 0; i < 5; i++) yield* Effect.yieldNow
      // Items came together: the next burst waits for a writer as a whole, one batch (one transaction).
      assert.deepStrictEqual(yield* burst(4), [4, 5, 6, 7])
      assert.deepStrictEqual(batches.slice(2), [[4, 5, 6, 7]])
    }))
})
