/**
 * `search_docs`: the API reference searched by words. The one source is the OpenAPI document the host serves
 * (`/openapi.json`: every operation's path, summary, description and tag), read through `LocalApi`, so the answer
 * never drifts from the contract.
 */
import { Effect, Predicate, Schema } from "effect"
import { action, McpCaller, type Tool, ToolFailure } from "../Action.ts"
import { LocalApi } from "../LocalApi.ts"

interface Operation {
  readonly method: string
  readonly path: string
  readonly summary: string
  readonly description: string
  readonly tags: ReadonlyArray<string>
}

const operationsOf = (document: unknown): ReadonlyArray<Operation> => {
  if (!Predicate.hasProperty(document, "paths") || !Predicate.isObject(document.paths)) return []
  const operations: Array<Operation> = []
  for (const [path, item] of Object.entries(document.paths)) {
    if (!Predicate.isObject(item)) continue
    for (const [method, operation] of Object.entries(item)) {
      if (!Predicate.isObject(operation)) continue
      const text = (key: string) => Predicate.hasProperty(operation, key) && Predicate.isString(operation[key]) ? operation[key] : ""
      const tags = Predicate.hasProperty(operation, "tags") && Array.isArray(operation.tags) ? operation.tags.filter(Predicate.isString) : []
      operations.push({ method: method.toUpperCase(), path, summary: text("summary"), description: text("description"), tags })
    }
  }
  return operations
}

const words = (text: string) => text.toLowerCase().split(/[^a-z0-9_]+/).filter((w) => w.length > 1)

/** At most this many operations answer a query, best first. */
const MAX_RESULTS = 10

export const SearchDocs: Tool = {
  name: "search_docs",
  description: "Search the API reference (operations' paths, summaries and descriptions) by words.",
  actions: [
    action("search", "Operations of the API matching `query`, best first (at most 10)", Schema.Struct({ query: Schema.String }), ({ query }) =>
      Effect.gen(function*() {
        const terms = words(query)
        if (terms.length === 0) return yield* new ToolFailure({ error: "query must contain a word" })
        const { key } = yield* McpCaller
        const answer = yield* LocalApi.use((api) => api.call({ method: "GET", path: "/openapi.json", key }))
        const scored = operationsOf(answer.body).map((operation) => {
          const summary = words(`${operation.summary} ${operation.tags.join(" ")}`)
          const rest = words(`${operation.path} ${operation.description}`)
          // A term in the summary or tag counts twice one in the path or description.
          const score = terms.reduce((sum, term) =>
            sum + (summary.some((w) => w.startsWith(term)) ? 2 : 0) + (rest.some((w) => w.startsWith(term)) ? 1 : 0), 0)
          return { operation, score }
        })
        return scored
          .filter((s) => s.score > 0)
          .sort((a, b) => b.score - a.score)
          .slice(0, MAX_RESULTS)
          .map((s) => s.operation)
      }))
  ]
}
