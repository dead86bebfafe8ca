/**
 * The models a host declares as it starts (decisions 2.18): each entry of
 * `PARLEY_MODELS` (a JSON array of declarations, upserted by name), and in
 * simulator mode `parley-sim`, the model simulator the host serves at
 * `<public URL>/model-simulator/v1`, so AI features work with no credentials.
 */
import { type ProviderModelDeclaration, ProviderModelDeclaration as Declaration, ProviderModels, SimulatedModelName, UpstreamSettings } from "@parley/core"
import { Config, Data, Effect, Layer, Option, Schema } from "effect"
import { ModelSimulatorPath } from "./simulators/ModelSimulatorServer.ts"

/** `PARLEY_MODELS` or one of its entries cannot be used; the message says which entry and field. */
export class ModelDeclarationError extends Data.TaggedError("ModelDeclarationError")<{ readonly message: string }> {}

const decodeDeclarations = Schema.decodeUnknownEffect(Schema.fromJsonString(Schema.Array(Declaration)))

/** The simulated model, at the host's own address. */
export const simulatedModel = (publicUrl: string): ProviderModelDeclaration => ({
  name: SimulatedModelName,
  provider: "simulator",
  model: SimulatedModelName,
  base_url: `${publicUrl.replace(/\/+$/, "")}${ModelSimulatorPath}`,
  api_key_env: null
})

/** Declares `declarations` in order; the first refused one fails naming its index, name and field. */
export const declareAll = (declarations: ReadonlyArray<ProviderModelDeclaration>, source: string) =>
  Effect.gen(function*() {
    const models = yield* ProviderModels
    for (const [i, declaration] of declarations.entries()) {
      yield* models.declare(declaration).pipe(
        Effect.mapError((e) => new ModelDeclarationError({ message: `${source}[${i}] (${declaration.name}): ${e.error}` }))
      )
    }
  })

export const layerDeclaredModels = (publicUrl: string) =>
  Layer.effectDiscard(Effect.gen(function*() {
    const settings = yield* UpstreamSettings
    if (settings.mode === "simulator") yield* declareAll([simulatedModel(publicUrl)], "simulator")
    const configured = yield* Config.option(Config.String("PARLEY_MODELS")).pipe(
      Effect.mapError((e) => new ModelDeclarationError({ message: `PARLEY_MODELS: ${e.message}` }))
    )
    if (Option.isSome(configured) && configured.value.trim() !== "") {
      const declarations = yield* decodeDeclarations(configured.value).pipe(
        Effect.mapError((e) => new ModelDeclarationError({ message: `PARLEY_MODELS must be a JSON array of model declarations: ${e.message}` }))
      )
      yield* declareAll(declarations, "PARLEY_MODELS")
    }
  }))
