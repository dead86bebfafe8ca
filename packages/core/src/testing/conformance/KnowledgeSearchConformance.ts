/** The behaviour every `KnowledgeSearch` adapter owes (knowledge-base retrieval, decisions 2.3.9), written once. */
import { assert, layer } from "@effect/vitest"
import { Effect, type Layer } from "effect"
import { KnowledgeSearch } from "../../ai/tools/KnowledgeSearch.ts"

const section = (heading: string, body: string) => `${heading}\n\n${body}`

/** A store policy of four sections, each long enough to be a passage of its own. */
export const POLICY_TEXT = [
  section(
    "Shipping",
    "We ship every order from our warehouse in Rotterdam within two business days of payment. Standard delivery inside " +
      "the European Union arrives in three to five business days; express delivery arrives the next business day when the " +
      "order is placed before noon. Tracking numbers are e-mailed as soon as the parcel leaves the warehouse."
  ),
  section(
    "Refunds",
    "Refunds are issued to the original payment method. Once we receive the returned item and inspect it, the refund is " +
      "processed within 5 business days, and your bank may need another 3 to 7 days to show it on your statement. " +
      "Shipping costs are refunded only when the item arrived damaged or was not what you ordered."
  ),
  section(
    "Returns",
    "You may return any unused item in its original packaging within 30 days of delivery. Start a return from your " +
      "account page, print the prepaid label and drop the parcel at any post office. Items marked as final sale, gift " +
      "cards and personalised products cannot be returned. We e-mail you when the return reaches us."
  ),
  section(
    "Warranty",
    "Every appliance carries a two-year manufacturer warranty covering defects in materials and workmanship. The " +
      "warranty does not cover wear and tear, accidental damage or repairs made by third parties. To make a claim, " +
      "send us the order number, a photo of the defect and a short description of the problem."
  )
].join("\n\n")

export const knowledgeSearchConformance = <E>(name: string, adapter: Layer.Layer<KnowledgeSearch, E>): void =>
  layer(adapter, { excludeTestServices: true })(name, (it) => {
    const search = (query: string, limit = 3, text = POLICY_TEXT) =>
      KnowledgeSearch.use((s) => s.search({ text, query, limit }))

    it.effect("ranks the passage that answers a question first", () =>
      Effect.gen(function*() {
        const refunds = yield* search("how long do refunds take")
        assert.isAbove(refunds.length, 0)
        assert.match(refunds[0]!.passage, /^Refunds\n\nRefunds are issued/)
        const returns = yield* search("Can I send back a gift card?")
        assert.match(returns[0]!.passage, /^Returns/)
        const warranty = yield* search("what does the warranty cover")
        assert.match(warranty[0]!.passage, /^Warranty/)
        for (const ranked of [refunds, returns, warranty]) {
          for (let i = 1; i < ranked.length; i++) assert.isAtLeast(ranked[i - 1]!.score, ranked[i]!.score)
        }
      }))

    it.effect("matches plural and singular forms of a word", () =>
      Effect.gen(function*() {
        // The text says "appliance" and "claim"; the question says "appliances" and "claims".
        const plural = yield* search("appliances claims")
        assert.match(plural[0]!.passage, /^Warranty/)
        const singular = yield* search("refund")
        assert.match(singular[0]!.passage, /^Refunds/)
      }))

    it.effect("answers nothing for an unrelated question, an empty one or one of stop words", () =>
      Effect.gen(function*() {
        assert.deepStrictEqual(yield* search("quantum chromodynamics lattice"), [])
        assert.deepStrictEqual(yield* search(""), [])
        assert.deepStrictEqual(yield* search("   \n\t "), [])
        assert.deepStrictEqual(yield* search("what is the?"), [])
        assert.deepStrictEqual(yield* search("refunds", 3, ""), [])
      }))

    it.effect("returns at most `limit` passages", () =>
      Effect.gen(function*() {
        // "days" is in three sections.
        assert.strictEqual((yield* search("days", 10)).length, 3)
        assert.strictEqual((yield* search("days", 2)).length, 2)
        assert.strictEqual((yield* search("days", 1)).length, 1)
      }))

    it.effect("answers over a 200,000-character text", () =>
      Effect.gen(function*() {
        const filler = Array.from({ length: 1000 }, (_, i) =>
          `Chapter ${i} of the catalogue lists kitchen tools, garden furniture and lamps in stock number ${i}. ` +
          "Prices include value added tax and are valid while stock lasts. Colours may differ slightly from the photos.")
        const text = [...filler.slice(0, 300), POLICY_TEXT, ...filler.slice(300)].join("\n\n").slice(0, 200_000)
        assert.strictEqual(text.length, 200_000)
        const started = performance.now()
        const ranked = yield* search("how long do refunds take", 5, text)
        assert.isBelow(performance.now() - started, 5_000)
        assert.match(ranked[0]!.passage, /^Refunds/)
        assert.isAtMost(ranked.length, 5)
      }))
  })
