/**
 * `KnowledgeSearch` on PostgreSQL full-text search: the passages (`splitPassages`) go to the server as one array,
 * are parsed with the `english` configuration and ranked with `ts_rank_cd`. No table: a knowledge base is at most
 * 200,000 characters (a few hundred passages), which the server parses in milliseconds per question.
 *
 * The question becomes an OR of its lexemes: `plainto_tsquery` (and `websearch_to_tsquery`) AND every word, so a
 * natural question ("how long do refunds take") would match only a passage holding all of them.
 */
import { KnowledgeSearch, splitPassages } from "@parley/core"
import { Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { decodeRows } from "./Rows.ts"

/** A ranked passage (`float8` comes back a number). */
const RankedRow = Schema.Struct({ passage: Schema.String, score: Schema.Number })
const toRanked = decodeRows("knowledge search", RankedRow)

export const layerKnowledgeSearch = Layer.effect(
  KnowledgeSearch,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return KnowledgeSearch.of({
      search: Effect.fn("KnowledgeSearch.search")(function*({ limit, query, text }) {
        // A question with no word has no lexeme; asking would only draw a NOTICE.
        if (limit <= 0 || !/[\p{L}\p{N}]/u.test(query)) return []
        const passages = splitPassages(text)
        if (passages.length === 0) return []
        const rows = yield* sql`
          WITH q AS (SELECT replace(plainto_tsquery('english', ${query})::text, ' & ', ' | ')::tsquery AS query),
          docs AS (
            SELECT p.passage, p.ord, to_tsvector('english', p.passage) AS doc
            FROM unnest(${passages}::text[]) WITH ORDINALITY AS p(passage, ord)
          )
          SELECT docs.passage, ts_rank_cd(docs.doc, q.query)::float8 AS score
          FROM docs, q
          WHERE numnode(q.query) > 0 AND docs.doc @@ q.query
          ORDER BY score DESC, docs.ord
          LIMIT ${limit}`.pipe(Effect.orDie)
        return yield* toRanked(rows)
      })
    })
  })
)
