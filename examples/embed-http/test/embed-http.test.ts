/**
 * `examples/embed-http` as a user runs it (`npm start --prefix examples/embed-http`): its own page and 404, every
 * part of Parley under `/parley`, the URLs Parley hands out under the prefix; SIGTERM leaves no process behind.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Path from "node:path"
import { checkEmbedded, startExample } from "./embedded.ts"

describe("examples/embed-http (process, embedded PostgreSQL)", () => {
  it("serves its own routes and all of Parley under /parley, and stops cleanly", async () => {
    const example = await startExample(Path.resolve(import.meta.dirname, ".."))
    try {
      await checkEmbedded(example.base)
    } finally {
      const stopped = await example.stop()
      assert.strictEqual(stopped.code, 0, example.output())
      assert.deepStrictEqual(stopped.left, [], "no PostgreSQL left running")
    }
  }, 240_000)
})
