/**
 * `LanguageModels` in memory: the production adapter (`ai/OpenAiCompatible.ts`)
 * over an `HttpClient` answered by an in-process `ModelSimulator`, which the
 * layer exposes for scripting. Point a model's `base_url` at
 * `InProcessModelBaseUrl` (`memoryModelEndpoint`).
 */
import { Effect, Layer } from "effect"
import type { ModelEndpoint } from "../ai/ProviderModel.ts"
import * as OpenAiCompatible from "../ai/OpenAiCompatible.ts"
import { httpClient, InProcessModelBaseUrl } from "../simulators/model/InProcess.ts"
import { ModelSimulator, type ModelSimulatorOptions, SimulatedModelName } from "../simulators/model/ModelSimulator.ts"
import { HttpClient } from "effect/http"
import type { LanguageModels } from "../ai/LanguageModels.ts"

export { InProcessModelBaseUrl }

/** The in-process simulator's endpoint for `upstream_model` (default `parley-sim`), with no key. */
export const memoryModelEndpoint = (upstreamModel: string = SimulatedModelName): ModelEndpoint => ({
  base_url: InProcessModelBaseUrl,
  upstream_model: upstreamModel,
  api_key_env: null
})

export const layerMemoryLanguageModels = (options: ModelSimulatorOptions = {}): Layer.Layer<LanguageModels | ModelSimulator> =>
  OpenAiCompatible.layer.pipe(
    Layer.provide(Layer.effect(HttpClient.HttpClient, Effect.map(Effect.service(ModelSimulator), httpClient))),
    Layer.provideMerge(ModelSimulator.layer(options))
  )
