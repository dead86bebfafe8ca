/** The behaviour every `ProviderModelsRepo` adapter owes, written once. */
import { assert, layer } from "@effect/vitest"
import { Effect, type Layer, Option } from "effect"
import type { ProviderModelRecord } from "../../ai/ProviderModel.ts"
import { ProviderModelsRepo } from "../../ai/ProviderModelsRepo.ts"
import { at, uniqueId } from "./fixtures.ts"

const makeModel = (overrides: Partial<ProviderModelRecord> = {}): ProviderModelRecord => ({
  id: crypto.randomUUID(),
  name: uniqueId("model"),
  provider: uniqueId("provider"),
  reasoning_model: true,
  thinking_mode: "manual",
  supports_custom_sampling: false,
  supported_reasoning_efforts: ["low", "medium", "high"],
  default_reasoning_effort: "medium",
  supported_prompt_cache_ttls: ["5m", "1h"],
  default_prompt_cache_ttl: "5m",
  api_surface: "chat_completions",
  endpoint: { base_url: "https://api.example.com/v1", upstream_model: "gpt-x", api_key_env: "EXAMPLE_API_KEY" },
  created_at: at(0),
  ...overrides
})

export const providerModelsRepoConformance = <E>(name: string, storage: Layer.Layer<ProviderModelsRepo, E>): void =>
  layer(storage, { excludeTestServices: true })(name, (it) => {
    it.effect("declares, finds by id and name, and lists by provider then name", () =>
      Effect.gen(function*() {
        const repo = yield* ProviderModelsRepo
        const provider = uniqueId("provider")
        const b = makeModel({ provider, name: uniqueId("b") })
        const a = makeModel({ provider, name: uniqueId("a") })
        const other = makeModel({ provider: `${provider}~`, name: uniqueId("0") })
        assert.deepStrictEqual(yield* repo.declare(b), b)
        yield* repo.declare(a)
        yield* repo.declare(other)
        assert.deepStrictEqual(yield* repo.findById(b.id), Option.some(b))
        assert.deepStrictEqual(yield* repo.findByName(a.name), Option.some(a))
        assert.isTrue(Option.isNone(yield* repo.findById(crypto.randomUUID())))
        assert.isTrue(Option.isNone(yield* repo.findByName(uniqueId("missing"))))
        const mine = (yield* repo.list).filter((m) => m.provider.startsWith(provider))
        assert.deepStrictEqual(mine.map((m) => m.name), [a.name, b.name, other.name])
      }))

    it.effect("a second declaration of a name replaces its fields, keeping id and created_at", () =>
      Effect.gen(function*() {
        const repo = yield* ProviderModelsRepo
        const first = yield* repo.declare(makeModel())
        const again = makeModel({
          name: first.name,
          reasoning_model: false,
          supported_reasoning_efforts: [],
          default_reasoning_effort: null,
          supported_prompt_cache_ttls: [],
          default_prompt_cache_ttl: null,
          api_surface: "provider_default",
          endpoint: { base_url: "http://localhost:11434/v1", upstream_model: "llama3.1", api_key_env: null },
          created_at: at(9)
        })
        const stored = yield* repo.declare(again)
        assert.deepStrictEqual(stored, { ...again, id: first.id, created_at: first.created_at })
        assert.deepStrictEqual(yield* repo.findByName(first.name), Option.some(stored))
        assert.isTrue(Option.isNone(yield* repo.findById(again.id)))
      }))

    it.effect("removes by name", () =>
      Effect.gen(function*() {
        const repo = yield* ProviderModelsRepo
        const model = yield* repo.declare(makeModel())
        assert.isFalse(yield* repo.remove(uniqueId("missing")))
        assert.isTrue(yield* repo.remove(model.name))
        assert.isTrue(Option.isNone(yield* repo.findByName(model.name)))
        assert.isFalse((yield* repo.list).some((m) => m.id === model.id))
      }))
  })
