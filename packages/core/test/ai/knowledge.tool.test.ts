import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { KNOWLEDGE_PASSAGES_LIMIT, searchKnowledgeBase } from "../../src/ai/tools/KnowledgeBaseTool.ts"
import { POLICY_TEXT } from "../../src/testing/conformance/KnowledgeSearchConformance.ts"
import { layerMemoryKnowledgeSearch } from "../../src/testing/index.ts"

const policy = { name: "store_policy", description: "Shipping, refunds, returns, warranty", knowledge_base_text: POLICY_TEXT }

describe("searchKnowledgeBase", () => {
  it.effect("answers the most relevant passages for the model's query", () =>
    Effect.gen(function*() {
      const outcome = yield* searchKnowledgeBase(policy, { query: "how long do refunds take" })
      assert.isTrue(outcome.ok)
      const { passages } = outcome.result as { passages: ReadonlyArray<string> }
      assert.match(passages[0]!, /^Refunds/)
      assert.isAtMost(passages.length, KNOWLEDGE_PASSAGES_LIMIT)
      const none = yield* searchKnowledgeBase(policy, { query: "quantum chromodynamics" })
      assert.deepStrictEqual(none, { ok: true, result: { passages: [] } })
    }).pipe(Effect.provide(layerMemoryKnowledgeSearch)))

  it.effect("bad arguments are a tool error", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* searchKnowledgeBase(policy, {}), {
        ok: false,
        result: { error: "Invalid arguments: /query is required" }
      })
      assert.deepStrictEqual(yield* searchKnowledgeBase(policy, { query: 3 }), {
        ok: false,
        result: { error: "Invalid arguments: /query must be of type string (got number)" }
      })
    }).pipe(Effect.provide(layerMemoryKnowledgeSearch)))
})
