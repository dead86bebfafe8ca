import { assert, describe, it } from "@effect/vitest"
import { rankBm25, stem, terms } from "../../src/ai/tools/MemoryKnowledgeSearch.ts"

describe("the memory KnowledgeSearch normaliser", () => {
  it("stems plurals and verb forms to one term", () => {
    for (const [word, expected] of [
      ["refunds", "refund"],
      ["policies", "policy"],
      ["boxes", "box"],
      ["classes", "class"],
      ["shipped", "ship"],
      ["shipping", "ship"],
      ["status", "status"],
      ["is", "is"]
    ]) assert.strictEqual(stem(word!), expected, word)
  })

  it("drops stop words and punctuation", () => {
    assert.deepStrictEqual(terms("How long do the Refunds take?!"), ["long", "refund", "take"])
  })

  it("scores rarer terms higher and ranks ties in text order", () => {
    const passages = ["apple pie", "apple tart", "banana apple"]
    const ranked = rankBm25(passages, "banana apple", 10)
    assert.strictEqual(ranked[0]!.passage, "banana apple")
    assert.deepStrictEqual(ranked.slice(1).map((r) => r.passage), ["apple pie", "apple tart"])
    assert.deepStrictEqual(rankBm25(passages, "apple", 0), [])
  })
})
