/**
 * Ranking a knowledge base's passages against a question (decisions 2.3.9: one retrieval tool per knowledge base,
 * "returning the most relevant passages"). The text is the node's `knowledge_base_text` (up to 200,000
 * characters), cut by `ai/tools/Passages.ts`; the ranking is a real one (PostgreSQL full-text search, BM25 in
 * memory), never substring matching, and any word of the question may match (a natural question rarely has all
 * its words in one passage).
 */
import { Context, type Effect } from "effect"

export interface KnowledgeQuery {
  readonly text: string
  readonly query: string
  /** At most this many passages. */
  readonly limit: number
}

export interface RankedPassage {
  readonly passage: string
  /** Higher is more relevant; comparable only within one answer. */
  readonly score: number
}

export class KnowledgeSearch extends Context.Service<KnowledgeSearch, {
  /** The passages that match the query, most relevant first (ties in text order); none match → empty. */
  readonly search: (query: KnowledgeQuery) => Effect.Effect<ReadonlyArray<RankedPassage>>
}>()("@parley/core/ports/KnowledgeSearch") {}
