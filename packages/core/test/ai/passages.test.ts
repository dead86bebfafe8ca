import { assert, describe, it } from "@effect/vitest"
import { PASSAGE_MAX_CHARS, PASSAGE_MIN_CHARS, splitPassages } from "../../src/ai/tools/Passages.ts"

const sentence = (i: number) => `Sentence number ${i} says one plain thing about the subject at hand.`

describe("splitPassages", () => {
  it("keeps paragraphs of a fitting size as they are, whitespace folded", () => {
    const a = "A".repeat(400)
    const b = `${"b ".repeat(200).trim()}\nstill b`
    assert.deepStrictEqual(splitPassages(`\n\n${a}\n \n${b}\n\n\n`), [a, `${"b ".repeat(200).trim()} still b`])
  })

  it("merges a short paragraph (a heading) with the next one", () => {
    const body = sentence(1).repeat(6)
    assert.deepStrictEqual(splitPassages(`Refunds\n\n${body}\n\nShipping\n\n${body}`), [
      `Refunds\n\n${body}`,
      `Shipping\n\n${body}`
    ])
  })

  it("cuts a long paragraph on sentence boundaries, no passage above the maximum", () => {
    const paragraph = Array.from({ length: 60 }, (_, i) => sentence(i)).join(" ")
    const passages = splitPassages(paragraph)
    assert.isAbove(passages.length, 1)
    for (const p of passages) {
      assert.isAtMost(p.length, PASSAGE_MAX_CHARS)
      assert.match(p, /^Sentence number \d+ .*\.$/)
    }
    assert.strictEqual(passages.join(" "), paragraph)
  })

  it("cuts a run with no sentence boundary at spaces, then at the maximum", () => {
    const words = "word ".repeat(500).trim()
    const wordPassages = splitPassages(words)
    for (const p of wordPassages) assert.isAtMost(p.length, PASSAGE_MAX_CHARS)
    assert.strictEqual(wordPassages.join(" "), words)
    const blob = "x".repeat(2500)
    assert.deepStrictEqual(splitPassages(blob).map((p) => p.length), [1000, 1000, 500])
  })

  it("is deterministic and has nothing for a blank text", () => {
    const text = Array.from({ length: 40 }, (_, i) => (i % 3 === 0 ? "Heading" : sentence(i).repeat(i % 5 + 1))).join("\n\n")
    assert.deepStrictEqual(splitPassages(text), splitPassages(text))
    for (const p of splitPassages(text).slice(0, -1)) assert.isAtLeast(p.length, Math.min(PASSAGE_MIN_CHARS, 60))
    assert.deepStrictEqual(splitPassages(""), [])
    assert.deepStrictEqual(splitPassages(" \n\n \t"), [])
  })
})
