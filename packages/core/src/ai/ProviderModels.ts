/**
 * The provider models operators declare (decisions 2.18, 4.7): listed by
 * `GET /provider_models` (public fields only), declared from configuration
 * (`PARLEY_MODELS`) and the `parley models` CLI, and the model-dependent
 * rules of an agent node's settings (2.3.9).
 */
import { Clock, Context, Effect, Layer, Option, Schema } from "effect"
import { ProviderModelsRepo } from "./ProviderModelsRepo.ts"
import { type ErrorDetail, type Unprocessable, unprocessable } from "../shared/ApiError.ts"
import { Ids } from "../shared/Ids.ts"
import {
  ApiSurface,
  PromptCacheTtl,
  type ProviderModel,
  type ProviderModelRecord,
  ReasoningEffort,
  ThinkingMode
} from "./ProviderModel.ts"

/**
 * A declaration as operators write it (a `PARLEY_MODELS` entry, the CLI's
 * flags): loose strings, checked by `declare` with errors naming the field.
 */
export const ProviderModelDeclaration = Schema.Struct({
  name: Schema.String,
  /** The model name the endpoint knows. */
  model: Schema.String,
  base_url: Schema.String,
  provider: Schema.optionalKey(Schema.String),
  api_key_env: Schema.optionalKey(Schema.NullOr(Schema.String)),
  reasoning_model: Schema.optionalKey(Schema.Boolean),
  thinking_mode: Schema.optionalKey(Schema.String),
  supports_custom_sampling: Schema.optionalKey(Schema.Boolean),
  supported_reasoning_efforts: Schema.optionalKey(Schema.Array(Schema.String)),
  default_reasoning_effort: Schema.optionalKey(Schema.NullOr(Schema.String)),
  supported_prompt_cache_ttls: Schema.optionalKey(Schema.Array(Schema.String)),
  default_prompt_cache_ttl: Schema.optionalKey(Schema.NullOr(Schema.String)),
  api_surface: Schema.optionalKey(Schema.String)
})
export type ProviderModelDeclaration = typeof ProviderModelDeclaration.Type

export const MaxModelNameLength = 128
/** What shells accept as a variable name. */
export const EnvVarName = /^[A-Za-z_][A-Za-z0-9_]*$/
export const DefaultProvider = "openai_compatible"

const isOneOf = <A extends string>(schema: Schema.Schema<A>) => Schema.is(schema) as (u: unknown) => u is A

/** The public fields of 2.18 (never the endpoint). */
export const toPublic = (m: ProviderModelRecord): ProviderModel => ({
  id: m.id,
  name: m.name,
  provider: m.provider,
  reasoning_model: m.reasoning_model,
  thinking_mode: m.thinking_mode,
  supports_custom_sampling: m.supports_custom_sampling,
  supported_reasoning_efforts: m.supported_reasoning_efforts,
  default_reasoning_effort: m.default_reasoning_effort,
  supported_prompt_cache_ttls: m.supported_prompt_cache_ttls,
  default_prompt_cache_ttl: m.default_prompt_cache_ttl,
  api_surface: m.api_surface
})

const validUrl = (s: string): boolean => {
  try {
    const url = new URL(s)
    return url.protocol === "http:" || url.protocol === "https:"
  } catch {
    return false
  }
}

/** The checked record fields of a declaration, or every problem, each naming its field. */
export const checkDeclaration = (
  d: ProviderModelDeclaration
): { readonly problems: ReadonlyArray<ErrorDetail>; readonly fields: Omit<ProviderModelRecord, "id" | "created_at"> } => {
  const problems: Array<ErrorDetail> = []
  const add = (path: string, message: string) => problems.push({ path, message })
  const name = d.name.trim()
  if (name === "") add("name", "must not be empty")
  else if (name.length > MaxModelNameLength) add("name", `must be at most ${MaxModelNameLength} characters`)
  if (d.model.trim() === "") add("model", "must not be empty")
  if (!validUrl(d.base_url)) add("base_url", "must be an http or https URL")
  const apiKeyEnv = d.api_key_env ?? null
  if (apiKeyEnv !== null && !EnvVarName.test(apiKeyEnv)) add("api_key_env", "must be an environment variable name (letters, digits, _)")
  const provider = (d.provider ?? DefaultProvider).trim()
  if (provider === "") add("provider", "must not be empty")

  const reasoning = d.reasoning_model ?? false
  const efforts = d.supported_reasoning_efforts ?? []
  const badEffort = efforts.find((e) => !isOneOf(ReasoningEffort)(e))
  if (badEffort !== undefined) add("supported_reasoning_efforts", `must hold only ${ReasoningEffort.literals.join(", ")} (not ${badEffort})`)
  if (!reasoning && efforts.length > 0) add("supported_reasoning_efforts", "must be empty for a model that is not a reasoning model")
  const defaultEffort = d.default_reasoning_effort ?? null
  if (defaultEffort !== null && !efforts.includes(defaultEffort)) add("default_reasoning_effort", "must be one of supported_reasoning_efforts, or null")

  const ttls = d.supported_prompt_cache_ttls ?? ["5m"]
  const badTtl = ttls.find((t) => !isOneOf(PromptCacheTtl)(t))
  if (badTtl !== undefined) add("supported_prompt_cache_ttls", `must hold only 5m, 1h (not ${badTtl})`)
  const defaultTtl = d.default_prompt_cache_ttl === undefined ? ttls[0] ?? null : d.default_prompt_cache_ttl
  if (defaultTtl !== null && !ttls.includes(defaultTtl)) add("default_prompt_cache_ttl", "must be one of supported_prompt_cache_ttls, or null")

  const thinking = d.thinking_mode ?? (reasoning ? "manual" : "disabled")
  if (!isOneOf(ThinkingMode)(thinking)) add("thinking_mode", `must be one of ${ThinkingMode.literals.join(", ")}`)
  const surface = d.api_surface ?? "chat_completions"
  if (!isOneOf(ApiSurface)(surface)) add("api_surface", `must be one of ${ApiSurface.literals.join(", ")}`)

  return {
    problems,
    fields: {
      name,
      provider,
      reasoning_model: reasoning,
      thinking_mode: thinking as ProviderModelRecord["thinking_mode"],
      supports_custom_sampling: d.supports_custom_sampling ?? true,
      supported_reasoning_efforts: efforts as ProviderModelRecord["supported_reasoning_efforts"],
      default_reasoning_effort: defaultEffort as ProviderModelRecord["default_reasoning_effort"],
      supported_prompt_cache_ttls: ttls as ProviderModelRecord["supported_prompt_cache_ttls"],
      default_prompt_cache_ttl: defaultTtl as ProviderModelRecord["default_prompt_cache_ttl"],
      api_surface: surface as ProviderModelRecord["api_surface"],
      endpoint: { base_url: d.base_url.replace(/\/+$/, ""), upstream_model: d.model.trim(), api_key_env: apiKeyEnv }
    }
  }
}

