/** The standalone host's malloc arenas (`MallocArenas.ts`): capped on Linux unless the operator chose a value. */
import { assert, describe, it } from "@effect/vitest"
import { arenaCappedEnvironment, DEFAULT_MALLOC_ARENAS } from "../src/MallocArenas.ts"

describe("malloc arenas", () => {
  it("executes the host again with the arenas capped on Linux, keeping the rest of its environment", () => {
    const env = arenaCappedEnvironment("linux", { PORT: "4000", PARLEY_DATA_DIR: "/data" })
    assert.deepStrictEqual(env, { PORT: "4000", PARLEY_DATA_DIR: "/data", MALLOC_ARENA_MAX: DEFAULT_MALLOC_ARENAS })
  })

  it("keeps an operator's own value, whatever it is, and leaves other platforms alone", () => {
    assert.isUndefined(arenaCappedEnvironment("linux", { MALLOC_ARENA_MAX: "8" }))
    assert.isUndefined(arenaCappedEnvironment("linux", { MALLOC_ARENA_MAX: "" }))
    assert.isUndefined(arenaCappedEnvironment("darwin", {}))
    assert.isUndefined(arenaCappedEnvironment("win32", {}))
  })
})
