/**
 * `decide` with `decision_type: ai` (decisions 2.3.6): the node's model reads
 * the conditions, the conversation's recent messages and the variables, and
 * answers one label. A model error or an answer naming no condition falls
 * back to the first condition, and the step log says so (`fallback: true`).
 */
import { Effect, Predicate } from "effect"
import { Prompt } from "effect/ai"
import type { StepInput } from "../nodes/NodeInput.ts"
import { recentMessages } from "../agent/BuiltInTools.ts"
import { callSettings, generateText, modelFailure, nodeModel } from "./ModelCall.ts"

export interface Condition {
  readonly label: string
  readonly description: string
}

const DEFAULT_MAX_TOKENS = 10_000

/** The condition an answer names: exactly (ignoring case, quotes, a final period), else the longest label it contains. */
export const matchLabel = (answer: string, labels: ReadonlyArray<string>): string | undefined => {
  const cleaned = answer.trim().replace(/^["'`*\s]+|["'`*.\s]+$/g, "").toLowerCase()
  const exact = labels.find((l) => l.toLowerCase() === cleaned)
  if (exact !== undefined) return exact
  return [...labels].sort((a, b) => b.length - a.length).find((l) => l.length > 0 && cleaned.includes(l.toLowerCase()))
}

const systemPrompt = (conditions: ReadonlyArray<Condition>, instructions: string | undefined) =>
  [
    "You route a conversation. Choose the one condition below that fits best and answer with its label only, nothing else.",
    "",
    "Conditions (label: description):",
    ...conditions.map((c) => `- ${c.label}: ${c.description}`),
    ...(instructions !== undefined && instructions.trim().length > 0 ? ["", "Instructions:", instructions] : [])
  ].join("\n")

/** The label chosen, whether it is the fallback, and the model's failure when there was one. */
export const aiDecide = Effect.fnUntraced(function*(input: StepInput, conditions: ReadonlyArray<Condition>) {
  const e = input.execution
  const config = input.node.data.config
  const llm = Predicate.isObject(config.llm_configuration) ? config.llm_configuration as Record<string, unknown> : {}
  const instructions = Predicate.isString(llm.instructions) ? llm.instructions : undefined
  const model = yield* nodeModel(config)
  const transcript = e.msg_conversation_id === null
    ? []
    : (yield* recentMessages(e, e.msg_conversation_id, 20)).map((m) => `${m.direction === "inbound" ? "Contact" : "Business"}: ${m.content ?? `[${m.type}]`}`)
  const user = [
    ...(transcript.length > 0 ? ["Recent messages, oldest first:", ...transcript, ""] : []),
    `Variables: ${JSON.stringify(e.execution_context.vars)}`,
    "",
    `Answer with one of: ${conditions.map((c) => c.label).join(", ")}`
  ].join("\n")
  const settings = callSettings(model, {
    temperature: config.llm_temperature ?? 0,
    maxTokens: config.llm_max_tokens ?? DEFAULT_MAX_TOKENS
  })
  const answer = yield* Effect.result(generateText(model, settings, Prompt.make([
    { role: "system", content: systemPrompt(conditions, instructions) },
    { role: "user", content: user }
  ])))
  const labels = conditions.map((c) => c.label)
  if (answer._tag === "Failure") {
    return { label: labels[0]!, fallback: true, answer: null, error: modelFailure(model, answer.failure) }
  }
  const chosen = matchLabel(answer.success, labels)
  return chosen === undefined
    ? { label: labels[0]!, fallback: true, answer: answer.success, error: null }
    : { label: chosen, fallback: false, answer: answer.success, error: null }
})
