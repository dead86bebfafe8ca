/** Live ids are UUIDv7 and sort in the order they were made, also within one millisecond. */
import { assert, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { Ids } from "../src/index.ts"

it.effect("makes version-7 uuids in creation order, across and within milliseconds", () =>
  Effect.gen(function*() {
    const ids = yield* Ids
    const made: Array<string> = []
    for (let i = 0; i < 5000; i++) made.push(yield* ids.uuid)
    yield* TestClock.adjust("1 millis")
    for (let i = 0; i < 10; i++) made.push(yield* ids.uuid)
    for (const id of made) assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    assert.deepStrictEqual([...made].sort(), made)
    assert.strictEqual(new Set(made).size, made.length)
  }).pipe(Effect.provide(Ids.layer)))
