/**
 * One call of a node's provider model (decisions 2.3.6, 2.3.9, 2.3.14): the
 * model the node names, the call settings the model accepts, transient
 * failures retried on the Clock. Agents, AI decisions and AI fields all call
 * through here.
 */
import { Effect, Option, Predicate, Schedule, Schema } from "effect"
import { type AiError, type Prompt, Tool, Toolkit } from "effect/ai"
import { ProviderModels } from "../../ai/ProviderModels.ts"
import type { ProviderModelRecord, PromptCacheTtl, ReasoningEffort } from "../../ai/ProviderModel.ts"
import { LanguageModels, type ModelCallSettings, withCallSettings } from "../../ai/LanguageModels.ts"
import { StepFailed } from "../Step.ts"
import { OptionalText } from "../../shared/Json.ts"
import { observeModelCall } from "./ModelTelemetry.ts"

/** The model a node names (any node config). */
const ModelRef = Schema.Struct({ provider_model_id: OptionalText, provider_model_name: OptionalText })
const decodeModelRef = Schema.decodeUnknownSync(ModelRef)
/** The call settings a node asks for by name. */
const AskedNames = Schema.Struct({ reasoningEffort: OptionalText, promptCacheTtl: OptionalText })
const decodeAskedNames = Schema.decodeUnknownSync(AskedNames)

/** The node's model: `provider_model_id` wins, `provider_model_name` is a lookup key. */
export const nodeModel = Effect.fnUntraced(function*(config: Readonly<Record<string, unknown>>) {
  const { provider_model_id: id, provider_model_name: name } = decodeModelRef(config)
  const found = yield* (yield* ProviderModels).find({ id, name })
  if (Option.isNone(found)) {
    return yield* new StepFailed({ message: `Provider model ${id ?? name ?? "(none)"} not found`, code: "model_not_found" })
  }
  return found.value
})

/** What the node asks for, within what the model accepts (2.18): sampling only where custom sampling is supported. */
export const callSettings = (
  model: ProviderModelRecord,
  asked: {
    readonly temperature?: unknown
    readonly maxTokens?: unknown
    readonly reasoningEffort?: unknown
    readonly promptCacheTtl?: unknown
  }
): ModelCallSettings => {
  const names = decodeAskedNames(asked)
  return {
    temperature: model.supports_custom_sampling && Predicate.isNumber(asked.temperature) ? asked.temperature : undefined,
    maxTokens: Predicate.isNumber(asked.maxTokens) ? asked.maxTokens : undefined,
    reasoningEffort: model.reasoning_model
      ? (names.reasoningEffort as ReasoningEffort | undefined) ?? model.default_reasoning_effort ?? undefined
      : undefined,
    promptCacheTtl: (names.promptCacheTtl as PromptCacheTtl | undefined) ?? model.default_prompt_cache_ttl ?? undefined
  }
}


/** A tool as the model is offered it: its arguments described by a JSON Schema. */
export interface ModelTool {
  readonly name: string
  readonly description: string
  readonly parameters: Readonly<Record<string, unknown>>
}

/** One text generation; tool calls come back unresolved (`disableToolCallResolution`) for the engine to journal. */
export const generate = (
  model: ProviderModelRecord,
  settings: ModelCallSettings,
  prompt: Prompt.Prompt,
  tools: ReadonlyArray<ModelTool> = []
) =>
  observeModelCall(
    model,
    Effect.gen(function*() {
      const lm = yield* (yield* LanguageModels).languageModel(model.endpoint)
      const toolkit = Toolkit.make(...tools.map((t) => Tool.dynamic(t.name, { description: t.description, parameters: t.parameters })))
      return yield* lm.generateText({ prompt, toolkit, disableToolCallResolution: true, toolCallValidation: "deferred" }).pipe(
        withCallSettings(settings),
        // A retryable failure (rate limit, network, 5xx) is tried twice more, 1 s then 2 s later.
        Effect.retry({ schedule: Schedule.exponential("1 second"), times: 2, while: (e: AiError.AiError) => e.isRetryable })
      )
    })
  )

/** An AI error in one line that names the model, for the step log and `error_details`. */
export const modelFailure = (model: ProviderModelRecord, error: AiError.AiError): string =>
  `Model ${model.name} failed: ${error.message}`.slice(0, 1000)

/** `generate` for callers that only need text (AI fields, AI decisions, ask_about_file). */
export const generateText = (model: ProviderModelRecord, settings: ModelCallSettings, prompt: Prompt.Prompt) =>
  Effect.map(generate(model, settings, prompt), (r) => r.text)