/** An agent node's model-dependent settings (2.3.9), as written (null or absent = the model's default). */
export interface AgentModelSettings {
  readonly reasoning_effort?: unknown
  readonly prompt_cache_ttl?: unknown
}

/**
 * The 2.3.9 rules against the node's model: `reasoning_effort` must be one of
 * the model's `supported_reasoning_efforts` (a model that does not reason
 * accepts only null), `prompt_cache_ttl` one of its
 * `supported_prompt_cache_ttls`. Problems name the node field under `base`.
 */
export const agentSettingsProblems = (
  model: ProviderModel,
  settings: AgentModelSettings,
  base: string
): ReadonlyArray<ErrorDetail> => {
  const problems: Array<ErrorDetail> = []
  const path = (field: string) => (base === "" ? field : `${base}.${field}`)
  const effort = settings.reasoning_effort
  if (typeof effort === "string") {
    if (!model.reasoning_model) {
      problems.push({ path: path("reasoning_effort"), message: `must be null: ${model.name} is not a reasoning model` })
    } else if (!(model.supported_reasoning_efforts as ReadonlyArray<string>).includes(effort)) {
      problems.push({
        path: path("reasoning_effort"),
        message: `must be one of ${model.name}'s supported_reasoning_efforts (${model.supported_reasoning_efforts.join(", ") || "none"})`
      })
    }
  }
  const ttl = settings.prompt_cache_ttl
  if (typeof ttl === "string" && !(model.supported_prompt_cache_ttls as ReadonlyArray<string>).includes(ttl)) {
    problems.push({
      path: path("prompt_cache_ttl"),
      message: `must be one of ${model.name}'s supported_prompt_cache_ttls (${model.supported_prompt_cache_ttls.join(", ") || "none"})`
    })
  }
  return problems
}

export class ProviderModels extends Context.Service<ProviderModels, {
  /** Public fields, by provider then name. */
  readonly list: Effect.Effect<ReadonlyArray<ProviderModel>>
  /** The stored records with their endpoints, in the same order: for operators (the CLI), never for the API. */
  readonly records: Effect.Effect<ReadonlyArray<ProviderModelRecord>>
  /** The stored record (with its endpoint) by id, else by name. */
  readonly find: (ref: { readonly id?: string | undefined; readonly name?: string | undefined }) => Effect.Effect<Option.Option<ProviderModelRecord>>
  /** Creates or replaces (by name) a model; 422 naming each bad field. */
  readonly declare: (declaration: ProviderModelDeclaration) => Effect.Effect<ProviderModelRecord, Unprocessable>
  /** False when no model had that name. */
  readonly remove: (name: string) => Effect.Effect<boolean>
}>()("@parley/core/ai/ProviderModels") {
  static readonly layer = Layer.effect(
    ProviderModels,
    Effect.gen(function*() {
      const repo = yield* ProviderModelsRepo
      const ids = yield* Ids
      return ProviderModels.of({
        list: Effect.map(repo.list, (models) => models.map(toPublic)),
        records: repo.list,
        find: Effect.fn("ProviderModels.find")(function*(ref) {
          if (ref.id !== undefined) {
            const byId = yield* repo.findById(ref.id)
            if (Option.isSome(byId)) return byId
          }
          return ref.name === undefined ? Option.none() : yield* repo.findByName(ref.name)
        }),
        declare: Effect.fn("ProviderModels.declare")(function*(declaration) {
          const { fields, problems } = checkDeclaration(declaration)
          const first = problems[0]
          if (first !== undefined) return yield* unprocessable(`${first.path} ${first.message}`, problems)
          const now = new Date(yield* Clock.currentTimeMillis).toISOString()
          return yield* repo.declare({ ...fields, id: yield* ids.uuid, created_at: now })
        }),
        remove: (name) => repo.remove(name)
      })
    })
  )
}
