/**
 * The language models Parley calls (agent nodes, AI decisions, AI fields,
 * voice-note transcripts). A model is effect's own `LanguageModel` service
 * (`effect/ai`): callers build prompts and toolkits with `Prompt` and `Tool`
 * and call `generateText` with `disableToolCallResolution`, so every tool call
 * comes back to the engine, which journals it before it runs it.
 *
 * The production adapter (`ai/OpenAiCompatible.ts`) speaks the
 * OpenAI-compatible chat-completions API to the endpoint's base URL; in
 * memory, the same adapter talks to the model simulator in process.
 */
import { Context, Effect } from "effect"
import type { AiError, LanguageModel } from "effect/ai"
import type { ModelEndpoint, PromptCacheTtl, ReasoningEffort } from "./ProviderModel.ts"

/** Sampling and limits of one call, read by the adapter from the caller's context. */
export interface ModelCallSettings {
  /** Omitted for models without custom sampling (2.18 `supports_custom_sampling: false`). */
  readonly temperature?: number | undefined
  readonly maxTokens?: number | undefined
  readonly reasoningEffort?: ReasoningEffort | undefined
  readonly promptCacheTtl?: PromptCacheTtl | undefined
}

export const ModelCallSettings = Context.Reference<ModelCallSettings>("@parley/core/ports/ModelCallSettings", {
  defaultValue: () => ({})
})

/** Runs `effect` with these call settings. */
export const withCallSettings = (settings: ModelCallSettings) => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.provideService(effect, ModelCallSettings, settings)

export interface AudioInput {
  readonly bytes: Uint8Array
  readonly mimeType: string
  readonly filename: string
}

export class LanguageModels extends Context.Service<LanguageModels, {
  /** effect/ai's `LanguageModel` over a declared model's endpoint. */
  readonly languageModel: (endpoint: ModelEndpoint) => Effect.Effect<LanguageModel.LanguageModel>
  /** The text of a voice note (`/audio/transcriptions` of the endpoint). */
  readonly transcribe: (endpoint: ModelEndpoint, audio: AudioInput) => Effect.Effect<string, AiError.AiError>
}>()("@parley/core/ports/LanguageModels") {}
