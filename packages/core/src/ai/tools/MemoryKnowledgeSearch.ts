/**
 * `KnowledgeSearch` in memory: Okapi BM25 over the same passages the Postgres adapter ranks, with a light English
 * normaliser (lowercase, punctuation stripped, stop words dropped, a small suffix stemmer) so plurals and verb
 * forms meet, as PostgreSQL's `english` configuration does.
 */
import { Effect, Layer } from "effect"
import { splitPassages } from "./Passages.ts"
import { KnowledgeSearch, type RankedPassage } from "./KnowledgeSearch.ts"

const STOP_WORDS = new Set(
  ("a about above after again against all am an and any are as at be because been before being below between both but by " +
    "can could did do does doing down during each few for from further had has have having he her here hers herself him " +
    "himself his how i if in into is it its itself just me more most my myself no nor not now of off on once only or other " +
    "our ours ourselves out over own same she should so some such than that the their theirs them themselves then there " +
    "these they this those through to too under until up very was we were what when where which while who whom why will " +
    "with would you your yours yourself yourselves").split(" ")
)

/** A light suffix stemmer: plurals, `-ing`, `-ed` (with the doubled consonant they bring: shipped → ship). */
export const stem = (word: string): string => {
  let w = word
  if (w.length > 4 && w.endsWith("ies")) w = w.slice(0, -3) + "y"
  else if (w.endsWith("sses")) w = w.slice(0, -2)
  else if (w.length > 4 && /(?:s|x|z|ch|sh)es$/.test(w)) w = w.slice(0, -2)
  else if (w.length > 3 && w.endsWith("s") && !/(?:ss|us|is)$/.test(w)) w = w.slice(0, -1)
  if (w.length > 5 && w.endsWith("ing")) w = w.slice(0, -3)
  else if (w.length > 4 && w.endsWith("ed")) w = w.slice(0, -2)
  else return w
  return /([^aeioulsz])\1$/.test(w) ? w.slice(0, -1) : w
}

/** The terms of a text: lowercase words, stop words dropped, stemmed. */
export const terms = (text: string): Array<string> =>
  (text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).filter((w) => !STOP_WORDS.has(w)).map(stem)

const K1 = 1.2
const B = 0.75

/** BM25 scores of `passages` for `query`, only the passages that share a term with it, best first. */
export const rankBm25 = (passages: ReadonlyArray<string>, query: string, limit: number): Array<RankedPassage> => {
  const wanted = new Set(terms(query))
  if (wanted.size === 0 || limit <= 0) return []
  const docs = passages.map((passage) => {
    const counts = new Map<string, number>()
    const words = terms(passage)
    for (const t of words) if (wanted.has(t)) counts.set(t, (counts.get(t) ?? 0) + 1)
    return { passage, length: words.length, counts }
  })
  const average = docs.reduce((sum, d) => sum + d.length, 0) / Math.max(docs.length, 1)
  const idf = new Map<string, number>()
  for (const t of wanted) {
    const n = docs.filter((d) => d.counts.has(t)).length
    idf.set(t, Math.log(1 + (docs.length - n + 0.5) / (n + 0.5)))
  }
  return docs
    .map((d, index) => {
      let score = 0
      for (const [t, f] of d.counts) score += idf.get(t)! * (f * (K1 + 1)) / (f + K1 * (1 - B + B * d.length / average))
      return { passage: d.passage, score, index }
    })
    .filter((d) => d.score > 0)
    .sort((a, b) => b.score - a.score || a.index - b.index)
    .slice(0, limit)
    .map(({ passage, score }) => ({ passage, score }))
}

export const layerMemoryKnowledgeSearch = Layer.succeed(
  KnowledgeSearch,
  KnowledgeSearch.of({
    search: ({ limit, query, text }) => Effect.sync(() => rankBm25(splitPassages(text), query, limit))
  })
)
