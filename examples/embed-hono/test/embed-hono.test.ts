/**
 * `examples/embed-hono` as a user runs it (`npm start --prefix examples/embed-hono`): the same checks as the
 * `node:http` example, through Hono's `mount` and Parley's web-standard handler.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Path from "node:path"
import { checkEmbedded, startExample } from "../../embed-http/test/embedded.ts"

describe("examples/embed-hono (process, embedded PostgreSQL)", () => {
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
