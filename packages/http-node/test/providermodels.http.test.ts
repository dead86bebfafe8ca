/**
 * `GET /provider_models` over real HTTP (decisions 2.18, 4.7): public fields
 * only, by provider then name, through `fetch` and the typed client.
 */
import { assert, describe, it } from "@effect/vitest"
import { createParleyClient } from "@parley/client"
import { Ids, ProviderModels } from "@parley/core"
import { layerMemoryJobQueue, layerMemoryStorage } from "@parley/core/testing"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import { afterAll, beforeAll } from "vitest"
import { type MessagingHost, startMessagingHost } from "./messaging.support.ts"

let host: MessagingHost
let close: () => Promise<void>

beforeAll(async () => {
  const scope = Effect.runSync(Scope.make())
  await Effect.runPromise(Effect.gen(function*() {
    host = yield* startMessagingHost(Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layer))
    const models = Context.get(host.context, ProviderModels)
    yield* models.declare({
      name: "gpt-test",
      provider: "openai",
      model: "gpt-4o-mini",
      base_url: "https://api.openai.com/v1",
      api_key_env: "OPENAI_API_KEY"
    })
    yield* models.declare({
      name: "local-reasoner",
      provider: "ollama",
      model: "qwen3",
      base_url: "http://localhost:11434/v1",
      reasoning_model: true,
      supported_reasoning_efforts: ["low", "high"],
      default_reasoning_effort: "low"
    })
  }).pipe(Effect.provideService(Scope.Scope, scope)))
  close = () => Effect.runPromise(Scope.close(scope, Exit.void))
}, 60_000)
afterAll(() => close())

describe("GET /provider_models", () => {
  it("lists the declared models by provider then name, public fields only", async () => {
    const res = await host.request("GET", "/platform/v1/provider_models")
    assert.strictEqual(res.status, 200, res.text)
    const mine = res.body.data.filter((m: any) => m.name === "gpt-test" || m.name === "local-reasoner")
    assert.deepStrictEqual(mine.map((m: any) => m.name), ["local-reasoner", "gpt-test"])
    assert.deepStrictEqual(mine[0], {
      id: mine[0].id,
      name: "local-reasoner",
      provider: "ollama",
      reasoning_model: true,
      thinking_mode: "manual",
      supports_custom_sampling: true,
      supported_reasoning_efforts: ["low", "high"],
      default_reasoning_effort: "low",
      supported_prompt_cache_ttls: ["5m"],
      default_prompt_cache_ttl: "5m",
      api_surface: "chat_completions"
    })
    const providers = res.body.data.map((m: any) => m.provider)
    assert.deepStrictEqual(providers, [...providers].sort())
    assert.notInclude(res.text, "OPENAI_API_KEY")
    assert.notInclude(res.text, "api.openai.com")
  })

  it("an agent workflow naming parley-sim (declared at boot) saves; the model's rules answer 422 naming the field", async () => {
    const workflow = (config: Record<string, unknown>) => ({
      name: `Agent ${crypto.randomUUID()}`,
      definition: {
        nodes: [
          { id: "start", position: { x: 0, y: 0 }, data: { node_type: "start", config: {} } },
          { id: "bot", position: { x: 100, y: 0 }, data: { node_type: "agent", config: { system_prompt: "Be brief", ...config } } }
        ],
        edges: [{ source: "start", target: "bot" }]
      }
    })
    const saved = await host.request("POST", "/platform/v1/workflows", { body: { workflow: workflow({ provider_model_name: "parley-sim" }) } })
    assert.strictEqual(saved.status, 201, saved.text)
    const refused = await host.request("POST", "/platform/v1/workflows", {
      body: { workflow: workflow({ provider_model_name: "parley-sim", reasoning_effort: "high" }) }
    })
    assert.strictEqual(refused.status, 422, refused.text)
    assert.deepStrictEqual(refused.body.details, [
      { path: "nodes.bot.config.reasoning_effort", message: "must be null: parley-sim is not a reasoning model" }
    ])
  })

  it("needs a key", async () => {
    assert.strictEqual((await host.request("GET", "/platform/v1/provider_models", { key: null })).status, 401)
  })

  it("the typed client lists them", async () => {
    const client = createParleyClient({ baseUrl: host.url, apiKey: host.key })
    try {
      const listed = await client.providerModels.list({})
      assert.isTrue(listed.data.some((m) => m.name === "gpt-test" && m.provider === "openai"))
    } finally {
      await client.close()
    }
  })
})
