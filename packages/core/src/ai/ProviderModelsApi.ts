/** The HTTP contract of provider models (decisions 2.18, 4.7): `GET /provider_models`, public fields only. */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { Authentication } from "../http/Middleware.ts"
import { ProviderModel } from "./ProviderModel.ts"

export class ProviderModelsApi extends HttpApiGroup.make("providerModels")
  .add(
    HttpApiEndpoint.get("list", "/provider_models", {
      success: Schema.Struct({ data: Schema.Array(ProviderModel) })
    }).annotateMerge(OpenApi.annotations({ summary: "List the models agents can use" }))
  )
  .middleware(Authentication)
  .prefix("/platform/v1")
  .annotateMerge(OpenApi.annotations({
    title: "Provider models",
    description: "The language models the operator declared, ordered by provider then name; endpoints and keys are never shown"
  }))
{}
