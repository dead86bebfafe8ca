/**
 * A provider model (decisions 2.18): a language model an operator declared,
 * with the endpoint Parley calls it at. Nodes name it by `provider_model_id`
 * or `provider_model_name`; `GET /provider_models` shows the public fields
 * only — never the endpoint's key, which is not stored at all: the record
 * holds the name of the environment variable that carries it.
 */
import { Schema } from "effect"

export const ReasoningEffort = Schema.Literals(["none", "minimal", "low", "medium", "high", "xhigh"])
export type ReasoningEffort = typeof ReasoningEffort.Type

export const PromptCacheTtl = Schema.Literals(["5m", "1h"])
export type PromptCacheTtl = typeof PromptCacheTtl.Type

export const ThinkingMode = Schema.Literals(["disabled", "manual", "adaptive", "always_adaptive"])
export const ApiSurface = Schema.Literals(["provider_default", "chat_completions", "responses"])

/** The public record (2.18), as `GET /provider_models` answers it. */
export const ProviderModel = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  provider: Schema.String,
  reasoning_model: Schema.Boolean,
  thinking_mode: ThinkingMode,
  supports_custom_sampling: Schema.Boolean,
  supported_reasoning_efforts: Schema.Array(ReasoningEffort),
  default_reasoning_effort: Schema.NullOr(ReasoningEffort),
  supported_prompt_cache_ttls: Schema.Array(PromptCacheTtl),
  default_prompt_cache_ttl: Schema.NullOr(PromptCacheTtl),
  api_surface: ApiSurface
})
export type ProviderModel = typeof ProviderModel.Type

/** Where and how a declared model is called: never leaves the host. */
export interface ModelEndpoint {
  /** The OpenAI-compatible API root, e.g. `https://api.openai.com/v1` or `http://localhost:11434/v1`. */
  readonly base_url: string
  /** The model name the endpoint knows (`gpt-4o-mini`, `llama3.1`); the record's `name` is Parley's. */
  readonly upstream_model: string
  /** The environment variable holding the endpoint's key; null sends no key (local servers). */
  readonly api_key_env: string | null
}

/** A stored declaration: the public record plus its endpoint. */
export interface ProviderModelRecord extends ProviderModel {
  readonly endpoint: ModelEndpoint
  readonly created_at: string
}

/** The model simulator's model, which a host in simulator mode declares (`parley-sim`). */
export const SimulatedModelName = "parley-sim"
