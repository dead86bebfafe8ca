/**
 * The retrieval tool of one knowledge base (decisions 2.3.9 `flow_agent_knowledge_bases`, 10.6): named after the
 * knowledge base, it takes the model's question and answers the most relevant passages of the text, ranked by the
 * `KnowledgeSearch` port.
 */
import { Effect } from "effect"
import { KnowledgeSearch } from "./KnowledgeSearch.ts"
import { validateArguments } from "./JsonSchema.ts"
import { cutToolResult, type ToolOutcome } from "../../shared/ToolResult.ts"

/** One entry of `flow_agent_knowledge_bases`, as stored in the node's configuration. */
export interface KnowledgeBaseConfig {
  readonly name: string
  readonly description?: string | null | undefined
  readonly knowledge_base_text: string
}

/** Passages a search answers: up to about 5,000 characters, well inside the 16 KB of a tool result. */
export const KNOWLEDGE_PASSAGES_LIMIT = 5

/** The arguments the model is told to send. */
export const KNOWLEDGE_TOOL_INPUT_SCHEMA = {
  type: "object",
  properties: {
    query: { type: "string", minLength: 1, description: "The question or keywords to look up" }
  },
  required: ["query"],
  additionalProperties: false
} as const

/** Searches one knowledge base with the model's arguments; bad arguments are a tool error for the model. */
export const searchKnowledgeBase = (
  config: KnowledgeBaseConfig,
  args: unknown
): Effect.Effect<ToolOutcome, never, KnowledgeSearch> =>
  Effect.gen(function*() {
    const checked = yield* Effect.result(validateArguments(KNOWLEDGE_TOOL_INPUT_SCHEMA, args))
    if (checked._tag === "Failure") return { ok: false, result: { error: checked.failure.message } }
    const { query } = args as { readonly query: string }
    const ranked = yield* KnowledgeSearch.use((search) =>
      search.search({ text: config.knowledge_base_text, query, limit: KNOWLEDGE_PASSAGES_LIMIT })
    )
    return { ok: true, result: cutToolResult({ passages: ranked.map((r) => r.passage) }) }
  })
