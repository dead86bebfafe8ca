import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { ProviderModels } from "../src/ai/ProviderModels.ts"
import { Ids } from "../src/shared/Ids.ts"
import { layerMemoryStorage } from "../src/testing/index.ts"
import { validateDefinition } from "../src/workflows/Definition.ts"
import { layerDefinitionReferences } from "../src/Parley.ts"

const Env = Layer.mergeAll(ProviderModels.layer, layerDefinitionReferences).pipe(
  Layer.provideMerge(Ids.layerSequential),
  Layer.provideMerge(Layer.fresh(layerMemoryStorage))
)

const reasoner = {
  name: "o-reasoner",
  provider: "openai",
  model: "o4-mini",
  base_url: "https://api.openai.com/v1/",
  api_key_env: "OPENAI_API_KEY",
  reasoning_model: true,
  supported_reasoning_efforts: ["low", "medium", "high"],
  default_reasoning_effort: "medium",
  supported_prompt_cache_ttls: ["5m", "1h"]
}

const agentWorkflow = (config: Record<string, unknown>) => ({
  nodes: [
    { id: "start", type: "flow-node", position: { x: 0, y: 0 }, data: { node_type: "start", config: {} } },
    { id: "ai", type: "flow-node", position: { x: 0, y: 100 }, data: { node_type: "agent", config } }
  ],
  edges: [{ source: "start", target: "ai" }]
})

const validate = (config: Record<string, unknown>) =>
  validateDefinition(agentWorkflow(config), { projectId: "prj_1", workflowId: "wf_1", previous: undefined })

describe("provider models", () => {
  layer(Env)((it) => {
    it.effect("declares (upsert by name), lists public fields by provider then name, finds by id or name", () =>
      Effect.gen(function*() {
        const models = yield* ProviderModels
        const first = yield* models.declare(reasoner)
        assert.deepStrictEqual(first.endpoint, { base_url: "https://api.openai.com/v1", upstream_model: "o4-mini", api_key_env: "OPENAI_API_KEY" })
        assert.strictEqual(first.thinking_mode, "manual")
        assert.strictEqual(first.default_prompt_cache_ttl, "5m")
        const local = yield* models.declare({ name: "llama", model: "llama3.1", base_url: "http://localhost:11434/v1", provider: "ollama" })
        assert.strictEqual(local.reasoning_model, false)
        assert.deepStrictEqual(local.supported_reasoning_efforts, [])
        const again = yield* models.declare({ ...reasoner, model: "o3" })
        assert.strictEqual(again.id, first.id)
        assert.strictEqual(again.endpoint.upstream_model, "o3")

        const listed = yield* models.list
        assert.deepStrictEqual(listed.map((m) => m.name), ["llama", "o-reasoner"])
        assert.deepStrictEqual(Object.keys(listed[1]!).sort(), [
          "api_surface", "default_prompt_cache_ttl", "default_reasoning_effort", "id", "name", "provider", "reasoning_model",
          "supported_prompt_cache_ttls", "supported_reasoning_efforts", "supports_custom_sampling", "thinking_mode"
        ])
        assert.strictEqual(Option.getOrThrow(yield* models.find({ id: first.id })).name, "o-reasoner")
        assert.strictEqual(Option.getOrThrow(yield* models.find({ name: "llama" })).id, local.id)
        assert.isTrue(Option.isNone(yield* models.find({ name: "nope" })))
        assert.isTrue(yield* models.remove("llama"))
        assert.isFalse(yield* models.remove("llama"))
      }))

    it.effect("refuses a bad declaration with 422s naming each field", () =>
      Effect.gen(function*() {
        const models = yield* ProviderModels
        const refused = (d: Record<string, unknown>) =>
          models.declare({ ...reasoner, ...d } as typeof reasoner).pipe(Effect.flip, Effect.map((e) => e.error))
        assert.strictEqual(yield* refused({ name: " " }), "name must not be empty")
        assert.strictEqual(yield* refused({ name: "x".repeat(129) }), "name must be at most 128 characters")
        assert.strictEqual(yield* refused({ base_url: "ftp://models.example" }), "base_url must be an http or https URL")
        assert.strictEqual(yield* refused({ base_url: "not a url" }), "base_url must be an http or https URL")
        assert.match(yield* refused({ supported_reasoning_efforts: ["low", "turbo"] }), /^supported_reasoning_efforts must hold only .* \(not turbo\)$/)
        assert.strictEqual(yield* refused({ default_reasoning_effort: "xhigh" }), "default_reasoning_effort must be one of supported_reasoning_efforts, or null")
        assert.strictEqual(
          yield* refused({ reasoning_model: false, default_reasoning_effort: null }),
          "supported_reasoning_efforts must be empty for a model that is not a reasoning model"
        )
        assert.strictEqual(yield* refused({ supported_prompt_cache_ttls: ["24h"] }), "supported_prompt_cache_ttls must hold only 5m, 1h (not 24h)")
        assert.strictEqual(yield* refused({ supported_prompt_cache_ttls: ["5m"], default_prompt_cache_ttl: "1h" }), "default_prompt_cache_ttl must be one of supported_prompt_cache_ttls, or null")
        assert.strictEqual(yield* refused({ api_key_env: "OPENAI-KEY" }), "api_key_env must be an environment variable name (letters, digits, _)")
        const all = yield* models.declare({ ...reasoner, name: "", base_url: "x" }).pipe(Effect.flip)
        assert.deepStrictEqual(all.details?.map((d) => d.path), ["name", "base_url"])
      }))

    it.effect("an agent node saves with a declared model (by id or name); its effort and cache TTL follow the model (2.3.9)", () =>
      Effect.gen(function*() {
        const models = yield* ProviderModels
        const r = yield* models.declare({ ...reasoner, name: "reasoner-2" })
        yield* models.declare({ name: "plain", model: "gpt-4o-mini", base_url: "https://api.openai.com/v1", supported_prompt_cache_ttls: ["5m"] })

        yield* validate({ provider_model_id: r.id, reasoning_effort: "high", prompt_cache_ttl: "1h" })
        yield* validate({ provider_model_name: "plain", reasoning_effort: null })
        const unknown = yield* Effect.flip(validate({ provider_model_name: "missing" }))
        assert.strictEqual(unknown.error, "nodes.ai.config.provider_model_name does not name a provider model in this project")

        const effort = yield* Effect.flip(validate({ provider_model_id: r.id, reasoning_effort: "xhigh" }))
        assert.strictEqual(effort.error, "nodes.ai.config.reasoning_effort must be one of reasoner-2's supported_reasoning_efforts (low, medium, high)")
        const nonReasoning = yield* Effect.flip(validate({ provider_model_name: "plain", reasoning_effort: "low", prompt_cache_ttl: "1h" }))
        assert.deepStrictEqual(nonReasoning.details, [
          { path: "nodes.ai.config.reasoning_effort", message: "must be null: plain is not a reasoning model" },
          { path: "nodes.ai.config.prompt_cache_ttl", message: "must be one of plain's supported_prompt_cache_ttls (5m)" }
        ])
      }))
  })
})
